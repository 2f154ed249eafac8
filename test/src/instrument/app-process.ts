/** Spawns a fixture app as a real child process and waits for its "READY <port>" line. */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
/** The test workspace: `@agentrt/instrument` resolves from here to the built dist/. */
export const TEST_ROOT = join(FIXTURES, '..', '..', '..');

export interface AppProcess {
  child: ChildProcess;
  port: number;
  stdout(): string;
  stderr(): string;
  /** Resolves with how the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(): Promise<void>;
}

/** Env for the child: the parent's PATH etc., none of the parent's OTEL_* settings. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('OTEL_') && !k.startsWith('AGENTRT_') && k !== 'NODE_OPTIONS') env[k] = v;
  }
  return { ...env, OTEL_METRICS_EXPORTER: 'none', ...extra };
}

const running = new Set<AppProcess>();

/** Starts `args` (after node itself) with `env`; rejects if no READY line arrives in time. */
export async function spawnApp(
  args: string[],
  env: Record<string, string>,
  { command = process.execPath, readyTimeoutMs = 20_000 } = {},
): Promise<AppProcess> {
  const child = spawn(command, args, { cwd: TEST_ROOT, env: childEnv(env), stdio: 'pipe' });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`app not ready: ${out}\n${err}`)), readyTimeoutMs);
    const check = () => {
      const m = /READY (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on('data', check);
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`app exited (${code ?? signal}) before ready:\n${out}\n${err}`));
    });
  });
  const app: AppProcess = {
    child,
    port,
    stdout: () => out,
    stderr: () => err,
    exited,
    async kill() {
      running.delete(app);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
  running.add(app);
  return app;
}

/** Kills every app still running (afterEach). */
export async function killAllApps(): Promise<void> {
  await Promise.all([...running].map((a) => a.kill()));
}

/** A downstream HTTP server that records the headers of each request it gets. */
export async function startHeaderRecorder(): Promise<{
  url: string;
  requests: IncomingHttpHeaders[];
  close(): Promise<void>;
}> {
  const requests: IncomingHttpHeaders[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(req.headers);
    res.end('ok');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/downstream`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
