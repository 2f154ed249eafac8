// bench/instrument's reference-agent part: the SDK-integration agent (examples/sdk-agent) on the same
// contract server, with the offline model so the run measures CPU rather than a model's latency: per
// request a Strands agent loop of three model turns and two tool calls, each an HTTP GET to the
// fixture weather API (in a process of its own).
//
// Its variants are loaded all at once, over the same window, each by its own autocannon instance:
// on a machine shared with other work, CPU per request of a variant measured alone moved by ±30%
// from one minute to the next, while the ratio of variants loaded side by side held within a few
// percent. Each variant exports to its own endpoint prefix of the sink, so OTLP bytes per request
// stay per variant. BENCH_AGENT_INTERLEAVED=1 loads them one at a time instead (agent-interleaved.mjs).
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { agentTable, breakdownTable, logRound } from './agent-tables.mjs';
import { interleavedRound } from './agent-interleaved.mjs';
import { autocannon, cpuMs, invocationLoad, median, root, runUntilReady, startServer } from './harness.mjs';
import { profileParts } from './profile-breakdown.mjs';
import {
  AGENT_CONNECTIONS,
  AGENT_EXTRA,
  AGENT_INTERLEAVED,
  AGENT_ONLY,
  AGENT_PROFILE,
  AGENT_PROFILED,
  AGENT_ROUNDS,
  PROFILE_INTERVAL_US,
  THROUGHPUT_SECONDS,
} from './settings.mjs';
import { oursVariant } from './variants.mjs';

const sdkAgent = join(root, 'examples', 'sdk-agent', 'dist', 'main.js');
const weatherFixture = join(root, 'examples', 'models', 'dist', 'fixtures', 'weather-api-main.js');
const PROFILE_DIR = join(root, 'bench', '.work', 'instrument-profiles');

/**
 * The agent's variants: none, ours (lean mode, the default) with the sampler off, ours in full, the
 * peers (ours on the upstream SDK among them), ours on the upstream SDK with the sampler off, then BENCH_AGENT_EXTRA's; only BENCH_AGENT_ONLY's (and bare node) when it is set.
 */
function agentVariants(peerVariants, sinkUrl) {
  const otlpEnv = { OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl };
  const variants = [
    peerVariants[0],
    oursVariant('@agentrt/instrument, sampler off (OTEL_TRACES_SAMPLER=always_off)', {
      ...otlpEnv,
      OTEL_TRACES_SAMPLER: 'always_off',
    }),
    ...peerVariants.slice(1),
    oursVariant('@agentrt/instrument, AGENTRT_SDK=otel, sampler off', {
      ...otlpEnv,
      AGENTRT_SDK: 'otel',
      OTEL_TRACES_SAMPLER: 'always_off',
    }),
    ...Object.entries(AGENT_EXTRA).map(([name, env]) => oursVariant(`ours: ${name}`, { ...otlpEnv, ...env })),
  ];
  return AGENT_ONLY ? variants.filter((v, i) => i === 0 || AGENT_ONLY.test(v.name)) : variants;
}

/** The variants the CPU profile round profiles (bare, ours sampler off, ours full, upstream register). */
function profiledNames(variants) {
  const profiled = AGENT_PROFILED
    ? variants.filter((v, i) => i === 0 || AGENT_PROFILED.test(v.name))
    : variants.filter((v) => v.env.AGENTRT_SDK === undefined).slice(0, 4);
  return new Set(profiled.map((v) => v.name));
}

/** A variant's own OTLP endpoint: the sink's URL with a path prefix per variant. */
function withOwnEndpoint(sinkUrl) {
  return (v, i) => {
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
  };
}

/** The ready line of the examples' servers: `"msg":"listening"` with `key`'s value. */
const listening = (key) => (out) => {
  const m = new RegExp(`"msg":"listening".*?"${key}":("[^"]*"|\\d+)`).exec(out);
  return m ? { [key]: JSON.parse(m[1]) } : undefined;
};

/**
 * The reference agent under every agent variant, with the weather fixture up for its tool calls;
 * printed. Empty rows (with a warning) when the examples are not built.
 */
export async function runAgent(peerVariants, sink) {
  if (!existsSync(sdkAgent) || !existsSync(weatherFixture)) {
    console.warn('examples are not built (npx tsc -b): the reference-agent rows are left out');
    return { rows: [], profiles: [] };
  }
  const fixture = await runUntilReady(
    [],
    weatherFixture,
    { PORT: '0' },
    { keep: true, ready: listening('url') },
  );
  try {
    const variants = agentVariants(peerVariants, sink.url).map(withOwnEndpoint(sink.url));
    const result = await measureAgent(agentWorkload(variants, fixture.url), sink);
    console.log(`reference agent:\n${agentTable(result.rows)}`);
    if (result.profiles.length > 0)
      console.log(`where the CPU goes:\n${breakdownTable(result.rows, result.profiles)}`);
    return result;
  } finally {
    fixture.child.kill('SIGKILL');
  }
}

/** The reference agent as a workload: the offline model, tool calls to the fixture at `weatherUrl`. */
function agentWorkload(variants, weatherUrl) {
  return {
    script: sdkAgent,
    env: {
      PORT: '0',
      HOST: '127.0.0.1',
      AGENTRT_MODEL_PROVIDER: 'offline',
      AGENTRT_OFFLINE_CHUNK_DELAY_MS: '0',
      WEATHER_API_BASE_URL: weatherUrl,
    },
    ready: listening('port'),
    payload: { prompt: 'What is the weather in Seattle?' },
    variants,
    profiled: profiledNames(variants),
  };
}

/**
 * AGENT_ROUNDS measured rounds, then one profiled round. Per variant: the median of each
 * measure, and the median over rounds of its CPU per request divided by bare node's in the same
 * round. The profiles give each part's share of the busy time inside the measured window.
 */
async function measureAgent(workload, sink) {
  const rounds = [];
  for (let round = 0; round < AGENT_ROUNDS; round++)
    rounds.push(
      (AGENT_INTERLEAVED
        ? await interleavedRound(workload, round, sink)
        : await agentRound(workload, round, false, sink)
      ).rows,
    );
  if (!AGENT_PROFILE) return { rows: summarize(workload, rounds), profiles: [] };
  rmSync(PROFILE_DIR, { recursive: true, force: true });
  mkdirSync(PROFILE_DIR, { recursive: true });
  const profiled = await agentRound(workload, AGENT_ROUNDS, true, sink);
  // the window, for reading the profiles again: node bench/instrument/profile-breakdown.mjs <file>
  writeFileSync(
    join(PROFILE_DIR, 'window.json'),
    `${JSON.stringify({ fromUs: profiled.fromUs, toUs: profiled.toUs, variants: workload.variants.map((v) => [v.prefix, v.name]) })}\n`,
  );
  const rows = summarize(workload, rounds);
  const profiles = workload.variants
    .filter((v) => workload.profiled.has(v.name))
    .map((v) => {
      const file = join(PROFILE_DIR, `${v.prefix}.cpuprofile`);
      const parts = profileParts(JSON.parse(readFileSync(file, 'utf8')), profiled.fromUs, profiled.toUs);
      return { name: v.name, file, parts };
    });
  return { rows, profiles };
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

/** Node flags that make variant `v` write its CPU profile, in a profiled round. */
function profileArgs(workload, v, profile) {
  if (!profile || !workload.profiled.has(v.name)) return [];
  return [
    '--cpu-prof',
    `--cpu-prof-dir=${PROFILE_DIR}`,
    `--cpu-prof-name=${v.prefix}.cpuprofile`,
    `--cpu-prof-interval=${PROFILE_INTERVAL_US}`,
  ];
}

/**
 * One round: every variant's server up, all loaded at once for THROUGHPUT_SECONDS; CPU per request,
 * OTLP bytes per request and the window's bounds (CLOCK_MONOTONIC µs, the CPU profiles' clock).
 * With `profile`, the profiled variants run under `--cpu-prof`.
 */
async function agentRound(workload, round, profile, sink) {
  const servers = [];
  try {
    for (const v of workload.variants) {
      const server = await startServer(workload, v, profileArgs(workload, v, profile));
      servers.push({ v, ...server });
    }
    const opts = (port) => invocationLoad(workload, port, AGENT_CONNECTIONS);
    await sink.stats(); // counts from here on
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
    const exported = await sink.stats();
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
    logRound(`agent round ${round}${profile ? ' (profiled)' : ''}`, out);
    return { rows: out, fromUs, toUs };
  } finally {
    await stopServers(servers);
  }
}

/** SIGTERM: the servers drain and exit, which is when --cpu-prof writes its profile. */
function stopServers(servers) {
  return Promise.all(
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
