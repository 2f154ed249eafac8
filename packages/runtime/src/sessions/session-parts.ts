// What the session manager's operations share (`SessionParts`), built once: the live sessions,
// the backends and how a worker starts, the warm pool, the session clocks, the shared jobs and this
// host's storage sweep. session-manager.ts builds it and hands it to its operations and to
// session-start.ts.
import { join } from 'node:path';
import { type RuntimeConfig } from '../config.js';
import { type Logger } from '../logger.js';
import { type CommandSpawn, type SessionBackend, type SessionTarget, type SharedJob } from './backend.js';
import { type Backends, selectBackends } from './backends/select.js';
import { type Isolation } from './isolation.js';
import { sweepSessionDirs } from './leftovers.js';
import { type LiveSessions, createLiveSessions } from './live-sessions.js';
import { type SessionManagerOptions } from './session-manager.js';
import { createSessionTiming } from './session-timing.js';
import { startSlots } from './start-slots.js';
import { type LocalStorageLifetime, localStorageLifetime } from './storage-sweep.js';
import { type WarmPoolOptions, createWarmPool } from './warm-pool.js';
import { createWorkerEnv } from './worker-launch.js';
import { type WorkerStartOptions, createWorkerStart } from './worker-start.js';
import { type Worker } from './worker.js';

export interface SessionParts {
  config: Readonly<RuntimeConfig>;
  logger: Logger;
  isolation: Isolation;
  /** The backend every session runs on when it is shared by replicas (a cluster), else none. */
  shared: SessionBackend | undefined;
  /** How to run a command beside each live worker (its backend's exec). */
  execs: WeakMap<Worker, (argv: string[], timeoutS?: number) => CommandSpawn>;
  live: LiveSessions;
  /** Work one replica does for all (the Lease holder's), and this host's storage sweep: `close` stops them. */
  jobs: SharedJob[];
  /** This host's session storage (a cluster's is its backend's; none when no storage is kept). */
  storage: LocalStorageLifetime | undefined;
  /** Warm workers kept by this replica (a cluster keeps its own: none here). */
  pool: ReturnType<typeof createWarmPool>;
  timing: ReturnType<typeof createSessionTiming>;
  /** Starts a worker and waits for its `/ping` (worker-start.ts). */
  startReady: ReturnType<typeof createWorkerStart>;
  /** Runs a worker's start in its turn: booting workers compete for CPU. */
  withStartSlot: ReturnType<typeof startSlots>;
  /** The starts under way, for `close` to wait for. */
  starting: Set<Promise<void>>;
  state: { closing: boolean };
  /** The versions sessions start on now (each runtime's latest READY one). */
  targets: () => SessionTarget[];
  /** Whether a runtime is this installation's. */
  owns: (runtimeId: string) => boolean;
}

export function createSessionParts(options: SessionManagerOptions): SessionParts {
  const { config, isolation, logger, targets = () => [], owns = () => false } = options;
  const state = { closing: false };
  const closing = () => state.closing;
  const launched = createWorkerEnv({ config, logger, origin: options.origin });
  const execs: SessionParts['execs'] = new WeakMap();
  const backends = selectBackends({ config, isolation, instrumentPath: launched.instrumentPath, logger });
  const shared = backends.shared;
  const live = createLiveSessions({ config, logger, shared, execs, stopping: (s) => timing.forget(s) });
  const { jobs, storage } = startJobs({ ...options, targets }, backends, launched, live);
  const { startReady, withStartSlot } = workerStarts(
    { config, logger, backends, execs, storage, closing },
    launched,
  );
  const pool = localWarmPool(config, logger, shared, closing, (target, onWorker) =>
    withStartSlot(() => startReady(target, { pool: 'warm' }, undefined, onWorker).then(() => undefined)),
  );
  // A backend that takes activity notes has the shared reaper stop idle sessions, not this replica.
  const touch = shared?.touch?.bind(shared);
  const timing = createSessionTiming({ config, touch, shared: touch !== undefined, stop: live.stop });
  const starting = new Set<Promise<void>>();
  return {
    config,
    logger,
    isolation,
    shared,
    execs,
    live,
    jobs,
    storage,
    pool,
    timing,
    startReady,
    withStartSlot,
    starting,
    state,
    targets,
    owns,
  };
}

/**
 * How a worker starts, in its turn (booting workers compete for CPU: past a few at once they only
 * slow each other down), once what an earlier run left is gone (a stale volume mount included).
 */
function workerStarts(
  options: Pick<WorkerStartOptions, 'config' | 'logger' | 'backends' | 'execs' | 'storage' | 'closing'>,
  launched: ReturnType<typeof createWorkerEnv>,
) {
  const { config, logger, backends } = options;
  const sessionsRoot = join(config.dataDir, 'sessions');
  const swept = Promise.all([sweepSessionDirs(sessionsRoot, logger), backends.sweep()]);
  const withStartSlot = startSlots(config.maxConcurrentStarts);
  const startReady = createWorkerStart({ ...options, workerEnv: launched.workerEnv, swept, sessionsRoot });
  return { startReady, withStartSlot };
}

/** Warm workers kept by this replica (a cluster keeps its own: none here). */
function localWarmPool(
  config: Readonly<RuntimeConfig>,
  logger: Logger,
  shared: SessionBackend | undefined,
  closing: () => boolean,
  start: WarmPoolOptions['start'],
) {
  return createWarmPool({
    floor: shared?.keepsWarmPool ? 0 : config.warmPoolSize,
    cap: shared?.keepsWarmPool ? 0 : config.warmPoolMax,
    stopGraceMs: config.stopGraceMs,
    logger,
    closing,
    start,
  });
}

/**
 * Starts the work one replica does for all (the Lease holder's: the warm-pool keeper, the idle
 * reaper) and this host's storage sweep (a cluster's storage is its backend's): what no version
 * kept needs goes.
 */
function startJobs(
  options: SessionManagerOptions & { targets: () => SessionTarget[] },
  backends: Backends,
  launched: ReturnType<typeof createWorkerEnv>,
  live: LiveSessions,
): { jobs: SharedJob[]; storage: LocalStorageLifetime | undefined } {
  const { config, logger, storedVersions } = options;
  const jobs = backends.runSharedJobs(options.leader, {
    targets: options.targets,
    storedVersions,
    worker: launched.imageWorker,
    floor: config.warmPoolSize,
    cap: config.warmPoolMax,
    intervalMs: config.pingIntervalMs,
    logger: logger.child({ component: 'shared-jobs' }),
  });
  const storage =
    !backends.shared && storedVersions
      ? localStorageLifetime(config.dataDir, {
          kept: storedVersions,
          sessions: live.all,
          idleMs: config.sessionStorageIdleS * 1000,
          intervalMs: config.pingIntervalMs * 10,
          logger,
        })
      : undefined;
  if (storage) {
    jobs.push(storage.sweep);
    storage.sweep.start();
  }
  return { jobs, storage };
}
