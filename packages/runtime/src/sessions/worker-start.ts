// A worker's start through its backend: where it runs (the version's launch, or a cluster's image),
// its private folder, its environment and logger; resolves once it is spawned (not yet ready).
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type RuntimeConfig } from '../config.js';
import { type Logger } from '../logger.js';
import { type LaunchSpec, launchOf, pinOptionsOf } from './artifact.js';
import { type CommandSpawn, type SessionTarget } from './backend.js';
import { type Backends } from './backends/select.js';
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
}

export function createWorkerStart(options: WorkerStartOptions) {
  const { config, logger, backends, workerEnv, swept, sessionsRoot, execs } = options;
  const shared = backends.shared;
  /**
   * Spawns a worker for the version through its backend; resolves once it is spawned (not yet
   * ready). `sessionId` is known for a direct start and learnt later (`adopt`) by a warm-pool worker.
   */
  return async (target: SessionTarget, tag: Record<string, string>, sessionId?: string, beside?: boolean) => {
    const containerUri =
      target.version.config.agentRuntimeArtifact.containerConfiguration?.containerUri ?? '';
    // A cluster runs the version's image as it pulls it: nothing is resolved on this host.
    const launch: LaunchSpec = shared?.runsImages
      ? IMAGE_LAUNCH(target)
      : await launchOf(containerUri, target.version.artifact, pinOptionsOf(config));
    await swept;
    const id = randomUUID();
    const sessionDir = join(sessionsRoot, id);
    mkdirSync(sessionDir, { recursive: true, mode: 0o700 });
    chmodSync(sessionDir, 0o700);
    mkdirSync(join(sessionDir, 'tmp'), { recursive: true });
    mkdirSync(join(sessionDir, 'home'), { recursive: true });
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
  };
}
