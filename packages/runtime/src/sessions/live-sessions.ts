// The sessions this replica knows, by runtime and session id: those it started, and those another
// replica started that a shared backend (a cluster's cache) found for a call here. A session ends
// when its worker exits, whoever stopped it; a fresh session of the same id may take its place.
import { type RuntimeConfig } from '../config.js';
import { type Logger } from '../logger.js';
import { type CommandSpawn, type SessionBackend } from './backend.js';
import { type Session, type StopReason, sharedSession } from './session.js';
import { type Worker, type WorkerExit } from './worker.js';

export interface LiveSessionsOptions {
  config: Readonly<RuntimeConfig>;
  logger: Logger;
  /** The backend every session runs on when replicas share it (a cluster), else none. */
  shared: SessionBackend | undefined;
  /** How to run a command beside each live worker (its backend's exec). */
  execs: WeakMap<Worker, (argv: string[], timeoutS?: number) => CommandSpawn>;
  /** A session begins to stop: its health and idle clocks end (session-timing.ts). */
  stopping: (session: Session) => void;
}

export type LiveSessions = ReturnType<typeof createLiveSessions>;

const keyOf = (runtimeId: string, sessionId: string) => `${runtimeId}\u0000${sessionId}`;

const exitReason = (exit: WorkerExit): StopReason =>
  `exited:${exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`}`;

/** The live sessions by key, each one's exit subscription, and what they need of the manager. */
interface Live extends LiveSessionsOptions {
  sessions: Map<string, Session>;
  /** Each session's worker's exit stops the session; a worker swapped out is unsubscribed. */
  exitWatch: WeakMap<Session, () => void>;
}

export function createLiveSessions(options: LiveSessionsOptions) {
  const live: Live = { ...options, sessions: new Map(), exitWatch: new WeakMap() };
  const { sessions } = live;
  return {
    lookup: (runtimeId: string, sessionId: string) => lookup(live, runtimeId, sessionId),
    /** The session known here under this id; none is looked for through the backend. */
    known: (runtimeId: string, sessionId: string) => sessions.get(keyOf(runtimeId, sessionId)),
    add: (session: Session) => void sessions.set(keyOf(session.runtimeId, session.sessionId), session),
    /** Whether the session is still the live one of its id. */
    isLive: (session: Session) => sessions.get(keyOf(session.runtimeId, session.sessionId)) === session,
    all: () => [...sessions.values()],
    ofRuntime: (runtimeId: string) => [...sessions.values()].filter((s) => s.runtimeId === runtimeId),
    forget: (session: Session) => forget(live, session),
    stop: (session: Session, reason: StopReason) => stop(live, session, reason),
    watchExit: (session: Session, worker: Worker) => watchExit(live, session, worker),
    unlessExited: (session: Session | undefined) => unlessExited(live, session),
  };
}

/** Drops the session from the live ones, unless a fresh session of its id took its place. */
function forget({ sessions }: Live, session: Session) {
  const key = keyOf(session.runtimeId, session.sessionId);
  if (sessions.get(key) === session) sessions.delete(key);
}

async function stop(live: Live, session: Session, reason: StopReason): Promise<void> {
  if (session.state === 'stopping') return;
  session.state = 'stopping';
  live.stopping(session);
  const exit = await session.worker?.stop(live.config.stopGraceMs);
  forget(live, session);
  live.logger.info('session stopped', {
    runtimeId: session.runtimeId,
    sessionId: session.sessionId,
    reason,
    exitCode: exit?.code,
    signal: exit?.signal,
  });
}

function watchExit(live: Live, session: Session, worker: Worker) {
  live.exitWatch.get(session)?.();
  live.exitWatch.set(
    session,
    worker.onExit((exit) => {
      if (session.state === 'ready') void stop(live, session, exitReason(exit));
    }),
  );
}

/**
 * The session of this id known here, or one another replica started, found by a shared backend
 * (a cluster's cache): it becomes a session here too (the same worker answers, so the same
 * session memory), and ends when its worker ends, whoever stopped it.
 */
function lookup(live: Live, runtimeId: string, sessionId: string): Session | undefined {
  const key = keyOf(runtimeId, sessionId);
  const known = live.sessions.get(key);
  if (known) return known;
  const found = live.shared?.find?.(runtimeId, sessionId);
  if (!found) return undefined;
  // A failed start is answered by its replica, which deletes the pod: this one forgets it.
  const session = sharedSession(runtimeId, sessionId, found, live.config.startTimeoutMs, () =>
    forget(live, session),
  );
  live.sessions.set(key, session);
  live.execs.set(found.worker, found.exec);
  watchExit(live, session, found.worker);
  return session;
}

/**
 * A session whose worker has exited is over even while its stop is under way (a container that
 * died unseen, its exit heard a moment ago): it is forgotten, and its id starts a fresh worker.
 */
function unlessExited(live: Live, session: Session | undefined): Session | undefined {
  const exit = session?.worker?.exited;
  if (!session || !exit || session.state === 'starting') return session;
  forget(live, session);
  void stop(live, session, exitReason(exit));
  return undefined;
}
