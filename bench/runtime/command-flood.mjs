// InvokeAgentRuntimeCommand output against a caller that reads slowly: does the runtime hold the
// command's output in memory, or pause the command? A session runs `head -c <n> /dev/zero | base64`
// (BENCH_FLOOD_MB, default 1000 MB of output); a caller that reads everything as it comes is the
// baseline, a caller that reads nothing for BENCH_PAUSE_S (default 5) seconds and then everything is
// the case. The runtime's RSS is sampled from /proc all along; the peak over its RSS before the
// command is what the command cost it. BENCH_MAIN=<another build's main.js> measures that build too
// (e.g. the previous main), in the same run.
//
// Run: npx tsc -b packages/runtime && node bench/runtime/command-flood.mjs
import { request } from 'node:http';
import { memoryOf, startRuntimeProcess } from '../lib/runtime-process.mjs';
import { table, writeSection } from '../lib/report.mjs';

const FLOOD_MB = Number(process.env.BENCH_FLOOD_MB ?? 1000);
const PAUSE_S = Number(process.env.BENCH_PAUSE_S ?? 5);
const SESSION = 'bench-command-flood-session-0000000000001';
const MiB = 1024 * 1024;

/** One invoke so the session (and its sandbox) exists before any command. */
async function startSession(url, arn) {
  const res = await fetch(`${url}/runtimes/${encodeURIComponent(arn)}/invocations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-amzn-bedrock-agentcore-runtime-session-id': SESSION },
    body: '{}',
  });
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`invoke answered ${res.status}`);
}

/**
 * Runs the flood command and reads its event stream, after `pauseMs` of not reading. Samples the
 * runtime's RSS every 50 ms; resolves with the bytes read, the time and the peak RSS.
 */
function flood(url, arn, pid, pauseMs) {
  const target = new URL(`${url}/runtimes/${encodeURIComponent(arn)}/commands`);
  const body = JSON.stringify({ command: `head -c ${FLOOD_MB * MiB} /dev/zero | base64 -w 0`, timeout: 600 });
  return new Promise((resolve, reject) => {
    let peak = memoryOf(pid).rssBytes;
    const sampler = setInterval(() => (peak = Math.max(peak, memoryOf(pid).rssBytes)), 50);
    const t0 = performance.now();
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-amzn-bedrock-agentcore-runtime-session-id': SESSION,
        },
      },
      (res) => {
        let bytes = 0;
        res.pause();
        let peakWhilePaused = 0;
        setTimeout(() => {
          peakWhilePaused = peak;
          res.on('data', (c) => (bytes += c.length));
          res.resume();
        }, pauseMs);
        res.on('end', () => {
          clearInterval(sampler);
          resolve({ bytes, ms: performance.now() - t0, peak, peakWhilePaused });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function measure(label, main) {
  const runtime = await startRuntimeProcess(main ? { main } : {});
  try {
    const arn = await runtime.createRuntime(`flood_${Date.now()}`, 'echo');
    await startSession(runtime.url, arn);
    const rows = [];
    for (const [reader, pauseMs] of [
      ['reads as it comes', 0],
      [`reads nothing for ${PAUSE_S} s`, PAUSE_S * 1000],
    ]) {
      const before = memoryOf(runtime.pid).rssBytes;
      const run = await flood(runtime.url, arn, runtime.pid, pauseMs);
      await new Promise((r) => setTimeout(r, 1000));
      const after = memoryOf(runtime.pid).rssBytes;
      rows.push({ label, reader, before, ...run, after });
      console.log(label, reader, JSON.stringify({ before, peak: run.peak, after, bytes: run.bytes }));
    }
    return rows;
  } finally {
    await runtime.stop();
  }
}

const rows = [
  ...(await measure('this build')),
  ...(process.env.BENCH_MAIN
    ? await measure(process.env.BENCH_MAIN_LABEL ?? 'BENCH_MAIN', process.env.BENCH_MAIN)
    : []),
];
const baseline = rows[0];
const mb = (b) => (b / MiB).toFixed(1);
const markdown = `${table(
  [
    'runtime',
    'caller',
    'runtime RSS before',
    'peak over before',
    'peak while not reading',
    'RSS 1 s after',
    'output read',
    'throughput',
    'peak ratio to the reading caller',
  ],
  rows.map((r) => [
    r.label,
    r.reader,
    `${mb(r.before)} MiB`,
    `+${mb(r.peak - r.before)} MiB`,
    r.peakWhilePaused ? `+${mb(r.peakWhilePaused - r.before)} MiB` : '—',
    `${mb(r.after)} MiB`,
    `${mb(r.bytes)} MiB`,
    `${(r.bytes / MiB / (r.ms / 1000)).toFixed(0)} MiB/s`,
    `${((r.peak - r.before) / Math.max(1, baseline.peak - baseline.before)).toFixed(2)}×`,
  ]),
)}

One session (bwrap sandbox when the machine has it, else process group) runs \`head -c ${FLOOD_MB} MiB
/dev/zero | base64 -w 0\` through InvokeAgentRuntimeCommand; the runtime's RSS is sampled from /proc
every 50 ms. The caller that reads nothing pauses its socket: the runtime pauses the command's pipes
when the response's buffer is full (the command then blocks on its own writes), so the runtime's memory
stays flat until the caller reads. Other rows are another build (\`BENCH_MAIN\`, named by \`BENCH_MAIN_LABEL\`), measured in the same run.
Run: \`npx tsc -b packages/runtime && node bench/runtime/command-flood.mjs\`.`;
writeSection('runtime-command-flood', 'Hosting runtime: command output to a slow caller', markdown);
console.log(markdown);
