// `restart` of a live session (a live artifact's new code): a fresh worker started beside the old
// one, then swapped in once the calls in flight on the old one ended (new ones wait on `replacing`
// meanwhile); the old worker is stopped without anyone waiting for its grace period.
import { type RuntimeConfig } from '../config.js';
import { type Logger } from '../logger.js';
import { type SessionTarget } from './backend.js';
import { type Session } from './session.js';
import { type Worker, WorkerStartError } from './worker.js';

/** `restart` waits this long for a session's calls in flight on the old worker before swapping. */
const DRAIN_MS = 10_000;

/** Resolves once `done()` holds, polling, or after `ms` regardless; true if it held. */
async function until(done: () => boolean, ms: number): Promise<boolean> {
  for (const deadline = Date.now() + ms; !done(); await new Promise((r) => setTimeout(r, 5)))
    if (Date.now() > deadline) return false;
  return true;
}

export interface RestartOptions {
  config: Readonly<RuntimeConfig>;
  logger: Logger;
  /** Whether the session is still the live one of its id. */
  live(session: Session): boolean;
  closing(): boolean;
  /** The worker's exit stops the session from now on. */
  watchExit(session: Session, worker: Worker): void;
  /** Starts a second worker for the session (beside its first) and waits for it to be ready. */
  startFresh(session: Session, target: SessionTarget, onWorker: (worker: Worker) => void): Promise<void>;
}

export function createRestarts(options: RestartOptions) {
  const { config, logger } = options;
  return {
    /** Resolves true once the session runs on a fresh worker; false when it was not live and ready. */
    async replaceWorker(session: Session, target: SessionTarget): Promise<boolean> {
      while (session.replacing) await session.replacing;
      const live = () => options.live(session);
      await until(() => session.state !== 'starting' || !live(), config.startTimeoutMs);
      if (session.state !== 'ready' || !live()) return false;
      let swapped!: () => void;
      session.replacing = new Promise<void>((r) => (swapped = r));
      let fresh: Worker | undefined;
      try {
        await options.startFresh(session, target, (w) => (fresh = w));
        if (options.closing())
          throw new WorkerStartError('The runtime shut down while the session restarted');
        await until(() => session.inflight === 0, DRAIN_MS);
        if (session.state !== 'ready')
          throw new WorkerStartError('the session stopped while its new worker started');
        const old = session.worker;
        session.worker = fresh;
        session.warm = false;
        options.watchExit(session, fresh!);
        void old?.stop(config.stopGraceMs);
        logger.info('session worker replaced', {
          runtimeId: session.runtimeId,
          sessionId: session.sessionId,
          pid: fresh?.pid,
        });
        return true;
      } catch (error) {
        if (fresh && fresh !== session.worker) void fresh.stop(0);
        throw error;
      } finally {
        session.replacing = undefined;
        swapped();
      }
    },
  };
}
