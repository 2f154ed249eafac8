// A live session's clocks: its health pings (three failed in a row stop it), its idle timeout and
// maximum lifetime, and — for a pod — the activity notes the session reaper reads (the reaper, one
// replica's, then owns the idle and lifetime stops of every replica's sessions).
import { type RuntimeConfig } from '../config.js';
import { type Session, type StopReason } from './session.js';
import { type Worker } from './worker.js';

const CONSECUTIVE_PING_FAILURES_TO_STOP = 3;

export interface SessionTimingOptions {
  config: Readonly<RuntimeConfig>;
  /** Notes activity on a session's worker (a cluster's), for the shared session reaper. */
  touch?: ((worker: Worker) => void) | undefined;
  /** The idle and lifetime stops are the session reaper's (kubernetes): only pings run here. */
  shared: boolean;
  stop: (session: Session, reason: StopReason) => Promise<void>;
}

export function createSessionTiming({ config, touch, shared, stop: stopSession }: SessionTimingOptions) {
  const timers = new Map<Session, NodeJS.Timeout[]>();
  /**
   * An invocation of a pod's session begins or ends: noted on the pod for the session reaper
   * (throttled), and while calls are in flight, again every ping interval, so that a call longer
   * than the idle timeout keeps its session.
   */
  const inflightNotes = new WeakMap<Session, NodeJS.Timeout>();
  const noteActivity = (session: Session) => {
    const worker = session.worker;
    if (!touch || !worker) return;
    touch(worker);
    const note = inflightNotes.get(session);
    if (session.inflight > 0 && !note) {
      const timer = setInterval(() => touch(worker), config.pingIntervalMs);
      timer.unref();
      inflightNotes.set(session, timer);
    } else if (session.inflight === 0 && note) {
      clearInterval(note);
      inflightNotes.delete(session);
    }
  };

  const clearTimers = (session: Session) => {
    for (const t of timers.get(session) ?? []) clearTimeout(t);
    timers.delete(session);
  };

  /**
   * Health pings of one session, and its idle and lifetime stops — those of a pod are the session
   * reaper's (one replica's, for every replica's sessions), since any replica may serve it.
   */
  const monitor = (session: Session, idleMs: number, maxLifetimeMs: number) => {
    let failures = 0;
    const lifetime = shared
      ? undefined
      : setTimeout(() => void stopSession(session, 'max-lifetime'), maxLifetimeMs);
    const tick = async () => {
      if (session.state !== 'ready') return;
      if (session.inflight === 0) {
        try {
          session.ping = await session.worker!.ping();
          failures = 0;
        } catch {
          failures++;
          if (failures >= CONSECUTIVE_PING_FAILURES_TO_STOP && session.state === 'ready')
            return stopSession(session, 'unhealthy');
        }
        // HealthyBusy keeps a session active; otherwise idle time counts from the later of the last
        // invocation and the worker's own time_of_last_update.
        const idleSince = Math.max(session.lastActivityMs, session.ping.timeOfLastUpdateMs ?? 0);
        if (
          !shared &&
          session.ping.status !== 'HealthyBusy' &&
          Date.now() - idleSince >= idleMs &&
          session.inflight === 0 &&
          session.state === 'ready'
        )
          return stopSession(session, 'idle');
      }
      const next = setTimeout(() => void tick(), config.pingIntervalMs);
      timers.set(session, lifetime ? [lifetime, next] : [next]);
    };
    const first = setTimeout(() => void tick(), config.pingIntervalMs);
    timers.set(session, lifetime ? [lifetime, first] : [first]);
  };

  return {
    monitor,
    noteActivity,
    /** The session stops: its timers and notes end. */
    forget(session: Session): void {
      clearTimers(session);
      clearInterval(inflightNotes.get(session));
      inflightNotes.delete(session);
    },
  };
}
