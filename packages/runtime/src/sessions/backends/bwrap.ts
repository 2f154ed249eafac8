import { dirname } from 'node:path';
import { type RuntimeConfig } from '../../config.js';
import { notFound } from '../../errors.js';
import { type SessionBackend, type WorkerRequest, sessionStorageMount } from '../backend.js';
import { joinCgroupArgv } from '../cgroups.js';
import { type Isolation, enterSandbox } from '../isolation.js';
import { createOtlpRelay, tenantServiceName } from '../otlp-relay.js';
import {
  type SandboxPlan,
  planSandbox,
  sealRunDir,
  stopSandboxWorker,
  storageDirOf,
} from '../sandbox-session.js';
import { dependencyPaths } from '../sandbox-view.js';
import { mountStorageVolume } from '../storage-volume.js';
import { spawnWorker } from '../worker.js';

/** Where a sandboxed worker's OTLP exporter points inside its namespace (the per-session relay). */
export const RELAY_PORT = 4318;

export interface BwrapBackendOptions {
  config: Readonly<RuntimeConfig>;
  isolation: Isolation;
  /** The @agentrt/instrument preload workers get, once resolved (its folders must be visible). */
  instrumentPath: () => string | undefined;
}

/** Whether a session's telemetry goes through its relay: the runtime exports, the agent sends none elsewhere. */
export function isRelayed({ target }: WorkerRequest, config: Readonly<RuntimeConfig>): boolean {
  return (
    Boolean(config.otlpEndpoint) && !target.version.config.environmentVariables?.OTEL_EXPORTER_OTLP_ENDPOINT
  );
}

/**
 * The per-session telemetry relay's factory when the session's telemetry is relayed: the runtime
 * exports telemetry and the agent does not send its own elsewhere. Shared by the sandboxing backends.
 */
export function relayFor(request: WorkerRequest, config: Readonly<RuntimeConfig>, serviceName: string) {
  const { target, logger, servedSession } = request;
  const upstream = config.otlpEndpoint;
  if (!upstream || !isRelayed(request, config)) return undefined;
  return (socketPath: string) =>
    createOtlpRelay({
      socketPath,
      upstream,
      upstreamHeaders: config.otlpHeaders,
      identity: {
        runtimeArn: target.runtime.arn,
        runtimeId: target.runtime.id,
        runtimeName: target.runtime.name,
        serviceName,
      },
      sessionId: servedSession,
      maxExportBytes: config.otlpRelayMaxExportBytes,
      sessionBytes: config.otlpRelaySessionBytes,
      logger,
    }).then((relay) => () => relay.close());
}

/**
 * Each session's worker in a bubblewrap sandbox (see isolation.ts and sandbox-view.ts): its own
 * namespaces, an unprivileged user, a read-only view, a sized scratch tmpfs, a cgroup and egress
 * rules as root, reached through a Unix socket, telemetry only through its relay.
 */
export function createBwrapBackend({
  config,
  isolation,
  instrumentPath,
}: BwrapBackendOptions): SessionBackend {
  const plan = (request: WorkerRequest, env: Record<string, string>): SandboxPlan => {
    const { id, target, launch, sessionDir, sessionId } = request;
    if (launch.kind !== 'process') throw new Error(`the bwrap backend cannot run ${launch.kind}`);
    const mountPath = sessionStorageMount(target);
    const preload = instrumentPath();
    return planSandbox({
      isolation,
      argv: [launch.command, ...launch.args],
      cwd: launch.cwd,
      sessionDir,
      readablePaths: [
        dirname(dirname(process.execPath)),
        // The launcher and the node_modules it resolves its own dependencies from.
        ...(preload ? [dirname(dirname(preload)), ...dependencyPaths(dirname(preload))] : []),
      ],
      hostPorts: config.sandboxHostPorts,
      otlpPort: RELAY_PORT,
      otlpRelay: relayFor(request, config, env.OTEL_SERVICE_NAME as string),
      storage:
        mountPath && sessionId
          ? {
              hostDir: storageDirOf(config.dataDir, target.runtime.id, target.version.version, sessionId),
              mountPath,
            }
          : undefined,
      hiddenDirs: [config.dataDir],
      workerId: id,
      scratchBytes: config.sessionDiskMb * 1024 * 1024,
      limits: {
        memoryBytes: config.sessionMemoryMb * 1024 * 1024,
        vcpus: config.sessionVcpus,
        pids: config.sessionPids,
      },
    });
  };
  /** The session's storage volume mounted on its folder (root runtime); resolves with the unmount. */
  const mountStorage = async ({ target, sessionId }: WorkerRequest): Promise<() => void> => {
    if (!sessionStorageMount(target) || !sessionId || !isolation.storageVolumes || !isolation.hostIds)
      return () => undefined;
    const dir = storageDirOf(config.dataDir, target.runtime.id, target.version.version, sessionId);
    return mountStorageVolume(dir, config.sessionStorageMb * 1024 * 1024, isolation.hostIds);
  };
  return {
    name: 'bwrap',
    async start(request) {
      const { id, launch, sessionDir, target, healthCheck, logger } = request;
      if (launch.kind !== 'process') throw new Error(`the bwrap backend cannot run ${launch.kind}`);
      const env = request.env(0, true);
      // The name its relay stamps, so that the worker's own exporter sends the same one.
      env.OTEL_SERVICE_NAME = tenantServiceName(env.OTEL_SERVICE_NAME, target.runtime.name);
      const unmount = await mountStorage(request);
      let sandbox: SandboxPlan;
      try {
        sandbox = plan(request, env);
      } catch (error) {
        unmount();
        throw error;
      }
      env.PORT = String(sandbox.port);
      const worker = spawnWorker({
        id,
        argv: sandbox.argv,
        cwd: launch.cwd,
        env,
        port: sandbox.port,
        socketPath: sandbox.socketPath,
        healthCheck,
        logger,
        output: request.output,
        prepare: sandbox.prepare,
        limitHit: sandbox.limitHit,
        usage: sandbox.usage,
        // The worker first, alone: it flushes its telemetry through the relay's bridge before the rest ends.
        stopWith: (graceMs) => stopSandboxWorker(worker.sandboxPid, graceMs, worker.exitedWithin),
      });
      worker.onExit(unmount);
      const exec = (argv: string[]) => {
        const pid = worker.sandboxPid;
        if (pid === undefined) throw notFound(`Worker ${id} has no running sandbox`);
        const cgroup = sandbox.commandCgroup();
        const entered = enterSandbox(isolation, pid, argv);
        return {
          argv: cgroup ? joinCgroupArgv(cgroup.procsFiles, entered) : entered,
          cwd: launch.cwd,
          env: { ...env },
          cgroup,
        };
      };
      return { worker, exec, seal: () => sealRunDir(sessionDir, isolation) };
    },
  };
}
