// A worker's start through its backend: where it runs (the version's launch, or a cluster's image),
// its private folder, its environment and logger; then its wait for `/ping`, the start retried when
// the sandbox's network set-up failed.
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type RuntimeConfig } from '../config.js';
import { type Logger } from '../logger.js';
import { type LaunchSpec, launchOf, pinOptionsOf } from './artifact.js';
import { type CommandSpawn, type SessionTarget } from './backend.js';
import { type Backends } from './backends/select.js';
import { type LocalStorageLifetime } from './storage-sweep.js';
import { IMAGE_LAUNCH, type createWorkerEnv, healthCheckOf } from './worker-launch.js';
import { type Worker } from './worker.js';

export interface WorkerStartOptions {
  config: Readonly<RuntimeConfig>;
  logger: Logger;
  backends: Backends;
  workerEnv: ReturnType<typeof createWorkerEnv>['workerEnv'];
  /** Settles once what an earlier run left is gone. */
  swept: Promise<unknown>;
  sessionsRoot: string;
  /** Where each started worker's command runner goes. */
  execs: WeakMap<Worker, (argv: string[], timeoutS?: number) => CommandSpawn>;
  /** This host's session storage (none: a cluster's, or none kept). */
  storage: LocalStorageLifetime | undefined;
  /** True once the session manager closes: a worker still waiting for `/ping` gives up. */
  closing: () => boolean;
}

/** A spawned worker, with how its telemetry relay learns the session it serves (`adopt`). */
export type StartedWorker = Awaited<ReturnType<typeof spawnWorker>>;

/**
 * Starts a worker and waits for its `/ping`. bwrap sometimes fails to bring up the new network
 * namespace's loopback when many are created at once (RTM_NEWADDR answered ECHILD); that start is
 * retried, up to three times, since nothing of the session ran yet.
 */
export function createWorkerStart(options: WorkerStartOptions) {
  const { config, logger, storage } = options;
  return async (
    target: SessionTarget,
    tag: Record<string, string>,
    sessionId: string | undefined,
    onWorker: (started: StartedWorker) => void,
    beside?: boolean,
  ): Promise<StartedWorker> => {
    // The sweep's idle expiry counts from here.
    if (sessionId) storage?.started(target, sessionId);
    for (let attempt = 1; ; attempt++) {
      const started = await spawnWorker(options, target, tag, sessionId, beside);
      onWorker(started);
      try {
        await started.worker.waitReady(config.startTimeoutMs, options.closing);
        started.seal?.();
        return started;
      } catch (error) {
        if (attempt >= 3 || !/bwrap: loopback: Failed/.test(started.worker.lastOutput())) throw error;
        logger.warn('sandbox network setup failed; starting the worker again', { attempt, ...tag });
      }
    }
  };
}

/**
 * Spawns a worker for the version through its backend; resolves once it is spawned (not yet
 * ready). `sessionId` is known for a direct start and learnt later (`adopt`) by a warm-pool worker.
 */
async function spawnWorker(
  options: WorkerStartOptions,
  target: SessionTarget,
  tag: Record<string, string>,
  sessionId?: string,
  beside?: boolean,
) {
  const { config, logger, backends, workerEnv, execs } = options;
  const containerUri = target.version.config.agentRuntimeArtifact.containerConfiguration?.containerUri ?? '';
  // A cluster runs the version's image as it pulls it: nothing is resolved on this host.
  const launch: LaunchSpec = backends.shared?.runsImages
    ? IMAGE_LAUNCH(target)
    : await launchOf(containerUri, target.version.artifact, pinOptionsOf(config));
  await options.swept;
  const id = randomUUID();
  const sessionDir = makeSessionDir(options.sessionsRoot, id);
  let servedSession = sessionId;
  const started = await backends.of(launch).start({
    id,
    target,
    launch,
    sessionDir,
    sessionId,
    beside,
    servedSession: () => servedSession,
    healthCheck: healthCheckOf(target),
    logger: logger.child({
      runtimeId: target.runtime.id,
      runtimeArn: target.runtime.arn,
      workerId: id,
      ...tag,
    }),
    env: (port, relayed) => workerEnv(target, launch, port, sessionDir, relayed),
  });
  const { worker } = started;
  execs.set(worker, started.exec);
  worker.onExit(() => rmSync(sessionDir, { recursive: true, force: true }));
  const adopt = (sid: string) => {
    servedSession = sid;
  };
  return { worker, sessionDir, adopt, seal: started.seal, joined: started.adopted === true };
}

/** The worker's private folder (its `tmp` and `home` within), readable by its owner alone. */
function makeSessionDir(sessionsRoot: string, id: string): string {
  const sessionDir = join(sessionsRoot, id);
  mkdirSync(sessionDir, { recursive: true, mode: 0o700 });
  chmodSync(sessionDir, 0o700);
  mkdirSync(join(sessionDir, 'tmp'), { recursive: true });
  mkdirSync(join(sessionDir, 'home'), { recursive: true });
  return sessionDir;
}
