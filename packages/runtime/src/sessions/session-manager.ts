// The sessions of one runtime process (`SessionManager`): the parts its operations share are built
// once (session-parts.ts); the operations on a session — acquire (session-start.ts), release, stop,
// its command — and on a runtime's sessions — restart (session-restart.ts), stop, warm pool — use them.
import { type RuntimeConfig } from '../config.js';
import { RuntimeApiError, notFound } from '../errors.js';
import { type Logger } from '../logger.js';
import { type SessionTarget, type SharedJob } from './backend.js';
import { type Isolation } from './isolation.js';
import { type SessionManager } from './session.js';
import { type SessionParts, createSessionParts } from './session-parts.js';
import { createRestarts } from './session-restart.js';
import { joinSession, startNewSession } from './session-start.js';

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

export function createSessionManager(options: SessionManagerOptions): SessionManager {
  const parts = createSessionParts(options);
  return { ...sessionOperations(parts), ...runtimeOperations(parts) };
}

/** The operations on one session: its call's way in and out, its stop, a command beside it. */
function sessionOperations(parts: SessionParts) {
  const { live, shared, timing } = parts;
  return {
    async acquire(target, sessionId, phase) {
      if (parts.state.closing)
        throw new RuntimeApiError('RetryableConflictException', 'The runtime is shutting down');
      // A fresh worker being swapped in serves this call.
      await live.known(target.runtime.id, sessionId)?.replacing;
      const existing = live.unlessExited(live.lookup(target.runtime.id, sessionId));
      if (existing) return joinSession(parts, existing);
      return startNewSession(parts, target, sessionId, phase);
    },
    release(session) {
      session.inflight = Math.max(0, session.inflight - 1);
      session.lastActivityMs = Date.now();
      timing.noteActivity(session);
    },
    async stop(runtimeId, sessionId) {
      const session = live.lookup(runtimeId, sessionId);
      if (!session) throw notFound(`Session ${sessionId} is not running on runtime ${runtimeId}`);
      if (session.state !== 'ready')
        throw new RuntimeApiError(
          'RetryableConflictException',
          'Session operation in progress, please retry',
        );
      await live.stop(session, 'stopped');
    },
    list() {
      // Every live session of the cluster, whichever replica started it, is one here too.
      for (const { runtimeId, sessionId } of shared?.sessions?.() ?? [])
        if (parts.owns(runtimeId)) live.lookup(runtimeId, sessionId);
      return live.all();
    },
    get: live.lookup,
    commandSpawn(session, argv, timeoutS) {
      const exec = session.worker && parts.execs.get(session.worker);
      if (!exec)
        throw notFound(`Session ${session.sessionId} has no running worker on runtime ${session.runtimeId}`);
      return exec(argv, timeoutS);
    },
  } satisfies Partial<SessionManager>;
}

/** The operations on a runtime's sessions (a restart, its deletion), its warm pool, and `close`. */
function runtimeOperations(parts: SessionParts) {
  const { pool, shared, live } = parts;
  const restarts = freshWorkers(parts);
  return {
    async restart(runtimeId, targetOf) {
      void pool.dropRuntime(runtimeId); // its warm workers run the code from before
      const replaced = await Promise.all(
        live.ofRuntime(runtimeId).map((s) => restarts.replaceWorker(s, targetOf(s))),
      );
      return replaced.filter(Boolean).length;
    },
    async stopRuntime(runtimeId) {
      await Promise.all([
        ...live.ofRuntime(runtimeId).map((s) => live.stop(s, 'runtime-deleted')),
        pool.dropRuntime(runtimeId),
      ]);
      parts.storage?.dropRuntime(runtimeId);
      // a failure is the deletion's (the runtime turns DELETE_FAILED): no claim is left unowned
      await shared?.dropStorage?.(runtimeId);
    },
    refreshWarmPool: (target) => pool.refresh(target),
    warmCount(runtimeId) {
      if (!shared?.warmCount) return pool.count(runtimeId);
      const ids = runtimeId === undefined ? new Set(parts.targets().map((t) => t.runtime.id)) : [runtimeId];
      return [...ids].reduce((n, id) => n + shared.warmCount!(id), 0);
    },
    close: () => closeSessions(parts),
  } satisfies Partial<SessionManager>;
}

/** `restart`'s fresh workers: each started beside the session's, in its turn, awaited by `close`. */
function freshWorkers(parts: SessionParts) {
  const { config, logger, live, starting } = parts;
  return createRestarts({
    config,
    logger,
    live: live.isLive,
    closing: () => parts.state.closing,
    watchExit: live.watchExit,
    startFresh(session, target, onWorker) {
      const tag = { sessionId: session.sessionId };
      const start = parts
        .withStartSlot(() =>
          parts.startReady(target, tag, session.sessionId, (w) => onWorker(w.worker), true),
        )
        .then(() => undefined);
      starting.add(start); // close() waits for it, then stops the fresh worker with the session
      return start.finally(() => starting.delete(start));
    },
  });
}

/** Stops the shared jobs, waits for the starts under way, then stops this replica's sessions. */
async function closeSessions({ config, state, jobs, starting, live, pool, shared }: SessionParts) {
  state.closing = true;
  for (const job of jobs) job.stop();
  await Promise.allSettled([...starting]);
  await Promise.all([
    // Another replica's session lives on without this one.
    ...live
      .all()
      .filter((s) => !s.adopted)
      .map((s) => (s.state === 'stopping' ? s.worker?.stop(config.stopGraceMs) : live.stop(s, 'shutdown'))),
    pool.close(),
  ]);
  await shared?.close?.();
}
