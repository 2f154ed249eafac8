// A call's way into a session (`acquire` past its lookup): it joins the live one, or this replica
// starts a new one — a warm worker of its version, else one started for it in its turn — and the
// caller waits for the start up to its hold budget.
import { RuntimeApiError } from '../errors.js';
import { type Logger } from '../logger.js';
import { type SessionTarget } from './backend.js';
import { type Session, type StartPhaseRecorder, newSession } from './session.js';
import { type SessionParts } from './session-parts.js';
import { holdStart, startFailure } from './start-outcome.js';
import { type PooledWorker } from './warm-pool.js';
import { launchAttributes, workerAttributes } from './worker-launch.js';
import { WorkerStartError } from './worker.js';

const SHUT_DOWN_WHILE_STARTING = 'The runtime shut down while the session was starting';

/**
 * A call joins a live session. A start nobody here waits for (another replica's pod, or one that
 * outlived its caller's hold) is waited for, up to the hold budget; a session still starting for
 * another caller, or stopping, is a 409.
 */
export async function joinSession({ shared, timing }: SessionParts, existing: Session): Promise<Session> {
  if (existing.state === 'starting' && existing.starting && !existing.startHeld)
    await holdStart(existing, existing.starting, shared?.holdMs);
  if (existing.state !== 'ready' || existing.worker?.exited)
    throw new RuntimeApiError('RetryableConflictException', 'Session operation in progress, please retry');
  existing.inflight++;
  timing.noteActivity(existing);
  return existing;
}

/** A new session of this id, if there is room for it: its start begun, its caller holding it. */
export function startNewSession(
  parts: SessionParts,
  target: SessionTarget,
  sessionId: string,
  phase?: StartPhaseRecorder,
): Promise<Session> {
  assertRoom(parts);
  const session = newSession(target.runtime.id, sessionId, target.version.version);
  parts.live.add(session);
  session.starting = startSession(parts, session, target, phase);
  return holdNewSession(parts, session, session.starting);
}

/** The cap is this replica's: sessions of other replicas it lists or serves do not count. */
function assertRoom({ config, live }: SessionParts) {
  if (live.all().filter((s) => !s.adopted).length >= config.maxSessions)
    throw new RuntimeApiError(
      'ServiceQuotaExceededException',
      `Live session limit reached (maxVms ${config.maxSessions}); stop a session or raise AGENTRT_MAX_SESSIONS`,
    );
}

/**
 * Starts a new session's worker; resolves once the session is ready. A failed start forgets the
 * session, stops what it started and rejects with the AWS error it maps to (424 or 503).
 */
async function startSession(
  parts: SessionParts,
  session: Session,
  target: SessionTarget,
  phase?: StartPhaseRecorder,
) {
  const { logger, live, starting } = parts;
  const log = logger.child({ runtimeId: target.runtime.id, sessionId: session.sessionId });
  const start = launchSession(parts, session, target, phase);
  starting.add(start);
  try {
    await start;
  } catch (error) {
    live.forget(session);
    await session.worker?.stop(0);
    log.warn('session failed to start', { error: error instanceof Error ? error.message : String(error) });
    throw startFailure(error);
  } finally {
    starting.delete(start);
  }
  markReady(parts, session, target, log);
}

/** A started session: ready, watched for its worker's exit, its health and idle clocks running. */
function markReady({ live, timing }: SessionParts, session: Session, target: SessionTarget, log: Logger) {
  if (!session.worker)
    throw new RuntimeApiError('InternalServerException', 'session started without a worker');
  live.watchExit(session, session.worker);
  session.state = 'ready';
  session.starting = undefined;
  const { idleRuntimeSessionTimeout, maxLifetime } = target.version.config.lifecycleConfiguration;
  timing.monitor(session, idleRuntimeSessionTimeout * 1000, maxLifetime * 1000);
  log.info('session started', {
    version: session.version,
    warm: session.warm,
    pid: session.worker.pid,
    startMs: Date.now() - session.startedAtMs,
  });
}

/**
 * The caller of a new session waits for its start (up to the hold budget of a pod). Past the
 * budget it hears 503 while the start goes on, and nobody is in the session.
 */
async function holdNewSession(
  { shared, timing }: SessionParts,
  session: Session,
  started: Promise<void>,
): Promise<Session> {
  session.startHeld = true;
  try {
    await holdStart(session, started, shared?.holdMs);
  } catch (error) {
    session.inflight = 0;
    throw error;
  } finally {
    session.startHeld = false;
  }
  timing.noteActivity(session);
  return session;
}

/** Gives a new session its worker: a warm one of its version, else one started for it. */
async function launchSession(
  parts: SessionParts,
  session: Session,
  target: SessionTarget,
  phase?: StartPhaseRecorder,
) {
  const queuedMs = Date.now();
  const warm = parts.pool.take(target);
  if (warm) return adoptWarm(parts, session, target, warm, queuedMs, phase);
  await parts.withStartSlot(() => coldStart(parts, session, target, queuedMs, phase));
  if (parts.state.closing) throw new WorkerStartError(SHUT_DOWN_WHILE_STARTING);
  parts.pool.fill(target); // the version's recent demand grew
}

/** The session takes a warm worker of its version; the pool starts another. */
function adoptWarm(
  { pool }: SessionParts,
  session: Session,
  target: SessionTarget,
  warm: PooledWorker,
  queuedMs: number,
  phase?: StartPhaseRecorder,
) {
  const { sessionId } = session;
  phase?.('warm-pool', queuedMs, Date.now(), {
    ...workerAttributes(warm.worker),
    launch_type: 'warm',
  });
  session.worker = warm.worker;
  session.warm = true;
  warm.adopt(sessionId);
  warm.worker.tagLogs({ sessionId });
  pool.fill(target);
}

/** Starts the session's own worker, in its start slot, its steps heard by `phase`. */
async function coldStart(
  { shared, isolation, state, startReady }: SessionParts,
  session: Session,
  target: SessionTarget,
  queuedMs: number,
  phase?: StartPhaseRecorder,
) {
  const { sessionId } = session;
  const spawnMs = Date.now();
  if (spawnMs - queuedMs > 1) phase?.('queue', queuedMs, spawnMs);
  if (state.closing) throw new WorkerStartError(SHUT_DOWN_WHILE_STARTING);
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
}
