import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { type Server, connect, createServer } from 'node:net';
import { dirname, isAbsolute, join, relative } from 'node:path';
import {
  type CgroupUsage,
  type CommandCgroup,
  type SessionCgroup,
  type SessionLimits,
  createSessionCgroup,
  removeWhenEmpty,
} from './cgroups.js';
import { childrenOf } from '../telemetry/process-usage.js';
import { SLIRP_DNS, closeEgress } from './egress.js';
import { HELPER_ENV, requireHelper } from './helpers.js';
import { type Isolation, dropPrivileges, isolate } from './isolation.js';
import { SANDBOX_ID, SANDBOX_WORKER_PORT, sandboxViewArgs } from './sandbox-view.js';

/** sun_path holds 108 bytes including the terminating NUL. */
const MAX_SOCKET_PATH_BYTES = 107;

export interface SandboxPlan {
  argv: string[];
  /** The Unix socket the runtime reaches the worker through. */
  socketPath: string;
  /** The worker's PORT inside its namespace. */
  port: number;
  /** Sets up the sandbox's cgroups and network from outside once bwrap reports its pid; returns the cleanup. */
  prepare: (sandboxPid: number) => Promise<() => void>;
  /** The resource limit the session hit, if any (for the 424 message). */
  limitHit: () => string | undefined;
  /** The session cgroup's CPU and memory figures while it has one (no cgroups: undefined). */
  usage: () => CgroupUsage | undefined;
  /** A new cgroup inside the session's for one command; undefined without cgroups. */
  commandCgroup: () => CommandCgroup | undefined;
}

export interface SandboxSessionOptions {
  isolation: Isolation;
  argv: string[];
  cwd: string;
  sessionDir: string;
  /** Read-only extras: the Node install, the instrument preload. */
  readablePaths: string[];
  /** Host ports the session may reach at 127.0.0.1:<port> inside its namespace. */
  hostPorts: readonly number[];
  /** Serves the per-session telemetry relay on this Unix socket path (in the session's run dir). */
  otlpRelay?: ((socketPath: string) => Promise<() => void>) | undefined;
  /** The port of the relay inside the namespace (127.0.0.1:<port>). */
  otlpPort: number;
  storage?: { hostDir: string; mountPath: string } | undefined;
  /** Folders never shown even when inside a readable path (the data dir). */
  hiddenDirs: readonly string[];
  /** Size of the session's scratch tmpfs (/tmp and its home). */
  scratchBytes: number;
  /** The worker's id (names its cgroup) and limits. */
  workerId: string;
  limits: SessionLimits;
}

/** A host folder that belongs to the sandbox user (its writable dirs). */
function ownDir(path: string, isolation: Isolation, mode = 0o700): void {
  mkdirSync(path, { recursive: true, mode });
  chmodSync(path, mode);
  if (isolation.hostIds) chownSync(path, isolation.hostIds.uid, isolation.hostIds.gid);
}

/** Whether the mode bits let `ids` (no supplementary groups, no capabilities) do `want` (4 r, 1 x). */
function permits(path: string, ids: { uid: number; gid: number }, want: number): string | undefined {
  const info = statSync(path, { throwIfNoEntry: false });
  if (!info) return undefined; // absent: the worker's own error says so
  const bits = info.uid === ids.uid ? info.mode >> 6 : info.gid === ids.gid ? info.mode >> 3 : info.mode;
  if ((bits & want) === want) return undefined;
  const mode = (info.mode & 0o777).toString(8).padStart(4, '0');
  return `${path} (mode ${mode}, owner ${info.uid}:${info.gid})`;
}

/**
 * When the runtime is root its sandboxes run as another host user, who may not be able to read an
 * artifact a root shell created (umask 077, a checkout under /root): say so before the worker fails
 * with a bare EACCES. Only the artifact dir and the files of the command inside it are checked; the
 * folders above it are bwrap's own inside the sandbox.
 */
export function sandboxUserCannotRead(
  cwd: string,
  argv: readonly string[],
  ids: { uid: number; gid: number },
): string | undefined {
  const blocked = permits(cwd, ids, 5);
  if (blocked) return blocked;
  for (const arg of argv) {
    if (!isAbsolute(arg)) continue;
    const inside = relative(cwd, arg);
    if (inside === '' || inside.startsWith('..') || isAbsolute(inside)) continue;
    for (let dir = dirname(arg); dir !== cwd && dir.length > cwd.length; dir = dirname(dir)) {
      const deny = permits(dir, ids, 1);
      if (deny) return deny;
    }
    const deny = permits(arg, ids, 4);
    if (deny) return deny;
  }
  return undefined;
}

/** The folder of a session's storage in the session-storage folder: a hash of its id. */
export function storageHashOf(sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('hex').slice(0, 32);
}

/**
 * A folder for one session's sessionStorage on one version: stable per runtime, session id and
 * version, outside the session dir (storage-sweep.ts removes what no version kept needs).
 */
export function storageDirOf(dataDir: string, runtimeId: string, version: number, sessionId: string): string {
  return join(storageRootOf(dataDir), runtimeId, storageHashOf(sessionId), `v${version}`);
}

/** The folder of every session's storage on this host: `<data dir>/session-storage`. */
export const storageRootOf = (dataDir: string): string => join(dataDir, 'session-storage');

/**
 * Prepares a sandboxed worker: its session dir (home, tmp, the bridge dir `run`, generated /etc
 * files), the descriptors of every host path it may see, the bridges of the allowlisted host ports
 * and the telemetry relay (Unix sockets the runtime serves in `run`), and the command line.
 */
export function planSandbox(options: SandboxSessionOptions): SandboxPlan {
  const { isolation, sessionDir } = options;
  // Linux caps a Unix socket path at 107 bytes: check the longest one this session will get.
  const names = ['worker.sock', ...options.hostPorts.map((p) => `port-${p}.sock`)];
  if (options.otlpRelay) names.push(`port-${options.otlpPort}.sock`);
  const longest = Math.max(...names.map((n) => Buffer.byteLength(join(sessionDir, 'run', n))));
  if (longest > MAX_SOCKET_PATH_BYTES)
    throw new Error(
      `the session dir ${sessionDir} is too long for its Unix sockets (${longest} > ${MAX_SOCKET_PATH_BYTES} bytes): use a shorter AGENTRT_DATA_DIR`,
    );
  const ids = isolation.hostIds;
  const unreadable = ids && sandboxUserCannotRead(options.cwd, options.argv, ids);
  if (unreadable)
    throw new Error(
      `the sandbox user (host uid ${ids.uid}) cannot read the artifact: ${unreadable}. Make it readable (chmod -R o+rX <dir>), or set AGENTRT_SANDBOX_UID/AGENTRT_SANDBOX_GID to a user that can read it`,
    );
  ownDir(join(sessionDir, 'run'), isolation);
  mkdirSync(join(sessionDir, 'etc'), { recursive: true });
  const etcFiles = ['passwd', 'group'];
  writeFileSync(
    join(sessionDir, 'etc', 'passwd'),
    `agent:x:${SANDBOX_ID}:${SANDBOX_ID}:agent:${join(sessionDir, 'home')}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
  );
  writeFileSync(join(sessionDir, 'etc', 'group'), `agent:x:${SANDBOX_ID}:\nnogroup:x:65534:\n`);
  if (isolation.network === 'slirp4netns') {
    writeFileSync(join(sessionDir, 'etc', 'resolv.conf'), `nameserver ${SLIRP_DNS}\n`);
    etcFiles.push('resolv.conf');
  }
  if (options.storage) ownDir(options.storage.hostDir, isolation);
  const viewArgs = sandboxViewArgs({
    cwd: options.cwd,
    argv: options.argv,
    readablePaths: options.readablePaths,
    sessionDir,
    storage: options.storage,
    scratchBytes: options.scratchBytes,
    ptys: isolation.hostIds !== undefined,
    etcFiles,
    hiddenDirs: options.hiddenDirs,
  });
  const bridged = [...new Set([...options.hostPorts, ...(options.otlpRelay ? [options.otlpPort] : [])])];
  const argv = isolate(isolation, options.argv, {
    viewArgs,
    bridgedPorts: bridged,
    blockOnFd: true,
  });
  const runDir = join(sessionDir, 'run');

  let cgroup: SessionCgroup | undefined;
  let lastLimitHit: string | undefined;
  const prepare = async (sandboxPid: number): Promise<() => void> => {
    const cleanups: (() => void)[] = [];
    const cleanup = () => {
      for (const fn of cleanups.splice(0)) fn();
    };
    try {
      if (isolation.cgroups) {
        const group = createSessionCgroup(isolation.cgroups, options.workerId, options.limits);
        cgroup = group;
        cleanups.push(() => {
          lastLimitHit = group.limitHit();
          cgroup = undefined;
          removeWhenEmpty(group);
        });
        // Before the worker runs (bwrap waits on fd 4): everything it forks is counted.
        group.add(sandboxPid);
      }
      for (const port of options.hostPorts) {
        if (options.otlpRelay && port === options.otlpPort) continue;
        const server = await bridgeToHostPort(join(runDir, `port-${port}.sock`), port);
        cleanups.push(() => server.close());
      }
      if (options.otlpRelay)
        cleanups.push(await options.otlpRelay(join(runDir, `port-${options.otlpPort}.sock`)));
      if (isolation.network === 'slirp4netns') {
        await closeEgress(sandboxPid);
        cleanups.push(await startSlirp(sandboxPid, isolation));
      }
    } catch (error) {
      cleanup();
      throw error;
    }
    return cleanup;
  };
  return {
    argv,
    socketPath: join(runDir, 'worker.sock'),
    port: SANDBOX_WORKER_PORT,
    prepare,
    limitHit: () => cgroup?.limitHit() ?? lastLimitHit,
    usage: () => cgroup?.usage(),
    commandCgroup: () => cgroup?.child(`cmd-${randomUUID()}`),
  };
}

/** A Unix socket (writable by the sandbox user) whose connections the runtime pipes to 127.0.0.1:<port>. */
export function bridgeToHostPort(socketPath: string, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((inbound) => {
      const outbound = connect(port, '127.0.0.1');
      inbound.pipe(outbound).pipe(inbound);
      inbound.on('error', () => outbound.destroy());
      outbound.on('error', () => inbound.destroy());
    });
    server.once('error', reject);
    server.listen(socketPath, () => {
      chmodSync(socketPath, 0o666); // the sandbox user connects; only the sandbox sees this folder
      resolve(server);
    });
  });
}

/**
 * Connects the sandbox's network namespace to the outside through slirp4netns (user-mode TCP/IP):
 * a tap device with 10.0.2.100, DNS at 10.0.2.3, and the host's loopback closed
 * (--disable-host-loopback); the namespace's egress rules (closeEgress, loaded first) close the
 * host's other addresses, private and link-local networks. Resolves once it is up.
 */
function startSlirp(sandboxPid: number, isolation: Isolation): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const argv = [
      ...dropPrivileges(undefined, isolation.pdeathsig),
      requireHelper('slirp4netns'),
      '--configure',
      '--mtu=65520',
      '--disable-host-loopback',
      '--ready-fd=3',
      '--netns-type=path',
      `/proc/${sandboxPid}/ns/net`,
      'tap0',
    ];
    const child = spawn(argv[0] as string, argv.slice(1), {
      env: HELPER_ENV,
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    const stop = () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    };
    child.stdio[3]?.once('data', () => resolve(stop));
    child.once('error', (error) => reject(new Error(`slirp4netns did not start: ${error.message}`)));
    child.once('exit', (code) => reject(new Error(`slirp4netns exited with ${code}: ${stderr.trim()}`)));
  });
}

/** The run dir's parent is the session dir: after the worker is ready it may no longer add entries. */
export function sealRunDir(sessionDir: string, isolation: Isolation): void {
  if (!isolation.hostIds) return; // same host uid as the sandbox: the socket is checked per connection
  const runDir = join(sessionDir, 'run');
  chownSync(runDir, process.getuid?.() ?? 0, process.getgid?.() ?? 0);
  chmodSync(runDir, 0o755);
}

/** Sends `signal` to each of the processes; one already gone is skipped. */
function signalAll(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

/**
 * Lets a sandboxed worker end on its own before its sandbox goes: SIGTERM to the worker alone (the
 * child of the sandbox's first process), SIGKILL if it has not ended within `graceMs`; resolves once
 * the sandbox has exited with it (or after the grace). Signalling the group at once would end bwrap
 * (and so, dying with it, the whole sandbox) and the bridge to the telemetry relay together with the
 * worker, while the worker still flushes its spans through it.
 */
export async function stopSandboxWorker(
  sandboxPid: number | undefined,
  graceMs: number,
  exitedWithin: (ms: number) => Promise<boolean>,
): Promise<void> {
  if (sandboxPid === undefined) return;
  const workers = childrenOf(sandboxPid);
  signalAll(workers, 'SIGTERM');
  if (!(await exitedWithin(graceMs))) signalAll(workers, 'SIGKILL');
}
