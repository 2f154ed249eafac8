import { join } from 'node:path';
import { type RuntimeConfig } from '../config.js';
import { RuntimeApiError, notFound } from '../errors.js';
import { type Logger } from '../logger.js';
import { createWarmPool } from './warm-pool.js';
import { type CommandSpawn, type SessionTarget, type SharedJob } from './backend.js';
import { selectBackends } from './backends/select.js';
import { type Isolation } from './isolation.js';
import { sweepSessionDirs } from './leftovers.js';
import {
  type Session,
  type SessionManager,
  type StartPhaseRecorder,
  type StopReason,
  newSession,
  sharedSession,
} from './session.js';
import { createRestarts } from './session-restart.js';
import { createWorkerStart } from './worker-start.js';
import { createWorkerEnv, launchAttributes, workerAttributes } from './worker-launch.js';
import { createSessionTiming } from './session-timing.js';
import { startSlots } from './start-slots.js';
import { localStorageLifetime } from './storage-sweep.js';
import { holdStart, startFailure } from './start-outcome.js';
import { type Worker, type WorkerExit, WorkerStartError } from './worker.js';

export type { CommandSpawn, SessionTarget } from './backend.js';

export type { Session, SessionManager, SessionState, StartPhaseRecorder, StopReason } from './session.js';

export interface SessionManagerOptions {
  config: Readonly<RuntimeConfig>;
  isolation: Isolation;
  logger: Logger;
  /** The runtime's own origin once it listens, for `AGENTCORE_RUNTIME_URL` in A2A workers. */
  origin?: () => string;
  /**
   * Sessions several replicas share (a cluster backend): the Lease whose holder alone runs the
   * backend's shared jobs — the warm-pool keeper, the idle and lifetime reaper (none: this one does).
   */
  leader?: { whileLeading(job: SharedJob): void } | undefined;
  /** The versions sessions start on now (each runtime's latest READY one), for the shared keeper. */
  targets?: (() => SessionTarget[]) | undefined;
  /**
   * The versions of a runtime whose session storage is kept (SharedJobInput); none given: no
   * storage is ever removed (the storage sweep and reaper do not run).
   */
  storedVersions?: ((runtimeId: string) => number[] | undefined) | undefined;
  /**
   * Whether a runtime is this installation's (its control store has it): of a shared backend's
   * sessions, only those are listed (another installation may share the cluster namespace).
   */
  owns?: ((runtimeId: string) => boolean) | undefined;
}

export function createSessionManager({
  config,
  isolation,
  logger,
  origin,
  leader,
  targets = () => [],
  storedVersions,
  owns = () => false,
}: SessionManagerOptions): SessionManager {
  const sessions = new Map<string, Session>();
  const launched = createWorkerEnv({ config, logger, origin });
  const { workerEnv } = launched;
  /** How to run a command beside each live worker (its backend's exec). */
  const execs = new WeakMap<Worker, (argv: string[], timeoutS?: number) => CommandSpawn>();
  const backends = selectBackends({ config, isolation, instrumentPath: launched.instrumentPath, logger });
  // The backend every session runs on when it is shared by replicas (a cluster), else none.
  const shared = backends.shared;
  const sessionsRoot = join(config.dataDir, 'sessions');
  /** What a version's workers get of the session manager (env, probe), for a cluster's warm workers. */
  // Work one replica does for all (the Lease holder's): the warm-pool keeper, the idle reaper.
  const jobs = backends.runSharedJobs(leader, {
    targets,
    storedVersions,
    worker: launched.imageWorker,
    floor: config.warmPoolSize,
    cap: config.warmPoolMax,
    intervalMs: config.pingIntervalMs,
    logger: logger.child({ component: 'shared-jobs' }),
  });
  // This host's session storage (a cluster's is its backend's): what no version kept needs goes.
  const storage =
    !shared && storedVersions
      ? localStorageLifetime(config.dataDir, {
          kept: storedVersions,
          sessions: () => sessions.values(),
          idleMs: config.sessionStorageIdleS * 1000,
          intervalMs: config.pingIntervalMs * 10,
          logger,
        })
      : undefined;
  if (storage) {
    jobs.push(storage.sweep);
    storage.sweep.start();
  }
  // Sessions start once what an earlier run left is gone (a stale volume mount included).
  const swept = Promise.all([sweepSessionDirs(sessionsRoot, logger), backends.sweep()]);
  let closing = false;
  const starting = new Set<Promise<void>>();

  // Booting workers compete for CPU: past a few at once they only slow each other down.
  const withStartSlot = startSlots(config.maxConcurrentStarts);

  const keyOf = (runtimeId: string, sessionId: string) => `${runtimeId}\u0000${sessionId}`;

  /**
   * The session of this id known here, or one another replica started, found by a shared backend
   * (a cluster's cache): it becomes a session here too (the same worker answers, so the same
   * session memory), and ends when its worker ends, whoever stopped it.
   */
  const lookup = (runtimeId: string, sessionId: string): Session | undefined => {
    const key = keyOf(runtimeId, sessionId);
    const known = sessions.get(key);
    if (known) return known;
    const found = shared?.find?.(runtimeId, sessionId);
    if (!found) return undefined;
    // A failed start is answered by its replica, which deletes the pod: this one forgets it.
    const session = sharedSession(runtimeId, sessionId, found, config.startTimeoutMs, () => forget(session));
    sessions.set(key, session);
    execs.set(found.worker, found.exec);
    watchExit(session, found.worker);
    return session;
  };

  const startWorker = createWorkerStart({ config, logger, backends, workerEnv, swept, sessionsRoot, execs });

  /**
   * Starts a worker and waits for its `/ping`. bwrap sometimes fails to bring up the new network
   * namespace's loopback when many are created at once (RTM_NEWADDR answered ECHILD); that start is
   * retried, up to three times, since nothing of the session ran yet.
   */
  const startReady = async (
    target: SessionTarget,
    tag: Record<string, string>,
    sessionId: string | undefined,
    onWorker: (started: Awaited<ReturnType<typeof startWorker>>) => void,
    beside?: boolean,
  ): Promise<Awaited<ReturnType<typeof startWorker>>> => {
    // The sweep's idle expiry counts from here.
    if (sessionId) storage?.started(target, sessionId);
    for (let attempt = 1; ; attempt++) {
      const started = await startWorker(target, tag, sessionId, beside);
      onWorker(started);
      try {
        await started.worker.waitReady(config.startTimeoutMs, () => closing);
        started.seal?.();
        return started;
      } catch (error) {
        if (attempt >= 3 || !/bwrap: loopback: Failed/.test(started.worker.lastOutput())) throw error;
        logger.warn('sandbox network setup failed; starting the worker again', { attempt, ...tag });
      }
    }
  };

  // Warm workers kept by this replica (a cluster keeps its own: none here).
  const pool = createWarmPool({
    floor: shared?.keepsWarmPool ? 0 : config.warmPoolSize,
    cap: shared?.keepsWarmPool ? 0 : config.warmPoolMax,
    stopGraceMs: config.stopGraceMs,
    logger,
    closing: () => closing,
    start: (target, onWorker) =>
      withStartSlot(() => startReady(target, { pool: 'warm' }, undefined, onWorker).then(() => undefined)),
  });

  const exitReason = (exit: WorkerExit): StopReason =>
    `exited:${exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`}`;
  /** Drops the session from the live ones, unless a fresh session of its id took its place. */
  const forget = (session: Session) => {
    const key = keyOf(session.runtimeId, session.sessionId);
    if (sessions.get(key) === session) sessions.delete(key);
  };

  /**
   * A session whose worker has exited is over even while its stop is under way (a container that
   * died unseen, its exit heard a moment ago): it is forgotten, and its id starts a fresh worker.
   */
  const unlessExited = (session: Session | undefined): Session | undefined => {
    const exit = session?.worker?.exited;
    if (!session || !exit || session.state === 'starting') return session;
    forget(session);
    void stopSession(session, exitReason(exit));
    return undefined;
  };

  const stopSession = async (session: Session, reason: StopReason): Promise<void> => {
    if (session.state === 'stopping') return;
    session.state = 'stopping';
    timing.forget(session);
    const exit = await session.worker?.stop(config.stopGraceMs);
    forget(session);
    logger.info('session stopped', {
      runtimeId: session.runtimeId,
      sessionId: session.sessionId,
      reason,
      exitCode: exit?.code,
      signal: exit?.signal,
    });
  };

  // A backend that takes activity notes has the shared reaper stop idle sessions, not this replica.
  const timing = createSessionTiming({
    config,
    touch: shared?.touch?.bind(shared),
    shared: shared?.touch !== undefined,
    stop: stopSession,
  });
  const { monitor, noteActivity } = timing;

  const onWorkerExit = (session: Session) => (exit: WorkerExit) => {
    if (session.state === 'ready') void stopSession(session, exitReason(exit));
  };
  /** Each session's worker's exit stops the session; a worker swapped out is unsubscribed. */
  const exitWatch = new WeakMap<Session, () => void>();
  const watchExit = (session: Session, worker: Worker) => {
    exitWatch.get(session)?.();
    exitWatch.set(session, worker.onExit(onWorkerExit(session)));
  };

  /**
   * A call joins a live session. A start nobody here waits for (another replica's pod, or one that
   * outlived its caller's hold) is waited for, up to the hold budget; a session still starting for
   * another caller, or stopping, is a 409.
   */
  const joinSession = async (existing: Session): Promise<Session> => {
    if (existing.state === 'starting' && existing.starting && !existing.startHeld)
      await holdStart(existing, existing.starting, shared?.holdMs);
    if (existing.state !== 'ready' || existing.worker?.exited)
      throw new RuntimeApiError('RetryableConflictException', 'Session operation in progress, please retry');
    existing.inflight++;
    noteActivity(existing);
    return existing;
  };

  /** The cap is this replica's: sessions of other replicas it lists or serves do not count. */
  const assertRoom = () => {
    if ([...sessions.values()].filter((s) => !s.adopted).length >= config.maxSessions)
      throw new RuntimeApiError(
        'ServiceQuotaExceededException',
        `Live session limit reached (maxVms ${config.maxSessions}); stop a session or raise AGENTRT_MAX_SESSIONS`,
      );
  };

  /** A started session: ready, watched for its worker's exit, its health and idle clocks running. */
  const markReady = (session: Session, target: SessionTarget, log: Logger) => {
    if (!session.worker)
      throw new RuntimeApiError('InternalServerException', 'session started without a worker');
    watchExit(session, session.worker);
    session.state = 'ready';
    session.starting = undefined;
    const { idleRuntimeSessionTimeout, maxLifetime } = target.version.config.lifecycleConfiguration;
    monitor(session, idleRuntimeSessionTimeout * 1000, maxLifetime * 1000);
    log.info('session started', {
      version: session.version,
      warm: session.warm,
      pid: session.worker.pid,
      startMs: Date.now() - session.startedAtMs,
    });
  };

  /**
   * Starts a new session's worker; resolves once the session is ready. A failed start forgets the
   * session, stops what it started and rejects with the AWS error it maps to (424 or 503).
   */
  const startSession = async (session: Session, target: SessionTarget, phase?: StartPhaseRecorder) => {
    const log = logger.child({ runtimeId: target.runtime.id, sessionId: session.sessionId });
    const start = launchSession(session, target, phase);
    starting.add(start);
    try {
      await start;
    } catch (error) {
      forget(session);
      await session.worker?.stop(0);
      log.warn('session failed to start', { error: error instanceof Error ? error.message : String(error) });
      throw startFailure(error);
    } finally {
      starting.delete(start);
    }
    markReady(session, target, log);
  };

  /**
   * The caller of a new session waits for its start (up to the hold budget of a pod). Past the
   * budget it hears 503 while the start goes on, and nobody is in the session.
   */
  const holdNewSession = async (session: Session, started: Promise<void>): Promise<Session> => {
    session.startHeld = true;
    try {
      await holdStart(session, started, shared?.holdMs);
    } catch (error) {
      session.inflight = 0;
      throw error;
    } finally {
      session.startHeld = false;
    }
    noteActivity(session);
    return session;
  };

  const restarts = createRestarts({
    config,
    logger,
    live: (session) => sessions.get(keyOf(session.runtimeId, session.sessionId)) === session,
    closing: () => closing,
    watchExit,
    startFresh(session, target, onWorker) {
      const tag = { sessionId: session.sessionId };
      const start = withStartSlot(() =>
        startReady(target, tag, session.sessionId, (w) => onWorker(w.worker), true),
      ).then(() => undefined);
      starting.add(start); // close() waits for it, then stops the fresh worker with the session
      return start.finally(() => starting.delete(start));
    },
  });

  /** Gives a new session its worker: a warm one of its version, else one started for it. */
  const launchSession = async (session: Session, target: SessionTarget, phase?: StartPhaseRecorder) => {
    const { sessionId } = session;
    const queuedMs = Date.now();
    const warm = pool.take(target);
    if (warm) {
      phase?.('warm-pool', queuedMs, Date.now(), {
        ...workerAttributes(warm.worker),
        launch_type: 'warm',
      });
      session.worker = warm.worker;
      session.warm = true;
      warm.adopt(sessionId);
      warm.worker.tagLogs({ sessionId });
      pool.fill(target);
      return;
    }
    await withStartSlot(async () => {
      const spawnMs = Date.now();
      if (spawnMs - queuedMs > 1) phase?.('queue', queuedMs, spawnMs);
      if (closing) throw new WorkerStartError('The runtime shut down while the session was starting');
      let readyMs = spawnMs;
      try {
        await startReady(target, { sessionId }, sessionId, ({ worker, joined }) => {
          session.worker = worker;
          if (joined) session.adopted = true; // another replica's start of it, a moment earlier
          readyMs = Date.now();
          phase?.('spawn', spawnMs, readyMs, {
            ...workerAttributes(worker),
            'agentrt.isolation': shared?.name ?? isolation.mode,
            ...(worker.launchType ? {} : { launch_type: 'cold' }),
          });
        });
        session.warm = session.worker?.launchType?.() === 'warm';
      } finally {
        phase?.('readiness', readyMs, Date.now(), launchAttributes(session.worker));
      }
    });
    if (closing) throw new WorkerStartError('The runtime shut down while the session was starting');
    pool.fill(target); // the version's recent demand grew
  };

  return {
    async acquire(target, sessionId, phase) {
      if (closing) throw new RuntimeApiError('RetryableConflictException', 'The runtime is shutting down');
      const key = keyOf(target.runtime.id, sessionId);
      await sessions.get(key)?.replacing; // a fresh worker being swapped in serves this call
      const existing = unlessExited(lookup(target.runtime.id, sessionId));
      if (existing) return joinSession(existing);
      assertRoom();
      const session = newSession(target.runtime.id, sessionId, target.version.version);
      sessions.set(key, session);
      session.starting = startSession(session, target, phase);
      return holdNewSession(session, session.starting);
    },
    release(session) {
      session.inflight = Math.max(0, session.inflight - 1);
      session.lastActivityMs = Date.now();
      noteActivity(session);
    },
    async stop(runtimeId, sessionId) {
      const session = lookup(runtimeId, sessionId);
      if (!session) throw notFound(`Session ${sessionId} is not running on runtime ${runtimeId}`);
      if (session.state !== 'ready')
        throw new RuntimeApiError(
          'RetryableConflictException',
          'Session operation in progress, please retry',
        );
      await stopSession(session, 'stopped');
    },
    async restart(runtimeId, targetOf) {
      void pool.dropRuntime(runtimeId); // its warm workers run the code from before
      const live = [...sessions.values()].filter((s) => s.runtimeId === runtimeId);
      const replaced = await Promise.all(live.map((s) => restarts.replaceWorker(s, targetOf(s))));
      return replaced.filter(Boolean).length;
    },
    async stopRuntime(runtimeId) {
      const doomed = [...sessions.values()].filter((s) => s.runtimeId === runtimeId);
      await Promise.all([
        ...doomed.map((s) => stopSession(s, 'runtime-deleted')),
        pool.dropRuntime(runtimeId),
      ]);
      storage?.dropRuntime(runtimeId);
      // a failure is the deletion's (the runtime turns DELETE_FAILED): no claim is left unowned
      await shared?.dropStorage?.(runtimeId);
    },
    refreshWarmPool: (target) => pool.refresh(target),
    list() {
      // Every live session of the cluster, whichever replica started it, is one here too.
      for (const { runtimeId, sessionId } of shared?.sessions?.() ?? [])
        if (owns(runtimeId)) lookup(runtimeId, sessionId);
      return [...sessions.values()];
    },
    get: lookup,
    warmCount(runtimeId) {
      if (!shared?.warmCount) return pool.count(runtimeId);
      const ids = runtimeId === undefined ? new Set(targets().map((t) => t.runtime.id)) : [runtimeId];
      return [...ids].reduce((n, id) => n + shared.warmCount!(id), 0);
    },
    commandSpawn(session, argv, timeoutS) {
      const exec = session.worker && execs.get(session.worker);
      if (!exec)
        throw notFound(`Session ${session.sessionId} has no running worker on runtime ${session.runtimeId}`);
      return exec(argv, timeoutS);
    },
    async close() {
      closing = true;
      for (const job of jobs) job.stop();
      await Promise.allSettled([...starting]);
      await Promise.all([
        // Another replica's session lives on without this one.
        ...[...sessions.values()]
          .filter((s) => !s.adopted)
          .map((s) =>
            s.state === 'stopping' ? s.worker?.stop(config.stopGraceMs) : stopSession(s, 'shutdown'),
          ),
        pool.close(),
      ]);
      await shared?.close?.();
    },
  };
}
