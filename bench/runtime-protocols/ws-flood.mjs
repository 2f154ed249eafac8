// Memory of the hosting runtime while a container floods a WebSocket caller that does not read:
// `test-fixtures/ws-echo` sends BENCH_FLOOD_FRAMES (20000) binary frames of BENCH_FLOOD_BYTES
// (60000) through /runtimes/{arn}/ws to a `ws` client whose socket is paused, until the container
// has sent them all or can hand over no more for a second; then the client reads every frame. The
// runtime is `node dist/main.js` in a child process; its VmRSS is sampled every 20 ms throughout,
// and once more BENCH_SETTLE_MS (3000) after the last frame arrived. The same flood to a caller
// that reads from the start, in a runtime of its own, is the baseline. BENCH_MAIN: another build's
// main.js measured the same way first (an A/B on the same machine state). Writes its table into
// docs/benchmarks.md (section runtime-ws-flood).
//   npx tsc -b packages/runtime && node bench/runtime-protocols/ws-flood.mjs
import { WebSocket } from 'ws';
import { memoryOf, startRuntimeProcess } from '../lib/runtime-process.mjs';
import { loadAverage, table, writeSection } from '../lib/report.mjs';

const FRAMES = Number(process.env.BENCH_FLOOD_FRAMES ?? 20_000);
const FRAME_BYTES = Number(process.env.BENCH_FLOOD_BYTES ?? 60_000);
const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS ?? 3000);
const TOTAL = FRAMES * FRAME_BYTES;
const SESSION_HEADER = 'x-amzn-bedrock-agentcore-runtime-session-id';
const MiB = 1024 * 1024;
const mib = (bytes) => `${(bytes / MiB).toFixed(0)} MiB`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A caller's WebSocket to a session of the runtime, past the container's greeting. */
async function connect(url, arn, sessionId) {
  const client = new WebSocket(`${url.replace('http', 'ws')}/runtimes/${encodeURIComponent(arn)}/ws`, {
    headers: { [SESSION_HEADER]: sessionId },
  });
  await new Promise((resolve, reject) => {
    client.once('message', resolve);
    client.once('error', reject);
  });
  return client;
}

/** The bytes the container has handed to its socket so far, read by invoking the same session. */
async function handedOverBytes(url, arn, sessionId) {
  const res = await fetch(`${url}/runtimes/${encodeURIComponent(arn)}/invocations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [SESSION_HEADER]: sessionId },
    body: '{}',
  });
  return (await res.json()).flushedBytes;
}

/** Polls until the container has sent everything or has handed over nothing more for a second. */
async function untilStalled(read) {
  let bytes = 0;
  for (let stillSince = Date.now(); bytes < TOTAL && Date.now() - stillSince < 1000;) {
    await sleep(200);
    const now = await read();
    if (now !== bytes) [bytes, stillSince] = [now, Date.now()];
  }
  return bytes;
}

/**
 * Runs `scenario` against a fresh runtime process of the build `main` (default: this one) with a
 * session of the ws-echo container; `peak()` is its highest VmRSS sampled so far (every 20 ms).
 */
async function withRuntime(main, scenario) {
  const runtime = await startRuntimeProcess(main ? { main } : {});
  let peakBytes = 0;
  const sample = () => (peakBytes = Math.max(peakBytes, memoryOf(runtime.pid).rssBytes));
  const sampler = setInterval(sample, 20);
  try {
    const arn = await runtime.createRuntime(`bench_flood_${Date.now()}`, 'ws-echo');
    const sessionId = `bench-flood-session-${process.pid}-${'0'.repeat(24)}`;
    const client = await connect(runtime.url, arn, sessionId);
    let received = 0;
    client.on('message', (data) => (received += data.length));
    const allRead = async () => {
      while (received < TOTAL) await sleep(20);
    };
    const before = sample();
    try {
      return {
        before,
        ...(await scenario({
          client,
          allRead,
          peak: sample,
          handedOver: () => handedOverBytes(runtime.url, arn, sessionId),
        })),
        after: await sleep(SETTLE_MS).then(() => memoryOf(runtime.pid).rssBytes),
      };
    } finally {
      client.close();
    }
  } finally {
    clearInterval(sampler);
    await runtime.stop();
  }
}

/** The caller does not read until the container can hand over no more, then reads it all. */
async function pausedCaller({ client, allRead, peak, handedOver }) {
  client.pause();
  client.send(`flood:${FRAMES}:${FRAME_BYTES}`);
  let t0 = performance.now();
  const handedOverBytes = await untilStalled(handedOver);
  const floodSeconds = (performance.now() - t0) / 1000;
  const peakNotReading = peak();
  client.resume();
  t0 = performance.now();
  await allRead();
  return {
    handedOverBytes,
    floodSeconds,
    peakNotReading,
    peakReading: peak(),
    readSeconds: (performance.now() - t0) / 1000,
  };
}

/** The same flood to a caller that reads from the start: the relay's own cost, for comparison. */
async function readingCaller({ client, allRead, peak }) {
  const t0 = performance.now();
  client.send(`flood:${FRAMES}:${FRAME_BYTES}`);
  await allRead();
  return { peakReading: peak(), readSeconds: (performance.now() - t0) / 1000 };
}

const loadBefore = loadAverage();
const started = performance.now();
const builds = [
  ...(process.env.BENCH_MAIN ? [['BENCH_MAIN build', process.env.BENCH_MAIN]] : []),
  ['this build', undefined],
];
const rows = [];
for (const [label, main] of builds) {
  const paused = await withRuntime(main, pausedCaller);
  const reading = await withRuntime(main, readingCaller);
  console.log(label, { paused, reading });
  rows.push([
    label,
    mib(paused.before),
    `${mib(paused.peakNotReading)} (container handed over ${mib(paused.handedOverBytes)} in ${paused.floodSeconds.toFixed(1)} s)`,
    `${mib(paused.peakReading)} (read in ${paused.readSeconds.toFixed(1)} s)`,
    mib(paused.after),
    `${mib(reading.peakReading)} (read in ${reading.readSeconds.toFixed(1)} s), ${mib(reading.after)} after`,
  ]);
}

const markdown = `${table(
  [
    'runtime',
    'RSS before',
    'RSS peak, caller not reading',
    'RSS peak, caller then reading it all',
    `RSS ${SETTLE_MS / 1000} s after`,
    'caller reading from the start: RSS peak',
  ],
  rows,
)}

A container (\`test-fixtures/ws-echo\`, \`flood:<frames>:<bytes>\`) sends ${FRAMES.toLocaleString('en')} binary frames of
${FRAME_BYTES.toLocaleString('en')} bytes (${mib(TOTAL)}) through \`/runtimes/{arn}/ws\` to a \`ws\` client whose socket is
paused (the container waits itself whenever 1 MiB is queued on its own socket, so what piles up is
the runtime's), until it has sent everything or can hand over nothing more for a second; then the
client reads every frame. Last column: the same flood to a caller that reads from the start, in a
runtime of its own, as the baseline of what relaying it costs. RSS is the runtime process's VmRSS
(\`node dist/main.js\`; workers are other processes), sampled every 20 ms. With back-pressure
(\`WS_BUFFER_BYTES\`, 8 MiB a direction) the runtime stops reading the container once 8 MiB wait for
the caller's socket, so the container gets no further than that and the sockets' kernel buffers
until the caller reads; without it (the BENCH_MAIN row, run against the build before it) the
runtime keeps the whole flood.
Load average ${loadBefore} at the start, ${loadAverage()} at the end. Run: \`npx tsc -b packages/runtime
&& node bench/runtime-protocols/ws-flood.mjs\` (${((performance.now() - started) / 1000).toFixed(0)} s;
\`BENCH_MAIN=<other build>/packages/runtime/dist/main.js\` adds an A/B row first).`;
writeSection(
  'runtime-ws-flood',
  'Hosting runtime (@agentrt/runtime): WebSocket flood to a caller that does not read',
  markdown,
);
console.log(markdown);
