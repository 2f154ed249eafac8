// bench/server: POST /invocations with a trivial entrypoint on @agentrt/server, against a bare Koa
// handler, a bare node:http handler and the bedrock-agentcore (AWS TypeScript SDK) app, in one run.
// Each target runs in its own process; autocannon drives it from this one. Run after `npx tsc -b`.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { table, writeSection } from '../lib/report.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const peerDir = join(here, '..', '.peers', 'server');
const PEER = 'bedrock-agentcore@0.4.4';
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
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

// CPU seconds (user + system) the process has used so far, from /proc (Linux). The machine is shared,
// so CPU per request is a steadier measure of a server's cost than requests per second.
const TICKS_PER_S = 100;
function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S;
  } catch {
    return NaN;
  }
}

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
  { kind: 'agentrt', label: '@agentrt/server (createApp)' },
  { kind: 'koa', label: 'bare Koa 3 handler' },
  { kind: 'node-http', label: 'bare node:http handler' },
  { kind: 'bedrock-agentcore', label: `bedrock-agentcore ${PEER.split('@')[1]} (Fastify)` },
];
const peerProblem = installPeer();
const results = new Map();
const problems = new Map();
if (peerProblem) problems.set('bedrock-agentcore', peerProblem);

for (let round = 0; round < ROUNDS; round++) {
  // Rotate the order so no target always runs first (or right after the same neighbour).
  for (const t of [...targets.slice(round % targets.length), ...targets.slice(0, round % targets.length)]) {
    if (problems.has(t.kind)) continue;
    let running;
    try {
      running = await startTarget(t.kind);
      await check(running.url);
      await load(running.url, 1); // warm-up (JIT, connection pool)
      const cpuBefore = cpuSeconds(running.child.pid);
      const r = await load(running.url, DURATION_S);
      const cpuUsPerReq = ((cpuSeconds(running.child.pid) - cpuBefore) * 1e6) / r.requests.total;
      const sample = {
        rps: r.requests.average,
        p50: r.latency.p50,
        p99: r.latency.p99,
        cpuUsPerReq,
        errors: r.errors + r.timeouts + r.non2xx,
      };
      console.log(
        `round ${round + 1} ${t.kind}: ${sample.rps.toFixed(0)} req/s p50 ${sample.p50} ms p99 ${sample.p99} ms ` +
          `${cpuUsPerReq.toFixed(0)} µs CPU/req`,
      );
      const prev = results.get(t.kind);
      results.set(t.kind, {
        rps: Math.max(prev?.rps ?? 0, sample.rps),
        p50: Math.min(prev?.p50 ?? Infinity, sample.p50),
        p99: Math.min(prev?.p99 ?? Infinity, sample.p99),
        cpuUsPerReq: Math.min(prev?.cpuUsPerReq ?? Infinity, sample.cpuUsPerReq),
        errors: (prev?.errors ?? 0) + sample.errors,
      });
    } catch (err) {
      problems.set(t.kind, err.message);
      console.log(`${t.kind}: ${err.message}`);
    } finally {
      if (running) await stopTarget(running.child);
    }
  }
}

const koa = results.get('koa');
const ratio = (a, b) => (a && b ? `${(a / b).toFixed(2)}×` : 'n/a');
const rows = targets.map((t) => {
  const r = results.get(t.kind);
  if (!r) return [t.label, '—', '—', '—', '—', '—', '—', `did not run: ${problems.get(t.kind) ?? 'unknown'}`];
  return [
    t.label,
    r.rps.toFixed(0),
    r.p50,
    r.p99,
    r.cpuUsPerReq.toFixed(0),
    ratio(r.rps, koa?.rps),
    ratio(r.cpuUsPerReq, koa?.cpuUsPerReq),
    r.errors === 0 ? 'ok' : `${r.errors} errors/non-2xx`,
  ];
});
const md = `POST /invocations with body \`${BODY}\` and a session header; each server reads and parses the
JSON body and answers \`{"ok":true}\`. autocannon, ${CONNECTIONS} connections, ${DURATION_S} s per run after a 1 s
warm-up, ${ROUNDS} rounds in rotating order, best figure of each column kept; each server in its own process
on 127.0.0.1. "server CPU µs/req" is the server process's user+system CPU time (from /proc) divided by the
requests it answered: on a shared machine it is steadier than req/s, which mostly measures how much CPU
the load generator and the neighbours left over. @agentrt/server runs its full
path (context extraction, request context, health tracking, error middleware) with no tracer provider
registered. **Figures are ratios from one run on a shared machine** (other engineers were building
and testing at the same time): compare the ratios, not the absolute numbers.

${table(['server', 'req/s', 'p50 ms', 'p99 ms', 'server CPU µs/req', 'req/s vs bare Koa', 'CPU/req vs bare Koa', 'status'], rows)}
`;
const file = writeSection('server', '@agentrt/server: /invocations throughput', md);
console.log(`\n${md}\nwritten to ${file}`);
