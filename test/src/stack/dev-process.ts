import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { repoRoot } from './repo.js';

export const CLI_BIN = join(repoRoot, 'packages/cli/dist/bin.js');

/** `agentrt ...` from dist as a real child process, with its output collected. */
export interface CliProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (null + signal when killed). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once the output matches, rejects when the process exits first or the time is up. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<void>;
}

export function startCli(args: string[], env: NodeJS.ProcessEnv): CliProcess {
  const child = spawn(process.execPath, [CLI_BIN, ...args], {
    cwd: repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => output,
    exited,
    waitFor(pattern, timeoutMs) {
      return new Promise<void>((resolve, reject) => {
        const done = (error?: Error) => {
          listeners.delete(check);
          clearTimeout(timer);
          if (error) reject(error);
          else resolve();
        };
        const check = () => {
          if (pattern.test(output)) done();
        };
        const timer = setTimeout(
          () => done(new Error(`no ${pattern} after ${timeoutMs} ms; output:\n${output}`)),
          timeoutMs,
        );
        listeners.add(check);
        void exited.then(({ code, signal }) => {
          if (!pattern.test(output))
            done(new Error(`exited (${code ?? signal}) before ${pattern}; output:\n${output}`));
        });
        check();
      });
    },
  };
}

/**
 * Pids of live processes whose environment or command line contains any of `needles` (how the
 * children, grandchildren and session workers of one run are found, even after they were reparented).
 */
export async function processesMentioning(needles: readonly string[]): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const environ = await readFile(`/proc/${entry}/environ`, 'utf8').catch(() => '');
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (!needles.some((n) => environ.includes(n) || cmdline.includes(n))) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // Zombies (state Z) are already dead and only wait for their parent to reap them.
    if (/^\d+ \(.*\) Z /.test(stat)) continue;
    found.push(Number(entry));
  }
  return found;
}

export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}
