// bench/server: POST /invocations with a trivial entrypoint on @agentrt/server, against a bare Koa
// handler, a bare node:http handler and the bedrock-agentcore (AWS TypeScript SDK) app, in one run.
// Each target runs in its own process; autocannon drives it from this one. Run after `npx tsc -b`.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { table, writeSection } from '../lib/report.mjs';
import { cpuMsOf } from '../lib/proc.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const peerDir = join(here, '..', '.peers', 'server');
const PEER = 'bedrock-agentcore@0.4.4';
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 1);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const BODY = JSON.stringify({ prompt: 'Hello, agent' });
const HEADERS = {
  'content-type': 'application/json',
  'x-amzn-bedrock-agentcore-runtime-session-id': 'bench-session-0123456789abcdef0123456789',
};

function installPeer() {
  if (existsSync(join(peerDir, 'node_modules', 'bedrock-agentcore', 'package.json'))) return undefined;
  mkdirSync(peerDir, { recursive: true });
  if (!existsSync(join(peerDir, 'package.json')))
    writeFileSync(join(peerDir, 'package.json'), '{"private":true}\n');
  console.log(`installing ${PEER} into ${peerDir}`);
  const r = spawnSync('npm', ['install', '--prefix', peerDir, '--no-audit', '--no-fund', PEER], {
    stdio: ['ignore', 'inherit', 'inherit'],
    timeout: 180_000,
  });
  return r.status === 0 ? undefined : `npm install ${PEER} failed (exit ${r.status ?? r.signal})`;
}

function startTarget(kind) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(here, 'targets.mjs'), kind, peerDir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${kind} did not start in 20 s: ${err.trim()}`));
    }, 20_000);
    child.stderr.on('data', (c) => (err += c));
    child.stdout.on('data', (c) => {
      out += c;
      const line = out.split('\n').find((l) => l.startsWith('{"port"'));
      if (line) {
        clearTimeout(timer);
        resolve({ child, url: `http://127.0.0.1:${JSON.parse(line).port}` });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${kind} exited with ${code}: ${err.trim().split('\n').slice(-3).join(' ')}`));
    });
  });
}

function stopTarget(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

async function check(url) {
  const res = await fetch(`${url}/invocations`, { method: 'POST', headers: HEADERS, body: BODY });
  const text = await res.text();
  if (res.status !== 200 || JSON.parse(text).ok !== true)
    throw new Error(`unexpected answer ${res.status} ${text}`);
}

// CPU seconds (user + system) the process has used so far. The machine is shared, so CPU per
// request is a steadier measure of a server's cost than requests per second.
const cpuSeconds = (pid) => cpuMsOf(pid) / 1000;

function load(url, durationS) {
  return autocannon({
    url: `${url}/invocations`,
    method: 'POST',
    headers: HEADERS,
    body: BODY,
    connections: CONNECTIONS,
    duration: durationS,
  });
}

const targets = [
  { kind: 'agentrt', label: '@agentrt/server (createApp, no OTel SDK)' },
  { kind: 'agentrt-traced', label: '@agentrt/server + OTel SDK (one server span per request)' },
  { kind: 'koa', label: 'bare Koa 3 handler' },
  { kind: 'node-http', label: 'bare node:http handler' },
  { kind: 'bedrock-agentcore', label: `bedrock-agentcore ${PEER.split('@')[1]} (Fastify)` },
];
const peerProblem = installPeer();
const problems = new Map();
if (peerProblem) problems.set('bedrock-agentcore', peerProblem);

// All servers start first and stay up; then short runs alternate between them, round after round,
// in rotating order. Medians over the rounds smooth out the bursts of a shared machine.
const running = new Map();
for (const t of targets) {
  if (problems.has(t.kind)) continue;
  try {
    const target = await startTarget(t.kind);
    running.set(t.kind, target);
    await check(target.url);
    await load(target.url, 1); // warm-up (JIT, connection pool)
  } catch (err) {
    problems.set(t.kind, err.message);
    console.log(`${t.kind}: ${err.message}`);
  }
}
const samples = new Map([...running.keys()].map((k) => [k, []]));
// Per-round samples: ratios are taken within a round, where neighbours in time share the same
// background load, and then the median over the rounds is reported.
const rounds = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    const roundSamples = new Map();
    const order = [...running.keys()];
    for (const kind of [...order.slice(round % order.length), ...order.slice(0, round % order.length)]) {
      const { url, child } = running.get(kind);
      const cpuBefore = cpuSeconds(child.pid);
      const r = await load(url, DURATION_S);
      const cpuUsPerReq = ((cpuSeconds(child.pid) - cpuBefore) * 1e6) / r.requests.total;
      const sample = {
        rps: r.requests.average,
        p50: r.latency.p50,
        p99: r.latency.p99,
        cpuUsPerReq,
        errors: r.errors + r.timeouts + r.non2xx,
      };
      samples.get(kind).push(sample);
      roundSamples.set(kind, sample);
      console.log(
        `round ${round + 1} ${kind}: ${sample.rps.toFixed(0)} req/s p50 ${sample.p50} ms p99 ${sample.p99} ms ` +
          `${cpuUsPerReq.toFixed(0)} µs CPU/req`,
      );
    }
    rounds.push(roundSamples);
  }
} finally {
  await Promise.all([...running.values()].map((t) => stopTarget(t.child)));
}
const median = (values) => {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const results = new Map(
  [...samples].map(([kind, list]) => [
    kind,
    {
      rps: median(list.map((x) => x.rps)),
      p50: median(list.map((x) => x.p50)),
      p99: median(list.map((x) => x.p99)),
      cpuUsPerReq: median(list.map((x) => x.cpuUsPerReq)),
      errors: list.reduce((n, x) => n + x.errors, 0),
    },
  ]),
);

const koa = results.get('koa');
/** Median over the rounds of `a`'s figure divided by `b`'s in the same round. */
const perRound = (a, b, field) => {
  const list = rounds.filter((r) => r.has(a) && r.has(b)).map((r) => r.get(a)[field] / r.get(b)[field]);
  return list.length ? `${median(list).toFixed(2)}×` : 'n/a';
};
const vsKoa = (kind, field) => perRound(kind, 'koa', field);
const rows = targets.map((t) => {
  const r = results.get(t.kind);
  if (!r) return [t.label, '—', '—', '—', '—', '—', '—', `did not run: ${problems.get(t.kind) ?? 'unknown'}`];
  return [
    t.label,
    r.rps.toFixed(0),
    r.p50,
    r.p99,
    r.cpuUsPerReq.toFixed(0),
    vsKoa(t.kind, 'rps'),
    vsKoa(t.kind, 'cpuUsPerReq'),
    r.errors === 0 ? 'ok' : `${r.errors} errors/non-2xx`,
  ];
});
const ours = results.get('agentrt');
const peer = results.get('bedrock-agentcore');
const verdict = [
  ours && koa
    ? `- @agentrt/server vs bare Koa: ${vsKoa('agentrt', 'rps')} the requests/s, ${vsKoa('agentrt', 'cpuUsPerReq')} the CPU per request (goal: within 10%).`
    : '- @agentrt/server vs bare Koa: not measured.',
  ours && peer
    ? `- @agentrt/server vs bedrock-agentcore: ${perRound('agentrt', 'bedrock-agentcore', 'rps')} the requests/s, ${perRound('agentrt', 'bedrock-agentcore', 'cpuUsPerReq')} the CPU per request.`
    : `- bedrock-agentcore: ${problems.get('bedrock-agentcore') ?? 'not measured'}.`,
].join('\n');
const md = `POST /invocations with body \`${BODY}\` and a session header. Every server reads and parses the JSON
body and answers \`{"ok":true}\`; each runs in its own process on 127.0.0.1. Load: autocannon, ${CONNECTIONS}
connections, ${ROUNDS} rounds of ${DURATION_S} s per server (after a 1 s warm-up), alternating between the
servers in rotating order. req/s, p50, p99 and CPU are medians over the rounds; the ratio columns are
medians of the ratios taken within each round (neighbours in time share the same background load).

- "server CPU µs/req": the server process's user+system CPU time (from /proc) divided by the requests
  it answered. On a shared machine this is steadier than req/s, which mostly shows how much CPU the load
  generator and the neighbours left over.
- @agentrt/server runs its whole path (header parsing, request context, health tracking, error
  middleware). Without an OpenTelemetry SDK (first row) it does no OTel work per request; the second
  row registers one (context manager, tracer provider, batch processor; the exporter drops the spans).
- bedrock-agentcore is the AWS TypeScript SDK's \`BedrockAgentCoreApp\` (Fastify 5), logging off,
  installed into \`bench/.peers/server\` by this script.

**Figures are ratios from one run on a shared 2-core machine** (other engineers were building and testing
at the same time): compare the ratios, not the absolute numbers.

${table(['server', 'req/s', 'p50 ms', 'p99 ms', 'server CPU µs/req', 'req/s vs bare Koa', 'CPU/req vs bare Koa', 'status'], rows)}

${verdict}
`;
const file = writeSection('server', '@agentrt/server: /invocations throughput', md);
console.log(`\n${md}\nwritten to ${file}`);
