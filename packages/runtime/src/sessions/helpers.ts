import { type ChildProcess, type IOType, spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type Writable } from 'node:stream';

/**
 * Where the programs the runtime runs on a tenant's behalf (setpriv, bwrap, nsenter, slirp4netns,
 * socat, nft, sh) are looked up: fixed system folders, never the runtime's PATH (a checkout's
 * `.node/bin` may come first there) and never a tenant's. The same folders are bound read-only into
 * every sandbox, so a path resolved here names the same program inside one.
 */
export const SECURE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The whole environment of every helper: nothing of the runtime's or of a tenant's. */
export const HELPER_ENV: Readonly<Record<string, string>> = Object.freeze({ PATH: SECURE_PATH, LANG: 'C' });

export type HelperName =
  | 'setpriv'
  | 'bwrap'
  | 'nsenter'
  | 'slirp4netns'
  | 'socat'
  | 'nft'
  | 'sh'
  | 'cat'
  | 'docker'
  | 'podman'
  | 'runsc'
  | 'mkfs.ext4'
  | 'mount'
  | 'umount';

/** The descriptor a worker's or command's environment arrives on, read by its first unprivileged shell. */
export const ENV_FD = 5;

/** The named variables of the runtime's own environment that are set (blank counts as unset). */
export function fromRuntimeEnv(names: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of names) {
    const value = process.env[name];
    if (value) env[name] = value;
  }
  return env;
}

export class HelperMissingError extends Error {
  override name = 'HelperMissingError';
}

/**
 * Whether a file or folder can be trusted to hold a program run with privileges: owned by root or
 * by the runtime's own user, and writable by nobody else.
 */
function trusted(path: string): boolean {
  const info = statSync(path, { throwIfNoEntry: false });
  if (!info) return false;
  const owner = info.uid === 0 || info.uid === process.getuid?.();
  return owner && (info.mode & 0o022) === 0;
}

const found = new Map<HelperName, string | undefined>();

/** The absolute path of a helper in SECURE_PATH, or undefined when none that can be trusted is there. */
export function helperPath(name: HelperName): string | undefined {
  if (found.has(name)) return found.get(name);
  let path: string | undefined;
  for (const dir of SECURE_PATH.split(':')) {
    const candidate = join(dir, name);
    const info = statSync(candidate, { throwIfNoEntry: false });
    if (!info?.isFile() || (info.mode & 0o111) === 0) continue;
    if (trusted(candidate) && trusted(dirname(candidate))) path = candidate;
    break; // the first one found is the one a PATH lookup would run: never skip to a later one
  }
  found.set(name, path);
  return path;
}

/** helperPath, or a HelperMissingError naming the folders searched. */
export function requireHelper(name: HelperName): string {
  const path = helperPath(name);
  if (!path)
    throw new HelperMissingError(
      `${name} is not installed in ${SECURE_PATH} (owned by root, writable by nobody else)`,
    );
  return path;
}

/**
 * A POSIX shell script that exports `env`, for the first unprivileged shell to source from
 * ENV_FD. Values are single-quoted (a quote inside becomes '\''), so nothing in them is expanded.
 * Names are checked by the control plane (`[A-Za-z_][A-Za-z0-9_]*`); one that is not is dropped.
 */
export function envScript(env: Readonly<Record<string, string>>): string {
  let script = '';
  for (const [name, value] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) continue;
    script += `export ${name}='${value.replaceAll("'", `'\\''`)}'\n`;
  }
  return script;
}

/**
 * The shell line that takes the environment from ENV_FD and closes it. Node hands a socket over
 * there, which cannot be opened by path (/dev/fd/5), only read: hence cat and eval.
 */
export function sourceEnv(): string {
  return `eval "$(${requireHelper('cat')} <&${ENV_FD})" && exec ${ENV_FD}<&-`;
}

/**
 * `argv` run by a shell that first takes the tenant's environment from ENV_FD: the last step
 * before the tenant's own program, and the only one that sees that environment.
 */
export function withTenantEnv(argv: readonly string[], name = 'agentrt-env'): string[] {
  return [requireHelper('sh'), '-c', `${sourceEnv()} && exec "$@"`, name, ...argv];
}

export interface SpawnHelperOptions {
  cwd: string;
  /** The tenant's environment: written to ENV_FD, never given to the helper itself. */
  tenantEnv: Readonly<Record<string, string>>;
  /** The helper's own environment: HELPER_ENV unless the operator's is needed (a container engine). */
  helperEnv?: Readonly<Record<string, string>> | undefined;
  /** stdin, stdout, stderr and descriptors 3 and 4; ENV_FD is added. */
  stdio: IOType[];
  detached?: boolean;
}

/**
 * Spawns a helper chain (argv[0] an absolute path) with HELPER_ENV, handing the tenant's
 * environment over on ENV_FD for the shell at the end of the chain (see withTenantEnv).
 */
export function spawnHelper(argv: readonly string[], options: SpawnHelperOptions): ChildProcess {
  const stdio: IOType[] = [...options.stdio];
  while (stdio.length < ENV_FD) stdio.push('ignore');
  stdio[ENV_FD] = 'pipe';
  const child: ChildProcess = spawn(argv[0] as string, argv.slice(1), {
    cwd: options.cwd,
    env: options.helperEnv ?? HELPER_ENV,
    detached: options.detached ?? true,
    stdio,
  });
  const envPipe = (child.stdio as unknown[])[ENV_FD] as Writable | null;
  // The shell may be gone before it read everything (a failed start): its error is the exit's.
  envPipe?.on('error', () => undefined);
  envPipe?.end(envScript(options.tenantEnv));
  return child;
}

export class HelperFailedError extends Error {
  override name = 'HelperFailedError';
  constructor(
    message: string,
    /** The helper's last words: its last stderr line, or how it failed to run. */
    readonly lastWords: string,
  ) {
    super(message);
  }
}

export interface RunHelperOptions {
  /** Written to its stdin. */
  input?: string;
  /** Killed (SIGTERM) past this; none by default. */
  timeoutMs?: number;
  /**
   * Its working folder (the runtime process's unless told). A helper may write there as root: podman's
   * conmon, for one, leaves a file `oom` in its folder when its container is OOM-killed.
   */
  cwd?: string;
}

/**
 * Runs a helper chain (argv[0] an absolute path) with HELPER_ENV and `input` on its stdin; resolves
 * with its stdout when it exits 0, else rejects with what `what` failed and the helper's own last
 * words (stderr).
 */
export function runHelper(
  argv: readonly string[],
  what: string,
  options: RunHelperOptions = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] as string, argv.slice(1), {
      env: HELPER_ENV,
      ...(options.cwd ? { cwd: options.cwd } : {}),
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      ...(options.timeoutMs ? { timeout: options.timeoutMs } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    child.stdin?.on('error', () => undefined); // it may exit before reading it all: its status says why
    child.stdin?.end(options.input);
    child.once('error', (error) => reject(new HelperFailedError(`${what}: ${error.message}`, error.message)));
    child.once('close', (code, signal) => {
      if (code === 0) return resolve(stdout);
      const words = stderr.trim().split('\n').filter(Boolean).at(-1) ?? `exited ${code ?? signal}`;
      reject(new HelperFailedError(`${what} failed (${code ?? signal}): ${stderr.trim()}`, words));
    });
  });
}
