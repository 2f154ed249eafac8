// Memory of the runtime under a telemetry burst from one sandboxed session: BENCH_RELAY_EXPORTS (64)
// parallel OTLP/JSON exports of each size in BENCH_RELAY_MIB ("15,3.5") sent at once to the
// session's relay socket, BENCH_RELAY_BURSTS (3) times. The runtime is `node dist/main.js` in a
// child process (bwrap isolation, its OTLP endpoint a sink here that drains what it gets), a fresh
// one for each size: its VmRSS before, its peak (VmHWM) and its VmRSS BENCH_RELAY_SETTLE_MS (10000)
// after each burst. BENCH_MAIN: another build's main.js measured the same way first (an A/B),
// named BENCH_MAIN_LABEL in the table.
//   node bench/runtime/otlp-relay.mjs        (build first: npx tsc -b)
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { resolve } from 'node:path';
import { loadAverage, table, writeSection } from '../lib/report.mjs';
import { RUNTIME_MAIN, memoryOf, startRuntimeProcess } from '../lib/runtime-process.mjs';

const EXPORTS = Number(process.env.BENCH_RELAY_EXPORTS ?? 64);
const SIZES_MIB = (process.env.BENCH_RELAY_MIB ?? '15,3.5').split(',').map(Number);
const SETTLE_MS = Number(process.env.BENCH_RELAY_SETTLE_MS ?? 10_000);
const BURSTS = Number(process.env.BENCH_RELAY_BURSTS ?? 3);
const SESSION = `bench-relay-session-${process.pid}-${'0'.repeat(24)}`;
const MiB = 1024 * 1024;

function call(to, method, path, body, headers = {}) {
  return new Promise((done, fail) => {
    const req = request(
      { ...to, method, path, headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => done({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', fail);
    req.end(body);
  });
}

/** A trace export of about `bytes`: spans of ~1 KiB each, as a chatty agent's batch would carry. */
function traceExport(bytes) {
  const span = (i) => ({
    traceId: '5b8efff798038103d269b633813fc60c',
    spanId: i.toString(16).padStart(16, '0'),
    name: 'chat model',
    kind: 3,
    startTimeUnixNano: '1700000000000000000',
    endTimeUnixNano: '1700000000100000000',
    attributes: [
      { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
      { key: 'gen_ai.prompt', value: { stringValue: 'x'.repeat(800) } },
      { key: 'gen_ai.usage.input_tokens', value: { intValue: 1200 } },
    ],
  });
  const perSpan = JSON.stringify(span(1)).length + 1;
  const spans = Array.from({ length: Math.max(1, Math.floor(bytes / perSpan)) }, (_, i) => span(i + 1));
  return Buffer.from(
    JSON.stringify({
      resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ scope: { name: 'bench' }, spans }] }],
    }),
  );
}

const mib = (bytes) => `${(bytes / MiB).toFixed(0)} MiB`;

/** Starts the runtime build `main` and one sandboxed session of the echo agent; finds its relay socket. */
async function startRuntime(main, sinkPort) {
  const runtime = await startRuntimeProcess({
    main,
    env: {
      AGENTRT_ISOLATION: 'bwrap',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sinkPort}`,
      OTEL_METRIC_EXPORT_INTERVAL: '600000',
    },
  });
  const arn = await runtime.createRuntime('bench_relay', 'echo');
  const invoked = await fetch(`${runtime.url}/runtimes/${encodeURIComponent(arn)}/invocations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-amzn-bedrock-agentcore-runtime-session-id': SESSION },
    body: '{}',
  });
  if (!invoked.ok) throw new Error(`invoke: ${invoked.status} ${await invoked.text()}`);
  const socketPath = relaySocket(runtime.pid);
  if (!socketPath) throw new Error('the runtime serves no telemetry relay: is bwrap usable here?');
  return { ...runtime, socketPath };
}

/** The Unix socket of a session relay that process `pid` listens on (its fds in /proc/net/unix). */
function relaySocket(pid) {
  const inodes = new Set();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // the fd closed while we looked
    }
  }
  for (const line of readFileSync('/proc/net/unix', 'utf8').split('\n').slice(1)) {
    const [, , , , , , inode, path] = line.trim().split(/\s+/);
    if (path?.endsWith('/run/port-4318.sock') && inodes.has(inode)) return path;
  }
  return undefined;
}

/** Fires the burst; the runtime's memory before, at its peak and once it settled. */
async function burst(runtime, body) {
  const agent = new Agent({ maxSockets: EXPORTS });
  const to = { socketPath: runtime.socketPath, agent };
  await new Promise((r) => setTimeout(r, 1000));
  const before = memoryOf(runtime.pid).rssBytes;
  const t0 = performance.now();
  const answers = await Promise.all(
    Array.from({ length: EXPORTS }, () =>
      call(to, 'POST', '/v1/traces', body).then(
        (r) => r.status,
        (e) => e.code ?? 'error',
      ),
    ),
  );
  const wallMs = performance.now() - t0;
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  agent.destroy();
  const statuses = {};
  for (const a of answers) statuses[a] = (statuses[a] ?? 0) + 1;
  const { rssBytes, peakRssBytes } = memoryOf(runtime.pid);
  return { before, peak: peakRssBytes, after: rssBytes, wallMs, statuses };
}

const canSandbox =
  process.platform === 'linux' &&
  spawnSync('bwrap', ['--version']).status === 0 &&
  spawnSync('socat', ['-V']).status === 0;
if (!canSandbox) {
  console.log('skipped: the relay serves sandboxed sessions only (needs bwrap and socat)');
  process.exit(0);
}

let forwardedBytes = 0;
const sink = createServer((req, res) => {
  req.on('data', (c) => (forwardedBytes += c.length));
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
});
await new Promise((r) => sink.listen(0, '127.0.0.1', r));

const builds = [
  ...(process.env.BENCH_MAIN
    ? [
        {
          label: process.env.BENCH_MAIN_LABEL ?? 'baseline (BENCH_MAIN)',
          main: resolve(process.env.BENCH_MAIN),
        },
      ]
    : []),
  { label: 'this build', main: RUNTIME_MAIN },
];
const rows = [];
// Each burst in a runtime of its own, so that one burst's leftovers do not count in the next.
for (const size of SIZES_MIB) {
  const body = traceExport(size * MiB);
  for (const build of builds) {
    const runtime = await startRuntime(build.main, sink.address().port);
    try {
      forwardedBytes = 0;
      // The same burst again: what the first left is reused, not added to, when the memory is bounded.
      const bursts = [];
      for (let i = 0; i < BURSTS; i++) bursts.push(await burst(runtime, body));
      const [first] = bursts;
      const last = bursts.at(-1);
      const answered = Object.entries(first.statuses)
        .map(([status, n]) => `${n}× ${status}`)
        .join(', ');
      console.log(build.label, `${EXPORTS} × ${size} MiB`, bursts, `forwarded ${mib(forwardedBytes)}`);
      rows.push([
        build.label,
        `${EXPORTS} × ${(body.length / MiB).toFixed(1)} MiB`,
        answered,
        mib(forwardedBytes / BURSTS),
        mib(first.before),
        `${mib(first.peak)} (+${mib(first.peak - first.before)})`,
        bursts.map((b) => mib(b.after)).join(' / '),
        `${mib(last.peak)} (+${mib(last.peak - first.before)})`,
        `${(first.wallMs / 1000).toFixed(1)} s`,
      ]);
    } finally {
      await runtime.stop();
    }
  }
}
sink.close();

const markdown = `${EXPORTS} parallel OTLP/JSON trace exports sent at once to one sandboxed session's telemetry relay
(its Unix socket; the worker's exporter would reach it as 127.0.0.1:4318), against the runtime
process (\`node dist/main.js\`, bwrap isolation, a fresh one per row) whose OTLP endpoint is a sink
that drains what the relay forwards. RSS is the runtime process's VmRSS (workers are other
processes): before the first burst, its peak (VmHWM), and ${SETTLE_MS / 1000} s after each of ${BURSTS} bursts
sent one after the other (bounded memory is reused by the next burst, not added to). The relay
takes at most 4 exports, 16 MiB and 16 connections of a session at once, each export up to 4 MiB:
a larger one gets 400, one beyond the budget 429 with \`Retry-After\`, a connection beyond the 16
is closed (the client sees EPIPE); OTLP exporters retry the last two. Load average ${loadAverage()}.

${table(['build', 'burst', 'answers (1st)', 'forwarded per burst', 'RSS before', 'RSS peak, 1st burst', `RSS ${SETTLE_MS / 1000} s after each burst`, `RSS peak, ${BURSTS} bursts`, 'wall (1st)'], rows)}
`;
console.log(`\n${markdown}`);
console.log(
  `written to ${writeSection('runtime-otlp-relay', 'Hosting runtime: telemetry relay under a burst', markdown)}`,
);
