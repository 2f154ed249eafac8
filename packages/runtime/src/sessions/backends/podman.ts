import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type RuntimeConfig } from '../../config.js';
import { type SessionBackend, type WorkerRequest, sessionStorageMount } from '../backend.js';
import { engineCommand } from '../container-engine.js';
import { closeEgress, hostAddresses } from '../egress.js';
import { HELPER_ENV, helperPath, requireHelper } from '../helpers.js';
import { tenantServiceName } from '../otlp-relay.js';
import { storageDirOf } from '../sandbox-session.js';
import { mountStorageVolume } from '../storage-volume.js';
import { freePort, spawnWorker } from '../worker.js';
import { RELAY_PORT, isRelayed, relayFor } from './bwrap.js';

/** The user a session's container runs as, whatever its image says (root inside is never used). */
const CONTAINER_USER = '65534:65534';
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

/**
 * Image artifacts on podman (rootful), one container per session, with what the bwrap sandbox
 * guarantees: user 65534, no capabilities, no-new-privileges, a read-only root, a sized tmpfs
 * /tmp, memory / pids / CPU limits, egress rules in its network namespace before it starts, its
 * session relay (bridged into that namespace at 127.0.0.1:4318) as the only telemetry path, and its
 * storage volume. `AGENTRT_OCI_RUNTIME=runsc` runs it on gVisor.
 */
export function createPodmanBackend({ config, hostIds }: PodmanBackendOptions): SessionBackend {
  const label = podmanLabel(config.dataDir);
  const podman = (args: string[]) => engineCommand('podman', args);
  const ociRuntime = ociRuntimeArgs(config.ociRuntime);

  const createArgs = (
    request: WorkerRequest,
    port: number,
    env: Record<string, string>,
    storage: string[],
  ) => {
    const { id, sessionDir, launch } = request;
    const memoryMb = `${config.sessionMemoryMb}m`;
    return [
      'create',
      ...['--rm', '--init', '--name', `agentrt-${id}`, '--label', label, '--user', CONTAINER_USER],
      ...['--cap-drop=all', '--security-opt', 'no-new-privileges', '--read-only'],
      ...['--tmpfs', `/tmp:rw,size=${config.sessionDiskMb}m,mode=1777`],
      ...['--memory', memoryMb, '--memory-swap', memoryMb, '--pids-limit', String(config.sessionPids)],
      ...['--cpus', String(config.sessionVcpus)],
      // No CAP_SYS_RESOURCE here: the limits are given, else runc fails to set them.
      ...['--ulimit', 'nofile=1024:1024', '--ulimit', `nproc=${config.sessionPids}:${config.sessionPids}`],
      ...['-p', `127.0.0.1:${port}:${CONTAINER_PORT}`],
      ...ociRuntime,
      ...storage,
      ...envArgs(env, join(sessionDir, 'container.env')),
      launch.kind === 'image' ? launch.image : '',
    ];
  };

  /** The session's relay, bridged into the container's namespace at 127.0.0.1:4318 (socat, as root). */
  const bridgeRelay = async (
    relay: (socketPath: string) => Promise<() => void>,
    sessionDir: string,
    pid: number,
  ) => {
    const socketPath = join(sessionDir, 'run', 'otlp.sock');
    mkdirSync(join(sessionDir, 'run'), { recursive: true, mode: 0o700 });
    const closeRelay = await relay(socketPath);
    const socat: ChildProcess = spawn(
      requireHelper('nsenter'),
      [
        `--net=/proc/${pid}/ns/net`,
        '--',
        requireHelper('socat'),
        '-lf',
        '/dev/null',
        `TCP-LISTEN:${RELAY_PORT},bind=127.0.0.1,fork,reuseaddr`,
        `UNIX-CONNECT:${socketPath}`,
      ],
      { env: HELPER_ENV, stdio: 'ignore' },
    );
    return () => {
      socat.kill('SIGKILL');
      closeRelay();
    };
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
      const env: Record<string, string> = {
        ...request.env(CONTAINER_PORT, relayed),
        HOME: '/tmp',
        TMPDIR: '/tmp',
      };
      delete env.PATH; // the image's own
      const serviceName = tenantServiceName(env.OTEL_SERVICE_NAME, target.runtime.name);
      env.OTEL_SERVICE_NAME = serviceName;
      const mountPath = sessionStorageMount(target);
      const cleanups: (() => void)[] = [];
      const cleanup = () => {
        for (const fn of cleanups.splice(0).reverse()) fn();
        void podman(['rm', '-f', name]).catch(() => undefined);
      };
      try {
        const storage: string[] = [];
        if (mountPath && sessionId) {
          const dir = storageDirOf(config.dataDir, target.runtime.id, sessionId);
          cleanups.push(await mountStorageVolume(dir, config.sessionStorageMb * 1024 * 1024, hostIds));
          storage.push('-v', `${dir}:${mountPath}:rw,nosuid,nodev`);
        }
        const port = await freePort();
        await podman(createArgs(request, port, env, storage));
        await podman(['container', 'init', name]);
        const pid = Number((await podman(['inspect', '--format', '{{.State.Pid}}', name])).trim());
        await closeEgress(pid, hostAddresses(), await dnsOf(name));
        const relay = relayFor(request, config, serviceName);
        if (relay) cleanups.push(await bridgeRelay(relay, sessionDir, pid));
        const worker = spawnWorker({
          id,
          argv: [requireHelper('podman'), 'start', '--attach', name],
          cwd: sessionDir,
          env: {},
          port,
          healthCheck,
          logger,
          // The container outlives a signalled `podman start`: stop it, then its client ends.
          stopWith: (graceMs) =>
            podman(['stop', '--time', String(Math.ceil(graceMs / 1000)), name]).then(() => undefined),
        });
        worker.onExit(cleanup);
        const exec = (argv: string[]) => ({
          argv: [
            requireHelper('podman'),
            'exec',
            '-i',
            '--user',
            CONTAINER_USER,
            ...envArgs(env, join(sessionDir, 'exec.env')),
            name,
            ...argv,
          ],
          cwd: sessionDir,
          env: {},
          cgroup: undefined,
        });
        return { worker, exec };
      } catch (error) {
        cleanup();
        throw error;
      }
    },
  };
}
