// What the test kubelet serves of a running container (the kubelet API the API server proxies
// pods/log and pods/exec to): the container's output kept (its last LOG_BYTES) and followed, and
// a command run in the container's sandbox with its streams wired to the exec channel.
import { type Writable } from 'node:stream';
import { type StartedWorker } from '../../sessions/backend.js';
import { spawnHelper } from '../../sessions/helpers.js';
import { type ExecOptions, type LogOptions } from './pod-runtime.js';

/** How much of a container's output a pod's log keeps. */
const LOG_BYTES = 1024 * 1024;

/** A container's output (both streams) and the pods/log calls following it. */
export class ContainerLog {
  private text = '';
  private readonly followers = new Set<Writable>();
  /** The container ended: followers are ended, none is added. */
  private ended = false;

  write(text: string): void {
    this.text = (this.text + text).slice(-LOG_BYTES);
    for (const out of this.followers) out.write(text);
  }

  end(): void {
    this.ended = true;
    for (const out of this.followers) out.end();
  }

  /** Writes the log (its last `tailLines`) to `out`; follow: then each write, until the container ends. */
  serve(options: LogOptions, out: Writable): void {
    let lines = this.text.split('\n');
    if (options.tailLines !== undefined) lines = lines.slice(-options.tailLines - 1);
    const text = lines.join('\n');
    if (!options.follow || this.ended) return void out.end(text);
    out.write(text);
    this.followers.add(out);
    out.once('close', () => this.followers.delete(out));
  }
}

/** Runs `options.command` in the started container's sandbox; resolves with its exit code. */
export function execIn(started: StartedWorker, options: ExecOptions): Promise<number> {
  const spawn = started.exec(options.command);
  if (!spawn) throw new Error('no container');
  const child = spawnHelper(spawn.argv, {
    cwd: spawn.cwd,
    tenantEnv: spawn.env,
    stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  if (options.stdin && child.stdin) options.stdin.pipe(child.stdin);
  child.stdout?.pipe(options.stdout);
  child.stderr?.pipe(options.stderr);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve(code ?? (signal ? 128 + 9 : 1)));
  });
}
