// bench/instrument: what the launcher adds to start-up time, memory and request throughput, side by
// side with plain @opentelemetry/auto-instrumentations-node/register and the AWS distro (ADOT JS).
// Run after building: `node bench/instrument/index.mjs`. Loopback only; bounded to a few minutes.
// BENCH_PARTS=startup,echo,agent (default: all three) runs a subset and prints it without writing
// docs/benchmarks.md. BENCH_THROUGHPUT_SECONDS, BENCH_THROUGHPUT_ROUNDS (echo) and BENCH_AGENT_ROUNDS
// (reference agent, default 5) set the load.
//
// Attributing the reference agent's overhead (partial runs, printed only):
//   BENCH_AGENT_EXTRA='{"no undici":{"OTEL_TRACES_SAMPLER":"always_off","OTEL_NODE_DISABLED_INSTRUMENTATIONS":"undici"}}'
//     adds one "ours: <name>" variant per entry (our launcher with that environment on top);
//   BENCH_AGENT_ONLY='sampler off|^ours' keeps the variants whose name matches (bare node always);
//   BENCH_AGENT_PROFILE=0 skips the profiled round; BENCH_AGENT_PROFILED='lean' profiles the variants whose
//     name matches (bare node always) instead of bare, ours sampler off, ours full and the upstream register;
//   BENCH_AGENT_WRITE_ABLATION=1 records such a run as its own section of docs/benchmarks.md;
//   BENCH_AGENT_INTERLEAVED=1 loads one variant at a time in blocks of BENCH_AGENT_BLOCK (default 100)
//     requests, cycling through the variants until each has had BENCH_AGENT_REQUESTS (default 1500)
//     per round: on this shared machine, whose speed drifts over seconds, it resolves a few percent,
//     where loading them all at once (the default, robust to a busy neighbour) does not.
import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAverage, table, writeSection } from '../lib/report.mjs';
import { PART_NAMES, perRequest, profileParts } from './profile-breakdown.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const require = createRequire(import.meta.url);
const autocannon = require('autocannon');

const STARTUP_RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 5);
const THROUGHPUT_SECONDS = Number(process.env.BENCH_THROUGHPUT_SECONDS ?? 5);
const CONNECTIONS = 16;
const PARTS = new Set((process.env.BENCH_PARTS ?? 'startup,echo,agent').split(',').map((p) => p.trim()));
const allParts = ['startup', 'echo', 'agent'].every((p) => PARTS.has(p));

// ---- peers ---------------------------------------------------------------------------------------
const peersDir = join(root, 'bench', '.peers', 'instrument');
const ADOT = '@aws/aws-distro-opentelemetry-node-autoinstrumentation';
const adotRegister = join(peersDir, 'node_modules', ADOT, 'build', 'src', 'register.js');
function ensureAdot() {
  if (existsSync(adotRegister)) return true;
  mkdirSync(peersDir, { recursive: true });
  if (!existsSync(join(peersDir, 'package.json'))) {
    writeFileSync(join(peersDir, 'package.json'), '{"name":"instrument-peers","private":true}\n');
  }
  console.log(`installing ${ADOT} into bench/.peers/instrument …`);
  const r = spawnSync(
    'npm',
    ['install', '--prefix', peersDir, '--no-audit', '--no-fund', '--ignore-scripts', `${ADOT}@0.13.0`],
    { stdio: 'inherit' },
  );
  return r.status === 0 && existsSync(adotRegister);
}
const hasAdot = ensureAdot();
if (!hasAdot) console.warn(`${ADOT} could not be installed; its rows are left out`);

const ours = join(root, 'packages', 'instrument', 'dist');
if (!existsSync(join(ours, 'register.js'))) {
  console.error('packages/instrument/dist is missing: run `npx tsc -b packages/instrument` first');
  process.exit(1);
}

/** The READY line of the bench's own apps: its JSON payload. */
const readyLine = (out) => {
  const m = /READY (\{.*\})/.exec(out);
  return m ? JSON.parse(m[1]) : undefined;
};

const baseEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_') && k !== 'NODE_OPTIONS'),
);

// ---- an OTLP sink, so exporters have somewhere real to send to --------------------------------
// In a process of its own, as a collector is: in this process it would take the load generator's
// event-loop time whenever an instrumented variant exports, and charge that to the variant.
const { child: sinkProcess, port: sinkPort } = await runUntilReady(
  [],
  join(here, 'otlp-sink.mjs'),
  {},
  {
    keep: true,
  },
);
const sinkUrl = `http://127.0.0.1:${sinkPort}`;
process.once('exit', () => sinkProcess.kill());
/** Requests and bytes the sink received since the last call. */
async function sinkStats() {
  const res = await fetch(`${sinkUrl}/stats`);
  return /** @type {{ requests: number, bytes: number, byPrefix: Record<string, { bytes: number }> }} */ (
    await res.json()
  );
}

const otlpEnv = { OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl };

const variants = [
  { name: 'bare node', args: [], env: {} },
  {
    name: '@agentrt/instrument (--require)',
    args: ['--require', join(ours, 'register-require.js')],
    env: otlpEnv,
  },
  { name: '@agentrt/instrument (--import)', args: ['--import', join(ours, 'register.js')], env: otlpEnv },
  {
    name: '@agentrt/instrument, AGENTRT_SDK=lean (--import)',
    args: ['--import', join(ours, 'register.js')],
    env: { ...otlpEnv, AGENTRT_SDK: 'lean' },
  },
  {
    name: 'auto-instrumentations-node/register',
    args: ['--require', require.resolve('@opentelemetry/auto-instrumentations-node/register')],
    env: otlpEnv,
  },
  ...(hasAdot
    ? [
        {
          name: 'ADOT JS 0.13 (agent mode)',
          args: ['--require', adotRegister],
          env: {
            AGENT_OBSERVABILITY_ENABLED: 'true',
            OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${sinkUrl}/v1/traces`,
            OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: `${sinkUrl}/v1/logs`,
            OTEL_TRACES_EXPORTER: 'otlp',
            OTEL_LOGS_EXPORTER: 'otlp',
          },
        },
      ]
    : []),
];

/**
 * Spawns node with `args` + `script`; resolves with ms to the line `ready` recognises (default:
 * `READY {json}`) and what it returned.
 */
function runUntilReady(args, script, env, { keep = false, ready = readyLine } = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [...args, script], {
      cwd: here,
      env: { ...baseEnv, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no READY within 60 s:\n${out}\n${err}`));
    }, 60_000);
    child.stderr.on('data', (d) => (err += d));
    child.stdout.on('data', (d) => {
      out += d;
      const info = ready(out);
      if (info !== undefined) {
        clearTimeout(timer);
        const ms = performance.now() - started;
        child.stdout.removeAllListeners('data');
        child.stdout.resume();
        if (keep) {
          resolve({ ms, child, ...info });
          return;
        }
        let rest = '';
        child.stdout.on('data', (d) => (rest += d));
        child.once('exit', () => {
          const settled = /SETTLED (\{.*\})/.exec(out + rest);
          resolve({ ms, ...info, settledRss: settled ? JSON.parse(settled[1]).rss : info.rss });
        });
      }
    });
    child.once('exit', (code) => {
      if (ready(out) === undefined) {
        clearTimeout(timer);
        reject(new Error(`exited ${code} before READY:\n${out}\n${err}`));
      }
    });
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// ---- start-up ----------------------------------------------------------------------------------
// The start-up app lives outside the repository, with only koa in its node_modules, as a deployed
// app would: the launcher loads the instrumentations whose libraries the app has, and the
// monorepo's hoisted node_modules (pino, winston, openai, AWS SDK …) must not count as the app's.
const appDir = join(os.tmpdir(), 'agentrt-bench-instrument');
rmSync(appDir, { recursive: true, force: true });
mkdirSync(join(appDir, 'node_modules'), { recursive: true });
symlinkSync(join(root, 'node_modules', 'koa'), join(appDir, 'node_modules', 'koa'), 'dir');
copyFileSync(join(here, 'startup-app.cjs'), join(appDir, 'startup-app.cjs'));
const startupApp = join(appDir, 'startup-app.cjs');
const compileCacheDir = join(appDir, 'compile-cache');
/**
 * Median time-to-ready and RSS of every variant. `cached`: every variant runs with the same warm
 * NODE_COMPILE_CACHE (what @agentrt/instrument turns on by itself); otherwise no variant has one
 * (ours with AGENTRT_COMPILE_CACHE=false).
 */
async function measureStartup(cached) {
  const extra = cached ? { NODE_COMPILE_CACHE: compileCacheDir } : { AGENTRT_COMPILE_CACHE: 'false' };
  const samples = new Map(variants.map((v) => [v.name, { ms: [], rss: [], settled: [] }]));
  for (const v of variants) await runUntilReady(v.args, startupApp, { ...v.env, ...extra }); // warm caches
  for (let i = 0; i < STARTUP_RUNS; i++) {
    // interleave the variants so a noisy neighbour hurts them all alike
    for (const v of variants) {
      const r = await runUntilReady(v.args, startupApp, { ...v.env, ...extra });
      samples.get(v.name).ms.push(r.ms);
      samples.get(v.name).rss.push(r.rss);
      samples.get(v.name).settled.push(r.settledRss);
    }
  }
  const bare = samples.get('bare node');
  const bareMs = median(bare.ms);
  const bareMb = median(bare.rss) / 2 ** 20;
  const bareSettledMb = median(bare.settled) / 2 ** 20;
  return variants.map((v) => {
    const s = samples.get(v.name);
    const ms = median(s.ms);
    const mb = median(s.rss) / 2 ** 20;
    const settledMb = median(s.settled) / 2 ** 20;
    return {
      name: v.name,
      ms,
      mb,
      addedMs: ms - bareMs,
      addedMb: mb - bareMb,
      addedSettledMb: settledMb - bareSettledMb,
    };
  });
}

function startupTable(rows) {
  const adot = rows.find((r) => r.name.startsWith('ADOT'));
  return table(
    [
      'variant',
      'ready (ms)',
      'added ms',
      'RSS at ready (MB)',
      'added MB',
      'added MB 300 ms later',
      'added ms vs ADOT',
      'added MB vs ADOT',
    ],
    rows.map((r) => [
      r.name,
      r.ms.toFixed(0),
      r.addedMs.toFixed(0),
      r.mb.toFixed(1),
      r.addedMb.toFixed(1),
      r.addedSettledMb.toFixed(1),
      adot && adot.addedMs > 0 ? `${((r.addedMs / adot.addedMs) * 100).toFixed(0)}%` : 'n/a',
      adot && adot.addedMb > 0 ? `${((r.addedMb / adot.addedMb) * 100).toFixed(0)}%` : 'n/a',
    ]),
  );
}

const startupCached = PARTS.has('startup') ? await measureStartup(true) : [];
const startupCold = PARTS.has('startup') ? await measureStartup(false) : [];
if (PARTS.has('startup')) {
  console.log(`start-up, warm compile cache for all:\n${startupTable(startupCached)}`);
  console.log(`start-up, no compile cache:\n${startupTable(startupCold)}`);
}

// ---- throughput on the contract server ---------------------------------------------------------
const NO_EXPORT = { OTEL_TRACES_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none' };
const THROUGHPUT_ROUNDS = Number(process.env.BENCH_THROUGHPUT_ROUNDS ?? 3);
const peerVariants = variants.filter((v) => v.name !== '@agentrt/instrument (--require)');
/**
 * The yardstick (not telemetry): the same echo server with a fixed 3 µs of CPU work before each
 * request. On a machine where load generator and server share two cores, what a few µs per
 * request cost in throughput is far from proportional; this row measures it.
 */
const controlVariant = {
  name: 'control: bare node + 3 µs of CPU per request, no telemetry',
  args: ['--import', join(here, 'busy-preload.mjs')],
  env: { BENCH_BUSY_US: '3' },
};
/**
 * Where the overhead goes (not peers): the same launcher with export and metrics off, once as shipped (its own
 * lean HTTP server span), once with the upstream HTTP instrumentation making that span instead
 * (AGENTRT_HTTP_SERVER_SPANS=upstream), and once with no HTTP instrumentation at all (then
 * @agentrt/server's own middleware starts the one server span). With the full row they split the
 * overhead into SDK + one span, the HTTP server instrumentation, and metrics + OTLP export.
 */
const floorVariants = [
  {
    name: 'floor: ours, no export or metrics (SDK + our http server span)',
    args: ['--import', join(ours, 'register.js')],
    env: NO_EXPORT,
  },
  {
    name: 'floor: ours, no export or metrics, upstream http server span',
    args: ['--import', join(ours, 'register.js')],
    env: { ...NO_EXPORT, AGENTRT_HTTP_SERVER_SPANS: 'upstream' },
  },
  {
    name: 'floor: ours, no export or metrics, http instr. off (SDK + @agentrt/server span)',
    args: ['--import', join(ours, 'register.js')],
    env: { ...NO_EXPORT, OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'undici' },
  },
];

/** CPU time (user + system) the process has used, in ms, from /proc (Linux). */
function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}

/** A workload's server under variant `v` (node flags `extraArgs` first), kept running. */
function startServer(workload, v, extraArgs = []) {
  return runUntilReady(
    [...extraArgs, ...v.args],
    workload.script,
    { ...workload.env, ...v.env },
    {
      keep: true,
      ready: workload.ready,
    },
  );
}

/** autocannon's options for `connections` clients posting the workload's payload to `port`. */
function invocationLoad(workload, port, connections) {
  return {
    url: `http://127.0.0.1:${port}/invocations`,
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-cloud-agent-runtime-session-id': 'bench-session-0000000000000000000001',
    },
    body: JSON.stringify(workload.payload),
    connections,
  };
}

/**
 * Loads one workload's server under every variant, `THROUGHPUT_ROUNDS` interleaved rounds (a noisy
 * neighbour hurts them all alike), and returns the median of each measure per variant.
 */
async function measureThroughput(workload, workloadVariants) {
  const runs = new Map(workloadVariants.map((v) => [v.name, []]));
  for (let round = 0; round < THROUGHPUT_ROUNDS; round++) {
    for (const v of workloadVariants) {
      const { child, port } = await startServer(workload, v);
      try {
        const opts = invocationLoad(workload, port, CONNECTIONS);
        await autocannon({ ...opts, duration: 1 }); // warm-up (JIT, lazy exporter load, pools)
        await sinkStats(); // counts from here on
        const cpu0 = cpuMs(child.pid);
        const r = await autocannon({ ...opts, duration: THROUGHPUT_SECONDS });
        const cpu1 = cpuMs(child.pid);
        const requests = Math.max(1, r.requests.total);
        // what reached the sink while loaded (exports still buffered at the end are not counted)
        const exported = await sinkStats();
        runs.get(v.name).push({
          rps: r.requests.average,
          cpuUsPerReq: ((cpu1 - cpu0) * 1000) / requests,
          otlpBytesPerReq: exported.bytes / requests,
          p50: r.latency.p50,
          p99: r.latency.p99,
          errors: r.errors + r.non2xx,
        });
      } finally {
        child.kill('SIGKILL');
      }
    }
  }
  return workloadVariants.map((v) => {
    const rs = runs.get(v.name);
    const pick = (key) => median(rs.map((r) => r[key]));
    return {
      name: v.name,
      rps: pick('rps'),
      cpuUsPerReq: pick('cpuUsPerReq'),
      otlpBytesPerReq: pick('otlpBytesPerReq'),
      p50: pick('p50'),
      p99: pick('p99'),
      errors: rs.reduce((n, r) => n + r.errors, 0),
    };
  });
}

const overhead = (row, base) => (1 - row.rps / base.rps) * 100;
/** The columns both throughput tables end with, and their cells. */
const TAIL_COLUMNS = ['OTLP bytes/request', 'p50 ms', 'p99 ms', 'errors'];
const tailCells = (t) => [t.otlpBytesPerReq.toFixed(0), t.p50, t.p99, t.errors];

function throughputTable(rows) {
  const [base] = rows;
  return table(
    [
      'variant',
      `req/s (median of ${THROUGHPUT_ROUNDS})`,
      'throughput overhead',
      'CPU µs/request',
      'CPU overhead',
      ...TAIL_COLUMNS,
    ],
    rows.map((t) => [
      t.name,
      t.rps.toFixed(0),
      `${overhead(t, base).toFixed(1)}%`,
      t.cpuUsPerReq.toFixed(t.cpuUsPerReq < 100 ? 1 : 0),
      `${((t.cpuUsPerReq / base.cpuUsPerReq - 1) * 100).toFixed(0)}%`,
      ...tailCells(t),
    ]),
  );
}

/** The reference agent's table: CPU per request first, as the variants share the machine's cores. */
function agentTable(rows) {
  return table(
    [
      'variant',
      `CPU µs/request (median of ${AGENT_ROUNDS})`,
      'CPU overhead (median of per-round ratios)',
      'req/s (all variants loaded at once)',
      ...TAIL_COLUMNS,
    ],
    rows.map((t) => [
      t.name,
      t.cpuUsPerReq.toFixed(0),
      `${((t.cpuRatio - 1) * 100).toFixed(1)}%`,
      Number.isFinite(t.rps) ? t.rps.toFixed(0) : '—',
      ...tailCells(t),
    ]),
  );
}

/** Per part of the code, µs per request: each profile's shares scaled to its variant's median CPU. */
function breakdown(rows, profiles) {
  return profiles.map((p) => {
    const row = rows.find((r) => r.name === p.name);
    return { name: p.name, parts: perRequest(p.parts, row.cpuUsPerReq), profile: p };
  });
}

function breakdownTable(rows, profiles) {
  const [bare, ...others] = breakdown(rows, profiles);
  const us = (m, part) => m.parts.get(part) ?? 0;
  const shown = PART_NAMES.filter((part) => [bare, ...others].some((m) => us(m, part) >= 5));
  const total = (m) => [...m.parts.values()].reduce((a, b) => a + b, 0);
  const signed = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(0)}`;
  return table(
    [
      'part (by the script of the sampled function)',
      'bare node',
      ...others.flatMap((m) => [m.name, 'added']),
    ],
    [
      ...shown.map((part) => [
        part,
        us(bare, part).toFixed(0),
        ...others.flatMap((m) => [us(m, part).toFixed(0), signed(us(m, part) - us(bare, part))]),
      ]),
      [
        '**total (µs/request)**',
        total(bare).toFixed(0),
        ...others.flatMap((m) => [total(m).toFixed(0), signed(total(m) - total(bare))]),
      ],
    ],
  );
}

/** The functions whose CPU per request grew most against bare node, per profiled variant. */
function topAddedFunctions(rows, profiles, n = 25) {
  const scaled = profiles.map((p) => {
    const row = rows.find((r) => r.name === p.name);
    const { busy, functions } = p.parts;
    return new Map([...functions].map(([f, t]) => [f, (t / busy) * row.cpuUsPerReq]));
  });
  const [bare, ...others] = scaled;
  return others
    .map((m, i) => {
      const deltas = [...new Set([...m.keys(), ...bare.keys()])]
        .map((f) => [f, (m.get(f) ?? 0) - (bare.get(f) ?? 0)])
        .sort((a, b) => b[1] - a[1])
        .slice(0, n);
      return `#### ${profiles[i + 1].name}\n\n${table(
        ['function (script:line)', 'added µs/request'],
        deltas.map(([f, d]) => [`\`${f.replaceAll('|', '\\|')}\``, d.toFixed(1)]),
      )}`;
    })
    .join('\n\n');
}

// The echo agent: the contract server itself is all the work, the harshest case for telemetry.
const echo = PARTS.has('echo')
  ? await measureThroughput(
      { script: join(here, 'contract-app.mjs'), env: {}, payload: { prompt: 'hello' } },
      [peerVariants[0], controlVariant, ...peerVariants.slice(1), ...floorVariants],
    )
  : [];
if (echo.length > 0) console.log(`echo agent:\n${throughputTable(echo)}`);

// The reference SDK-integration agent (examples/sdk-agent) on the same contract server, with the
// offline model so the run measures CPU rather than a model's latency: per request a Strands agent
// loop of three model turns and two tool calls, each an HTTP GET to the fixture weather API (in a
// process of its own).
//
// Its variants are loaded all at once, over the same window, each by its own autocannon instance:
// on a machine shared with other work, CPU per request of a variant measured alone moved by ±30%
// from one minute to the next, while the ratio of variants loaded side by side held within a few
// percent. Each variant exports to its own endpoint prefix of the sink, so OTLP bytes per request
// stay per variant.
const sdkAgent = join(root, 'examples', 'sdk-agent', 'dist', 'main.js');
const weatherFixture = join(root, 'examples', 'models', 'dist', 'fixtures', 'weather-api-main.js');
const AGENT_CONNECTIONS = 4;
const AGENT_ROUNDS = Number(process.env.BENCH_AGENT_ROUNDS ?? 5);
const PROFILE_DIR = join(root, 'bench', '.work', 'instrument-profiles');
/** The profiler's sampling interval (µs): BENCH_AGENT_PROFILE_INTERVAL, default Node's 1000. */
const PROFILE_INTERVAL_US = Number(process.env.BENCH_AGENT_PROFILE_INTERVAL ?? 1000);
/** The agent's variants: none, ours with the sampler off, ours in full, the peers. */
const agentVariants = [
  peerVariants[0],
  {
    name: '@agentrt/instrument, sampler off (OTEL_TRACES_SAMPLER=always_off)',
    args: ['--import', join(ours, 'register.js')],
    env: { ...otlpEnv, OTEL_TRACES_SAMPLER: 'always_off' },
  },
  ...peerVariants.slice(1),
  {
    name: '@agentrt/instrument, AGENTRT_SDK=lean, sampler off',
    args: ['--import', join(ours, 'register.js')],
    env: { ...otlpEnv, AGENTRT_SDK: 'lean', OTEL_TRACES_SAMPLER: 'always_off' },
  },
];
for (const [name, env] of Object.entries(JSON.parse(process.env.BENCH_AGENT_EXTRA ?? '{}'))) {
  agentVariants.push({
    name: `ours: ${name}`,
    args: ['--import', join(ours, 'register.js')],
    env: { ...otlpEnv, ...env },
  });
}
if (process.env.BENCH_AGENT_ONLY) {
  const keep = new RegExp(process.env.BENCH_AGENT_ONLY);
  agentVariants.splice(
    0,
    agentVariants.length,
    ...agentVariants.filter((v, i) => i === 0 || keep.test(v.name)),
  );
}
const AGENT_PROFILE = process.env.BENCH_AGENT_PROFILE !== '0';
const AGENT_INTERLEAVED = process.env.BENCH_AGENT_INTERLEAVED === '1';
const AGENT_REQUESTS = Number(process.env.BENCH_AGENT_REQUESTS ?? 1500);
const AGENT_BLOCK = Number(process.env.BENCH_AGENT_BLOCK ?? 100);
/** The variants the CPU profile round profiles (bare, ours sampler off, ours full, upstream register). */
const PROFILED = new Set(
  process.env.BENCH_AGENT_PROFILED
    ? agentVariants
        .filter((v, i) => i === 0 || new RegExp(process.env.BENCH_AGENT_PROFILED).test(v.name))
        .map((v) => v.name)
    : agentVariants
        .filter((v) => v.env.AGENTRT_SDK === undefined)
        .slice(0, 4)
        .map((v) => v.name),
);
/** A variant's own OTLP endpoint: the sink's URL with a path prefix per variant. */
function withOwnEndpoint(v, i) {
  const prefix = `variant${i}`;
  const env = Object.fromEntries(
    Object.entries(v.env).map(([k, val]) => [
      k,
      k.startsWith('OTEL_EXPORTER_OTLP_') && val.startsWith(sinkUrl)
        ? val.replace(sinkUrl, `${sinkUrl}/${prefix}`)
        : val,
    ]),
  );
  return { ...v, env, prefix };
}

/**
 * One round: every variant's server up, all loaded at once for THROUGHPUT_SECONDS; CPU per request,
 * OTLP bytes per request and the window's bounds (CLOCK_MONOTONIC µs, the CPU profiles' clock).
 * With `profile`, the PROFILED variants run under `--cpu-prof`.
 */
async function agentRound(workload, round, profile) {
  const servers = [];
  try {
    for (const v of workload.variants) {
      const prof =
        profile && PROFILED.has(v.name)
          ? [
              '--cpu-prof',
              `--cpu-prof-dir=${PROFILE_DIR}`,
              `--cpu-prof-name=${v.prefix}.cpuprofile`,
              `--cpu-prof-interval=${PROFILE_INTERVAL_US}`,
            ]
          : [];
      const server = await startServer(workload, v, prof);
      servers.push({ v, ...server });
    }
    const opts = (port) => invocationLoad(workload, port, AGENT_CONNECTIONS);
    await sinkStats(); // counts from here on
    const warm = await Promise.all(servers.map((s) => autocannon({ ...opts(s.port), duration: 2 })));
    const fromUs = Number(process.hrtime.bigint() / 1000n);
    const cpu0 = servers.map((s) => cpuMs(s.child.pid));
    const runs = await Promise.all(
      servers.map((s) => autocannon({ ...opts(s.port), duration: THROUGHPUT_SECONDS })),
    );
    const cpu1 = servers.map((s) => cpuMs(s.child.pid));
    const toUs = Number(process.hrtime.bigint() / 1000n);
    // OTLP bytes of warm-up and window together, over their requests; the batch span processors
    // export every 5 s, so the idle servers get 6 s to send what they still hold
    await new Promise((resolve) => setTimeout(resolve, 6000));
    const exported = await sinkStats();
    const out = servers.map((s, i) => {
      const requests = Math.max(1, runs[i].requests.total);
      return {
        name: s.v.name,
        rps: runs[i].requests.average,
        cpuUsPerReq: ((cpu1[i] - cpu0[i]) * 1000) / requests,
        otlpBytesPerReq:
          (exported.byPrefix[s.v.prefix]?.bytes ?? 0) / Math.max(1, requests + warm[i].requests.total),
        p50: runs[i].latency.p50,
        p99: runs[i].latency.p99,
        errors: runs[i].errors + runs[i].non2xx,
      };
    });
    console.log(
      `agent round ${round}${profile ? ' (profiled)' : ''}: ` +
        out.map((r) => `${r.name.slice(0, 24)} ${r.cpuUsPerReq.toFixed(0)} µs`).join(', '),
    );
    return { rows: out, fromUs, toUs };
  } finally {
    // SIGTERM: the servers drain and exit, which is when --cpu-prof writes its profile
    await Promise.all(
      servers.map(
        (s) =>
          new Promise((resolve) => {
            if (s.child.exitCode !== null) return resolve(undefined);
            s.child.once('exit', resolve);
            s.child.kill('SIGTERM');
            setTimeout(() => s.child.kill('SIGKILL'), 10_000).unref();
          }),
      ),
    );
  }
}

/** Per variant, the median over rounds of each measure and of its CPU per request over bare node's. */
function summarize(workload, rounds) {
  return workload.variants.map((v, i) => {
    const pick = (key) => median(rounds.map((r) => r[i][key]));
    return {
      name: v.name,
      rps: pick('rps'),
      cpuUsPerReq: pick('cpuUsPerReq'),
      cpuRatio: median(rounds.map((r) => r[i].cpuUsPerReq / r[0].cpuUsPerReq)),
      otlpBytesPerReq: pick('otlpBytesPerReq'),
      p50: pick('p50'),
      p99: pick('p99'),
      errors: rounds.reduce((n, r) => n + r[i].errors, 0),
    };
  });
}

/**
 * One round of BENCH_AGENT_INTERLEAVED: every variant's server up and warmed, then cycles of a block
 * of AGENT_BLOCK requests to each in turn (the order rotating with the cycle) until each has had
 * AGENT_REQUESTS; CPU per request is each server's whole CPU over the round (its exports included,
 * whenever they ran) over its requests. The machine's speed drifts over seconds; blocks of a fraction
 * of a second let every variant share each fast and slow moment alike.
 */
async function interleavedRound(workload, round) {
  const servers = [];
  try {
    for (const v of workload.variants) {
      const server = await startServer(workload, v);
      servers.push({ v, ...server, opts: invocationLoad(workload, server.port, AGENT_CONNECTIONS) });
    }
    await sinkStats(); // counts from here on
    const warm = [];
    for (const s of servers) warm.push(await autocannon({ ...s.opts, amount: 200 }));
    const cpu0 = servers.map((s) => cpuMs(s.child.pid));
    const runs = servers.map(() => ({ requests: 0, errors: 0, p50: [], p99: [] }));
    const n = servers.length;
    for (let cycle = 0; cycle * AGENT_BLOCK < AGENT_REQUESTS; cycle++) {
      for (let k = 0; k < n; k++) {
        const i = (k + cycle + round) % n;
        const r = await autocannon({ ...servers[i].opts, amount: AGENT_BLOCK });
        runs[i].requests += r.requests.total;
        runs[i].errors += r.errors + r.non2xx;
        runs[i].p50.push(r.latency.p50);
        runs[i].p99.push(r.latency.p99);
      }
    }
    const cpu1 = servers.map((s) => cpuMs(s.child.pid));
    // what the batch processors still hold goes out within their 5 s delay
    await new Promise((resolve) => setTimeout(resolve, 6000));
    const exported = await sinkStats();
    const out = servers.map((s, i) => ({
      name: s.v.name,
      rps: NaN, // one variant at a time: no common load to compare
      cpuUsPerReq: ((cpu1[i] - cpu0[i]) * 1000) / Math.max(1, runs[i].requests),
      otlpBytesPerReq:
        (exported.byPrefix[s.v.prefix]?.bytes ?? 0) / Math.max(1, runs[i].requests + warm[i].requests.total),
      p50: median(runs[i].p50),
      p99: median(runs[i].p99),
      errors: runs[i].errors,
    }));
    console.log(
      `agent round ${round} (interleaved): ` +
        out.map((r) => `${r.name.slice(0, 24)} ${r.cpuUsPerReq.toFixed(0)} µs`).join(', '),
    );
    return { rows: out };
  } finally {
    for (const s of servers) s.child.kill('SIGKILL');
  }
}

/**
 * AGENT_ROUNDS measured rounds, then one profiled round. Per variant: the median of each
 * measure, and the median over rounds of its CPU per request divided by bare node's in the same
 * round. The profiles give each part's share of the busy time inside the measured window.
 */
async function measureAgent(workload) {
  const rounds = [];
  for (let round = 0; round < AGENT_ROUNDS; round++)
    rounds.push(
      (AGENT_INTERLEAVED ? await interleavedRound(workload, round) : await agentRound(workload, round, false))
        .rows,
    );
  if (!AGENT_PROFILE) return { rows: summarize(workload, rounds), profiles: [] };
  rmSync(PROFILE_DIR, { recursive: true, force: true });
  mkdirSync(PROFILE_DIR, { recursive: true });
  const profiled = await agentRound(workload, AGENT_ROUNDS, true);
  // the window, for reading the profiles again: node bench/instrument/profile-breakdown.mjs <file>
  writeFileSync(
    join(PROFILE_DIR, 'window.json'),
    `${JSON.stringify({ fromUs: profiled.fromUs, toUs: profiled.toUs, variants: workload.variants.map((v) => [v.prefix, v.name]) })}\n`,
  );
  const rows = summarize(workload, rounds);
  const profiles = workload.variants
    .filter((v) => PROFILED.has(v.name))
    .map((v) => {
      const file = join(PROFILE_DIR, `${v.prefix}.cpuprofile`);
      const parts = profileParts(JSON.parse(readFileSync(file, 'utf8')), profiled.fromUs, profiled.toUs);
      return { name: v.name, file, parts };
    });
  return { rows, profiles };
}

let agent = [];
let agentProfiles = [];
if (!PARTS.has('agent')) {
  // not asked for
} else if (existsSync(sdkAgent) && existsSync(weatherFixture)) {
  const listening = (key) => (out) => {
    const m = new RegExp(`"msg":"listening".*?"${key}":("[^"]*"|\\d+)`).exec(out);
    return m ? { [key]: JSON.parse(m[1]) } : undefined;
  };
  const fixture = await runUntilReady(
    [],
    weatherFixture,
    { PORT: '0' },
    { keep: true, ready: listening('url') },
  );
  try {
    ({ rows: agent, profiles: agentProfiles } = await measureAgent({
      script: sdkAgent,
      env: {
        PORT: '0',
        HOST: '127.0.0.1',
        AGENTRT_MODEL_PROVIDER: 'offline',
        AGENTRT_OFFLINE_CHUNK_DELAY_MS: '0',
        WEATHER_API_BASE_URL: fixture.url,
      },
      ready: listening('port'),
      payload: { prompt: 'What is the weather in Seattle?' },
      variants: agentVariants.map(withOwnEndpoint),
    }));
    console.log(`reference agent:\n${agentTable(agent)}`);
    if (agentProfiles.length > 0) console.log(`where the CPU goes:\n${breakdownTable(agent, agentProfiles)}`);
  } finally {
    fixture.child.kill('SIGKILL');
  }
} else {
  console.warn('examples are not built (npx tsc -b): the reference-agent rows are left out');
}
sinkProcess.kill();
if (process.env.BENCH_AGENT_WRITE_ABLATION === '1' && agent.length > 0) {
  // An attribution run (BENCH_AGENT_EXTRA …) recorded as its own section, with what reproduces it.
  const settings = Object.entries(process.env)
    .filter(([k]) => k.startsWith('BENCH_AGENT_') && k !== 'BENCH_AGENT_WRITE_ABLATION')
    .map(([k, v]) => `${k}='${v}'`)
    .join(' ');
  const file = writeSection(
    'instrument-ablation',
    'Reference agent: what each part of the launcher costs (bench/instrument, ablation)',
    `Our launcher with parts of it turned off by its own settings, beside bare node, on the reference
agent (examples/sdk-agent, offline model)${AGENT_INTERLEAVED ? `, loaded one variant at a time in blocks of ${AGENT_BLOCK} requests, cycling through the variants until each had ${AGENT_REQUESTS} per round` : ''}; overhead is the median over
${AGENT_ROUNDS} rounds of each variant's CPU per request over bare node's in the same round (load average ${loadAverage()}). Reproduce with
\`${settings} BENCH_PARTS=agent node bench/instrument/index.mjs\`.

${agentTable(agent)}
`,
  );
  console.log(`wrote ${file}`);
}
if (!allParts) process.exit(0); // a partial run is printed, not recorded

// ---- report ------------------------------------------------------------------------------------
const oursStart = startupCached.find((r) => r.name === '@agentrt/instrument (--require)');
const adotRow = startupCached.find((r) => r.name.startsWith('ADOT'));
const oursCold = startupCold.find((r) => r.name === '@agentrt/instrument (--require)');
const adotCold = startupCold.find((r) => r.name.startsWith('ADOT'));
const load = loadAverage();
const pct = (x) => `${x.toFixed(1)}%`;
/** "ours X% (ADOT Y%, upstream register Z%)" for one workload's rows. */
function throughputLine(rows) {
  const [base] = rows;
  const find = (prefix) => rows.find((r) => r.name.startsWith(prefix));
  const oursRow = find('@agentrt');
  const adot = find('ADOT');
  const upstream = find('auto-instrumentations');
  return (
    `${pct(overhead(oursRow, base))} (CPU per request ${base.cpuUsPerReq.toFixed(0)} → ` +
    `${oursRow.cpuUsPerReq.toFixed(0)} µs)` +
    (adot ? `, ADOT ${pct(overhead(adot, base))}` : '') +
    (upstream ? `, upstream register ${pct(overhead(upstream, base))}` : '')
  );
}
const startupLine = adotRow
  ? `Start-up: @agentrt/instrument adds ${oursStart.addedMs.toFixed(0)} ms / ${oursStart.addedMb.toFixed(1)} MB ` +
    `against ADOT's ${adotRow.addedMs.toFixed(0)} ms / ${adotRow.addedMb.toFixed(1)} MB ` +
    `(${((oursStart.addedMs / adotRow.addedMs) * 100).toFixed(0)}% of its added time) with a warm compile cache ` +
    `for both, and ${oursCold.addedMs.toFixed(0)} ms against ${adotCold.addedMs.toFixed(0)} ms ` +
    `(${((oursCold.addedMs / adotCold.addedMs) * 100).toFixed(0)}%) with none.`
  : `ADOT could not be installed, so only the upstream register is compared.`;
/** "ours X% (…)" for the reference agent: CPU per request against bare node, median of per-round ratios. */
function agentLine() {
  if (agent.length === 0) return '';
  const find = (prefix) => agent.find((r) => r.name.startsWith(prefix));
  const ratio = (r) => (r ? pct((r.cpuRatio - 1) * 100) : 'n/a');
  const [base] = agent;
  const full = find('@agentrt/instrument (--import)');
  const off = find('@agentrt/instrument, sampler off');
  return (
    `Reference agent, CPU per request over bare node (${base.cpuUsPerReq.toFixed(0)} µs): ours in full ` +
    `${ratio(full)} (${full.cpuUsPerReq.toFixed(0)} µs, ${full.otlpBytesPerReq.toFixed(0)} OTLP bytes/request), ` +
    `ours with the sampler off ${ratio(off)}, upstream register ${ratio(find('auto-instrumentations'))}, ` +
    `ADOT ${ratio(find('ADOT'))}.`
  );
}
const echoLine =
  `On the echo agent, where the contract server itself is all the work: ${throughputLine(echo)}; ` +
  `ours adds ${(echo.find((r) => r.name.startsWith('@agentrt')).cpuUsPerReq - echo[0].cpuUsPerReq).toFixed(0)} µs ` +
  `of CPU per request.`;

/** The control row, and the split of our CPU per request into SDK + span, HTTP span, export. */
function echoExplanation() {
  const [base, control] = echo;
  const [lean, upstream, noHttp] = floorVariants.map((v) => echo.find((t) => t.name === v.name));
  const oursRow = echo.find((t) => t.name.startsWith('@agentrt'));
  const added = (x) => `+${(x.cpuUsPerReq - base.cpuUsPerReq).toFixed(0)} µs`;
  return (
    `An echo request costs ${base.cpuUsPerReq.toFixed(0)} µs of CPU here, most of it the loopback socket ` +
    `write, and the control row shows how far from proportional added work is on this machine: ` +
    `3 µs of plain CPU per request, no telemetry, cost ${pct(overhead(control, base))} of throughput ` +
    `(${added(control)} of measured CPU per request). Under 15% on the echo server would mean ` +
    `less work per request than that, for span, context and export together. ` +
    `Our CPU per request over bare node: SDK + one server span from @agentrt/server (no export or metrics) ` +
    `${added(noHttp)}; the same span from our HTTP server instrumentation (what ships) ${added(lean)}, ` +
    `from the upstream HTTP instrumentation ${added(upstream)}; with the request-duration metric and ` +
    `OTLP export (the full row) ${added(oursRow)}.`
  );
}

// BENCH_AGENT_PROFILE=0 runs have no profiles: agent-profile.md keeps the last profiled run's.
if (agent.length > 0 && agentProfiles.length > 0) {
  writeFileSync(
    join(here, 'agent-profile.md'),
    `# Reference agent: where the instrumented CPU goes

Written by \`node bench/instrument/index.mjs\` (${new Date().toISOString().slice(0, 10)}, load average ${load}).
From \`--cpu-prof\` profiles of bare node, our two variants and the upstream register, loaded together with ADOT; only
samples inside the measured window count, each scaled to the variant's median CPU per request.
The profiles (flame graphs in Chrome DevTools or speedscope) are in bench/.work/instrument-profiles/.

## By part

${breakdownTable(agent, agentProfiles)}

## The functions that grew most against bare node

${topAddedFunctions(agent, agentProfiles)}
`,
  );
}

const markdown = `
Figures are from one run on a shared 2-core machine (load average ${load} at the end of the
run): compare the columns, not the absolute numbers. Start-up: a small CommonJS Koa app that listens on
127.0.0.1 and exits, placed outside the repository with only koa in its node_modules; time from
spawn to its "ready" line, RSS then and 300 ms later, median of ${STARTUP_RUNS} interleaved runs.
@agentrt/instrument loads its OTLP exporter and the metrics SDK on the event-loop turn after the
app's start-up code, so that work is not in "ready" but is in the "300 ms later" memory column.
Throughput: \`POST /invocations\` on the contract server (\`@agentrt/server\` \`serve()\`), autocannon,
${CONNECTIONS} connections, ${THROUGHPUT_SECONDS} s after a 1 s warm-up, median of ${THROUGHPUT_ROUNDS}
interleaved rounds, with the server's CPU time per request (from /proc). Two agents: the reference
SDK-integration agent (examples/sdk-agent: a Strands agent loop, three turns of the offline model and
two HTTP tool calls to the fixture weather API per request) and an echo agent. Every instrumented
variant exports to an OTLP sink in a process of its own; "OTLP bytes/request" is what reached it.
ADOT runs in its AgentCore mode (\`AGENT_OBSERVABILITY_ENABLED=true\`) with its OTLP endpoints pointed
at the same sink. The reference agent's variants are loaded all at once instead (${AGENT_CONNECTIONS}
connections each, ${THROUGHPUT_SECONDS} s after a 2 s warm-up, ${AGENT_ROUNDS} rounds), so a
neighbour's load hits them alike: its overhead column is the median over rounds of each variant's
CPU per request divided by bare node's in the same round. Each variant exports to its own endpoint
prefix of the sink. One more round runs bare node, our two variants and the upstream register under \`--cpu-prof\`; the
breakdown gives each part of the code its share of the profile's busy samples inside the measured
window (by the script of the sampled function, bench/instrument/profile-breakdown.mjs), scaled to
the variant's median CPU per request. The functions behind it are in bench/instrument/agent-profile.md;
the profiles themselves (open them in Chrome DevTools or speedscope as flame graphs) are left in
bench/.work/instrument-profiles/.

Goals (#18): on the reference agent full telemetry at most +10% CPU per request and at most +3% with
the sampler off; on the echo agent at most +25 µs per request; start-up under half of ADOT's added time.
${startupLine}
${agentLine()}
${echoLine}
${echoExplanation()}
How many calls into the OpenTelemetry SDK a reference-agent request makes, and what they add up to,
is in the section written by bench/instrument/op-count.mjs (calls counted exactly, each timed warm):
a bound on the telemetry work itself that a loaded machine does not blur.

### Start-up, warm compile cache for every variant (what @agentrt/instrument sets up by itself)

${startupTable(startupCached)}

### Start-up, no compile cache for any variant

${startupTable(startupCold)}

### CPU per request, reference agent (examples/sdk-agent, offline model)

${agent.length > 0 ? agentTable(agent) : '_examples not built: not measured_'}

### Where the reference agent's CPU goes (µs per request, from the CPU profiles)

${
  agent.length === 0
    ? '_examples not built: not measured_'
    : agentProfiles.length === 0
      ? '_not profiled in this run (BENCH_AGENT_PROFILE=0); bench/instrument/agent-profile.md has the last profiled run_'
      : breakdownTable(agent, agentProfiles)
}

### Throughput, echo agent

${throughputTable(echo)}
`;
console.log(
  `\n${startupLine}\n${agentLine()}\n${echoLine}\n${echoExplanation()}\n` +
    `wrote ${writeSection('instrument', 'Instrumentation launcher (bench/instrument)', markdown)}`,
);
