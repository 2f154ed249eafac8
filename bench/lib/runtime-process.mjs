// The hosting runtime as a child process (`node packages/runtime/dist/main.js`, or another build's
// main.js for A/B runs), for benchmarks that measure the runtime process itself: its memory comes
// from /proc, apart from the benchmark's own clients and the session workers.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const RUNTIME_MAIN = join(repo, 'packages', 'runtime', 'dist', 'main.js');
export const RUNTIME_FIXTURES = join(repo, 'packages', 'runtime', 'test-fixtures');

/** A process's resident memory now (VmRSS) and at its peak so far (VmHWM), in bytes. */
export function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)[1]) * 1024;
  return { rssBytes: kib('VmRSS'), peakRssBytes: kib('VmHWM') };
}

/**
 * Starts `main` with its own data dir on a free port (`env` adds AGENTRT_* settings) and waits for
 * it to listen. Returns its URL and pid, `createRuntime(name, fixture)` (a READY runtime's ARN) and
 * `stop()`.
 */
export async function startRuntimeProcess({ main = RUNTIME_MAIN, env = {} } = {}) {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'agentrt-bench-runtime-'));
  const child = spawn(process.execPath, [main], {
    env: {
      PATH: process.env.PATH,
      HOME: dataDir,
      AGENTRT_RUNTIME_PORT: '0',
      AGENTRT_DATA_DIR: dataDir,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (c) => (output += c.toString('utf8')));
  const deadline = Date.now() + 20_000;
  // Its info line says where it listens (so AGENTRT_LOG_LEVEL must leave info on).
  while (!output.includes('"runtime listening"')) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`runtime did not start: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  child.stdout.removeAllListeners('data').resume(); // its later log lines are not kept
  const { url } = JSON.parse(output.split('\n').find((l) => l.includes('"runtime listening"')));
  const control = async (method, path, body) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const answer = await res.json();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(answer)}`);
    return answer;
  };
  return {
    url,
    pid: child.pid,
    async createRuntime(name, fixture) {
      const created = await control('PUT', '/runtimes/', {
        agentRuntimeName: name,
        agentRuntimeArtifact: {
          containerConfiguration: { containerUri: pathToFileURL(join(RUNTIME_FIXTURES, fixture)).href },
        },
        roleArn: 'arn:aws:iam::123456789012:role/Bench',
      });
      for (;;) {
        const got = await control('GET', `/runtimes/${created.agentRuntimeId}/`);
        if (got.status === 'READY') return got.agentRuntimeArn;
        if (got.status.endsWith('FAILED')) throw new Error(got.failureReason);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
