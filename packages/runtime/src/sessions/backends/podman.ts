import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type RuntimeConfig } from '../../config.js';
import {
  type CommandSpawn,
  type SessionBackend,
  type WorkerRequest,
  sessionStorageMount,
} from '../backend.js';
import { type CgroupLayout, type SessionLimits } from '../cgroups.js';
import { containerCgroup } from './container-cgroup.js';
import { createCommandReaper } from './container-commands.js';
import { engineCommand } from '../container-engine.js';
import { containerEnv } from '../container-env.js';
import { closeEgress, hostAddresses } from '../egress.js';
import { HELPER_ENV, helperPath, requireHelper } from '../helpers.js';
import { bridgeToHostPort, storageDirOf } from '../sandbox-session.js';
import { mountStorageVolume } from '../storage-volume.js';
import { freePort } from '@agentrt/kit';
import { spawnWorker } from '../worker.js';
import { RELAY_PORT, isRelayed, relayFor } from './bwrap.js';

/** The user a session's container runs as, whatever its image says (root inside is never used). */
const CONTAINER_USER = '65534:65534';
/**
 * RLIMIT_NPROC of a session container: the runtime's own hard limit, capped at 32768 (conmon, which
 * starts the container, runs under that cap here and runc cannot raise it without CAP_SYS_RESOURCE).
 */
const CONTAINER_NPROC = ((): number => {
  const line = /^Max processes\s+\S+\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  const own = !line || line[1] === 'unlimited' ? Infinity : Number(line[1]);
  return Math.min(own, 32_768);
})();
/** Host threads of gVisor's Sentry and gofer, beside a runsc session's own processes (measured: > 32). */
const SENTRY_THREADS = 256;
/** Tries at publishing a session container on a loopback port another process took meanwhile. */
const PORT_ATTEMPTS = 3;
/** The port an agent's container listens on (the container contract). */
const CONTAINER_PORT = 8080;

/** The label of every session container a runtime with this data dir makes (its orphans are found by it). */
export function podmanLabel(dataDir: string): string {
  return `agentrt.data=${createHash('sha256').update(dataDir).digest('hex').slice(0, 16)}`;
}

export interface PodmanBackendOptions {
  config: Readonly<RuntimeConfig>;
  /** The sandbox's host ids of a root runtime (owner of the storage volume). */
  hostIds: { uid: number; gid: number };
  /** Where session cgroups go (each container nests in its session's); undefined: podman's limits. */
  cgroups: CgroupLayout | undefined;
}

/** Where the runsc wrapper lives: root's, and as long-lived as the containers that name it. */
const OCI_WRAPPER_DIR = '/var/lib/agentrt/oci';

/**
 * `runsc` (gVisor: its own user-space kernel) on the ptrace platform, its netstack handing over to
 * podman's network namespace (from the root namespace it refuses to start). podman passes
 * `--runtime-flag`s to `runsc create` but not to `runsc start`, so the flags live in a wrapper named
 * as the OCI runtime. podman needs that path for as long as a container names it (removing one
 * included), so it is a fixed one of root's, not a data dir that may go first.
 */
function ociRuntimeArgs(runtime: 'runc' | 'runsc'): string[] {
  if (runtime === 'runc') return [];
  const wrapper = join(OCI_WRAPPER_DIR, 'runsc-agentrt');
  mkdirSync(OCI_WRAPPER_DIR, { recursive: true, mode: 0o755 });
  const script = `#!/bin/sh\nexec ${requireHelper('runsc')} --platform=ptrace --network=host "$@"\n`;
  writeFileSync(wrapper, script, { mode: 0o755 });
  chmodSync(wrapper, 0o755);
  return ['--runtime', wrapper];
}

/** The container's environment as an --env-file (kept off the command line); multi-line values as -e. */
function envArgs(env: Record<string, string>, file: string): string[] {
  const lines: string[] = [];
  const inline: string[] = [];
  for (const [name, value] of Object.entries(env))
    if (value.includes('\n')) inline.push('-e', `${name}=${value}`);
    else lines.push(`${name}=${value}`);
  writeFileSync(file, `${lines.join('\n')}\n`, { mode: 0o600 });
  return ['--env-file', file, ...inline];
}

/** `podman exec` of a command in a session's container, as the container's user, with its environment. */
function execIn(name: string, env: Record<string, string>, sessionDir: string, argv: string[]): CommandSpawn {
  const envFile = join(sessionDir, 'exec.env');
  return {
    argv: [
      requireHelper('podman'),
      'exec',
      '-i',
      '--user',
      CONTAINER_USER,
      ...envArgs(env, envFile),
      name,
      ...argv,
    ],
    cwd: sessionDir,
    env: {},
    cgroup: undefined,
  };
}

/**
 * Image artifacts on podman (rootful), one container per session, with what the bwrap sandbox
 * guarantees: user 65534, no capabilities, no-new-privileges, a read-only root, a sized tmpfs
 * /tmp, memory / pids / CPU limits, egress rules in its network namespace before it starts, its
 * session relay (bridged into that namespace at 127.0.0.1:4318) as the only telemetry path, and its
 * storage volume. `AGENTRT_OCI_RUNTIME=runsc` runs it on gVisor.
 */
export function createPodmanBackend({ config, hostIds, cgroups }: PodmanBackendOptions): SessionBackend {
  const label = podmanLabel(config.dataDir);
  // In a folder of the runtime's, never the one it was started in (the user's project, say): a
  // session's conmon runs in its session's folder (createOnFreePort), the rest in the data dir.
  const podman = (args: string[], cwd = config.dataDir) => engineCommand('podman', args, { cwd });
  const ociRuntime = ociRuntimeArgs(config.ociRuntime);

  const createArgs = (request: WorkerRequest, port: number, env: Record<string, string>, extra: string[]) => {
    const { id, sessionDir, launch } = request;
    return [
      'create',
      ...['--rm', '--init', '--name', `agentrt-${id}`, '--label', label, '--user', CONTAINER_USER],
      ...['--cap-drop=all', '--security-opt', 'no-new-privileges', '--read-only'],
      ...['--tmpfs', `/tmp:rw,size=${config.sessionDiskMb}m,mode=1777`],
      ...rlimits(),
      ...['-p', `127.0.0.1:${port}:${CONTAINER_PORT}`],
      ...ociRuntime,
      ...extra,
      ...envArgs(env, join(sessionDir, 'container.env')),
      launch.kind === 'image' ? launch.image : '',
    ];
  };

  /**
   * The session's limits. No CAP_SYS_RESOURCE here: rlimits are given, else runc fails to set them.
   * On runc, RLIMIT_NPROC counts every process of the uid on the host (each session's is 65534) — a
   * per-session value would let one session use up every other's — so the bound is the pids cgroup.
   * gVisor counts the session's processes in its own kernel (RLIMIT_NPROC per sandbox), and the
   * host's pids cgroup also holds the Sentry's threads, so that one gets headroom.
   */
  const runsc = config.ociRuntime === 'runsc';
  const rlimits = (): string[] => {
    const nproc = runsc ? config.sessionPids : CONTAINER_NPROC;
    return ['--ulimit', 'nofile=1024:1024', '--ulimit', `nproc=${nproc}:${nproc}`];
  };
  const limits: SessionLimits = {
    memoryBytes: config.sessionMemoryMb * 1024 * 1024,
    vcpus: config.sessionVcpus,
    // Under gVisor's ptrace platform a guest process costs the host several tasks (measured: 64 guest
    // processes died at a host limit of 384, ran at 768); the session's own bound is its RLIMIT_NPROC.
    pids: runsc ? 8 * config.sessionPids + SENTRY_THREADS : config.sessionPids,
  };
  /** The same limits set by podman, for a runtime without cgroups of its own. */
  const podmanLimits = [
    ...['--memory', `${config.sessionMemoryMb}m`, '--memory-swap', `${config.sessionMemoryMb}m`],
    ...['--pids-limit', String(limits.pids), '--cpus', String(config.sessionVcpus)],
  ];

  /**
   * A port of the container's own loopback (127.0.0.1:<port>) whose connections reach what `serve`
   * serves on a Unix socket in the session's run dir: socat in its network namespace (as root).
   */
  const bridgeInto = async (
    pid: number,
    sessionDir: string,
    port: number,
    serve: (socketPath: string) => Promise<() => void>,
  ) => {
    const socketPath = join(sessionDir, 'run', `port-${port}.sock`);
    mkdirSync(join(sessionDir, 'run'), { recursive: true, mode: 0o700 });
    const close = await serve(socketPath);
    const socat: ChildProcess = spawn(
      requireHelper('nsenter'),
      [
        `--net=/proc/${pid}/ns/net`,
        '--',
        requireHelper('socat'),
        '-lf',
        '/dev/null',
        `TCP-LISTEN:${port},bind=127.0.0.1,fork,reuseaddr`,
        `UNIX-CONNECT:${socketPath}`,
      ],
      { env: HELPER_ENV, stdio: 'ignore' },
    );
    return () => {
      socat.kill('SIGKILL');
      close();
    };
  };

  /** The session's relay at 127.0.0.1:4318, and the allowlisted host ports at their own numbers. */
  const bridges = async (request: WorkerRequest, serviceName: string, pid: number) => {
    const closers: (() => void)[] = [];
    const relay = relayFor(request, config, serviceName);
    if (relay) closers.push(await bridgeInto(pid, request.sessionDir, RELAY_PORT, relay));
    for (const port of config.sandboxHostPorts.filter((p) => p !== RELAY_PORT || !relay))
      closers.push(
        await bridgeInto(pid, request.sessionDir, port, async (socketPath) => {
          const server = await bridgeToHostPort(socketPath, port);
          return () => server.close();
        }),
      );
    return () => closers.forEach((close) => close());
  };

  /**
   * Creates and initializes the container published on a free loopback port. Another process may
   * take the port between the pick and podman's bind (a burst of sessions picks many at once):
   * then the container is made again on another one.
   */
  const createOnFreePort = async (
    name: string,
    sessionDir: string,
    args: (port: number) => string[],
  ): Promise<number> => {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      try {
        await podman(args(port));
        await podman(['container', 'init', name], sessionDir); // starts its conmon
        return port;
      } catch (error) {
        if (attempt >= PORT_ATTEMPTS || !/address already in use/.test((error as Error).message)) throw error;
        await podman(['rm', '-f', name]).catch(() => undefined);
      }
    }
  };

  /** The nameservers the container was given: the one private address its egress rules keep open. */
  const dnsOf = async (name: string): Promise<string[]> => {
    const path = (await podman(['inspect', '--format', '{{.ResolvConfPath}}', name])).trim();
    const text = readFileSync(path, 'utf8');
    return [...text.matchAll(/^nameserver\s+(\S+)/gm)].map((m) => m[1] as string);
  };

  return {
    name: 'podman',
    async sweep() {
      if (!helperPath('podman')) return;
      const left = (await podman(['ps', '-a', '-q', '--filter', `label=${label}`]))
        .trim()
        .split('\n')
        .filter(Boolean);
      if (left.length > 0) await podman(['rm', '-f', ...left]).catch(() => undefined);
    },
    async start(request) {
      const { id, target, sessionId, sessionDir, healthCheck, logger } = request;
      const name = `agentrt-${id}`;
      const relayed = isRelayed(request, config);
      const env = containerEnv(request.env(CONTAINER_PORT, relayed), target.runtime.name);
      const serviceName = env.OTEL_SERVICE_NAME ?? target.runtime.name;
      const mountPath = sessionStorageMount(target);
      const cleanups: (() => void)[] = [];
      const group = containerCgroup(cgroups, id, limits, podmanLimits);
      const cleanup = () => {
        group.settle();
        for (const fn of cleanups.splice(0).reverse()) fn();
        void podman(['rm', '-f', name])
          .catch(() => undefined)
          .finally(() => group.release());
      };
      try {
        const storage: string[] = [];
        if (mountPath && sessionId) {
          const dir = storageDirOf(config.dataDir, target.runtime.id, target.version.version, sessionId);
          cleanups.push(await mountStorageVolume(dir, config.sessionStorageMb * 1024 * 1024, hostIds));
          storage.push('-v', `${dir}:${mountPath}:rw,nosuid,nodev`);
        }
        const port = await createOnFreePort(name, sessionDir, (p) =>
          createArgs(request, p, env, [...group.args, ...storage]),
        );
        const pid = Number((await podman(['inspect', '--format', '{{.State.Pid}}', name])).trim());
        await closeEgress(pid, hostAddresses(), await dnsOf(name));
        cleanups.push(await bridges(request, serviceName, pid));
        const worker = spawnWorker({
          id,
          argv: [requireHelper('podman'), 'start', '--attach', name],
          cwd: sessionDir,
          env: {},
          port,
          healthCheck,
          logger,
          limitHit: () => group.limitHit(),
          usage: () => group.usage(),
          // The container outlives a signalled `podman start`: stop it, then its client ends.
          stopWith: (graceMs) =>
            podman(['stop', '--time', String(Math.ceil(graceMs / 1000)), name]).then(() => undefined),
        });
        worker.onExit(cleanup);
        // gVisor's processes are the Sentry's own on the host: there is nothing to reap from outside.
        const reaper = group.procsDir && !runsc ? createCommandReaper(group.procsDir, pid) : undefined;
        const exec = (argv: string[]) => ({ ...execIn(name, env, sessionDir, argv), cgroup: reaper?.() });
        return { worker, exec };
      } catch (error) {
        cleanup();
        throw error;
      }
    },
  };
}
