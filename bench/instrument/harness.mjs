// What every part of bench/instrument/index.mjs shares: child processes that print a ready line,
// their CPU time, the autocannon load on the contract server, the OTLP sink, and table cells.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const here = dirname(fileURLToPath(import.meta.url));
export const root = join(here, '..', '..');
const require = createRequire(import.meta.url);
export const autocannon = require('autocannon');

/** The READY line of the bench's own apps: its JSON payload. */
const readyLine = (out) => {
  const m = /READY (\{.*\})/.exec(out);
  return m ? JSON.parse(m[1]) : undefined;
};

const baseEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_') && k !== 'NODE_OPTIONS'),
);

/**
 * Spawns node with `args` + `script`; resolves with ms to the line `ready` recognises (default:
 * `READY {json}`) and what it returned.
 */
export function runUntilReady(args, script, env, { keep = false, ready = readyLine } = {}) {
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

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** CPU time (user + system) the process has used, in ms, from /proc (Linux). */
export { cpuMsOf as cpuMs } from '../lib/proc.mjs';

/** A workload's server under variant `v` (node flags `extraArgs` first), kept running. */
export function startServer(workload, v, extraArgs = []) {
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
export function invocationLoad(workload, port, connections) {
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
 * An OTLP sink, so exporters have somewhere real to send to: in a process of its own, as a collector
 * is (in this process it would take the load generator's event-loop time whenever an instrumented
 * variant exports, and charge that to the variant). `stats()`: requests and bytes it received since
 * the last call, in all and per endpoint prefix.
 */
export async function startSink() {
  const { child, port } = await runUntilReady([], join(here, 'otlp-sink.mjs'), {}, { keep: true });
  const url = `http://127.0.0.1:${port}`;
  process.once('exit', () => child.kill());
  async function stats() {
    const res = await fetch(`${url}/stats`);
    return /** @type {{ requests: number, bytes: number, byPrefix: Record<string, { bytes: number }> }} */ (
      await res.json()
    );
  }
  return { url, stats, stop: () => child.kill() };
}

/** The columns both throughput tables end with, and their cells. */
export const TAIL_COLUMNS = ['OTLP bytes/request', 'p50 ms', 'p99 ms', 'errors'];
export const tailCells = (t) => [t.otlpBytesPerReq.toFixed(0), t.p50, t.p99, t.errors];
export const pct = (x) => `${x.toFixed(1)}%`;
