// A live session as the session manager keeps it, and the types its callers see.
import { type CommandSpawn, type SessionTarget, type SharedSession } from './backend.js';
import { startFailure } from './start-outcome.js';
import { type Worker } from './worker.js';
import { type PingState } from './worker-probe.js';

/** Hears one step of a session start: its name and wall-clock bounds (epoch ms). */
export type StartPhaseRecorder = (
  phase: string,
  startMs: number,
  endMs: number,
  attributes?: Record<string, string | number | boolean>,
) => void;

export type SessionState = 'starting' | 'ready' | 'stopping';
export type StopReason =
  'idle' | 'max-lifetime' | 'stopped' | 'unhealthy' | 'runtime-deleted' | 'shutdown' | `exited:${string}`;

/** One live session: a dedicated worker pinned to the version it started on. */
export interface Session {
  readonly runtimeId: string;
  readonly sessionId: string;
  readonly version: number;
  state: SessionState;
  worker: Worker | undefined;
  readonly startedAtMs: number;
  lastActivityMs: number;
  inflight: number;
  ping: PingState;
  /** True when it adopted a pre-started warm-pool worker. */
  warm: boolean;
  /** Set while a fresh worker is being swapped in (`restart`): new calls wait for it. */
  replacing?: Promise<void> | undefined;
  /**
   * Another runtime replica started it (a cluster backend: its worker found in the backend's cache,
   * or joined when both started it at once). This one serves it and may stop it; its start and its
   * timers are the other's, and a close forgets it.
   */
  adopted?: boolean;
  /** While it starts: resolves once it is ready, rejects with the start's failure (a 424 or 503). */
  starting?: Promise<void> | undefined;
  /** True while the invocation that started it waits for it (another caller meanwhile: 409). */
  startHeld?: boolean;
}

/** The sessions of one runtime process: their workers, from start to stop. */
export interface SessionManager {
  /**
   * The ready session for this id, starting a worker on first use. Throws 402/409/424 as the spec
   * says. `phase` hears each step of a start (`queue`, `spawn`, `readiness`, or `warm-pool`) for the
   * runtime's StartSession span.
   */
  acquire(target: SessionTarget, sessionId: string, phase?: StartPhaseRecorder): Promise<Session>;
  /** Marks the end of one invocation on the session (resets its idle clock). */
  release(session: Session): void;
  stop(runtimeId: string, sessionId: string): Promise<void>;
  /**
   * Gives each live session of the runtime a fresh worker (a live artifact's new code), keeping the
   * session: the new worker starts beside the old one, calls arriving meanwhile wait for it, and the
   * old one is stopped, without waiting, once its calls in flight ended. Resolves with how many
   * sessions got one; a worker that fails to start leaves its session on the old one (rejects).
   */
  restart(runtimeId: string, targetOf: (session: Session) => SessionTarget): Promise<number>;
  stopRuntime(runtimeId: string): Promise<void>;
  /** Keeps the version's warm pool (sized from its recent demand); drops pools of other versions. */
  refreshWarmPool(target: SessionTarget): void;
  list(): Session[];
  get(runtimeId: string, sessionId: string): Session | undefined;
  warmCount(runtimeId?: string): number;
  /**
   * How to spawn a one-shot command inside a session's sandbox: the same isolation wrapper, working
   * directory, environment and private session dir its worker got.
   */
  commandSpawn(session: Session, argv: string[], timeoutS?: number): CommandSpawn;
  close(): Promise<void>;
}

/** A session this replica starts now (one call in it). */
export function newSession(runtimeId: string, sessionId: string, version: number): Session {
  const nowMs = Date.now();
  return {
    runtimeId,
    sessionId,
    version,
    state: 'starting',
    worker: undefined,
    startedAtMs: nowMs,
    lastActivityMs: nowMs,
    inflight: 1,
    ping: { status: 'Unknown' },
    warm: false,
  };
}

/**
 * A session another replica started, as its backend found it; one still starting is waited for
 * (`starting`), and `failed` hears that its start failed.
 */
export function sharedSession(
  runtimeId: string,
  sessionId: string,
  found: SharedSession,
  startTimeoutMs: number,
  failed: () => void,
): Session {
  const session: Session = {
    ...newSession(runtimeId, sessionId, found.version),
    state: found.ready ? 'ready' : 'starting',
    worker: found.worker,
    startedAtMs: found.createdAtMs,
    inflight: 0,
    warm: found.warm,
    adopted: true,
  };
  if (found.ready) return session;
  session.starting = found.worker.waitReady(startTimeoutMs).then(
    () => {
      session.state = 'ready';
      session.starting = undefined;
    },
    (error: unknown) => {
      failed();
      throw startFailure(error);
    },
  );
  session.starting.catch(() => undefined); // heard by a caller, if one waits
  return session;
}
