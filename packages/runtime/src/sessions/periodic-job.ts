// A shared job that runs `pass` now and then `intervalMs` after each pass ends, until stopped; a
// failed pass is logged and the next one runs on time.
import { type Logger } from '../logger.js';
import { type SharedJob } from './backend.js';

export function periodicJob(
  what: string,
  pass: () => Promise<void>,
  intervalMs: number,
  logger: Logger,
): SharedJob {
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  const tick = () => {
    if (!running) return;
    void pass()
      .catch((error: unknown) => logger.warn(`${what} pass failed`, { error: (error as Error).message }))
      .finally(() => {
        if (running) timer = setTimeout(tick, intervalMs);
      });
  };
  return {
    start() {
      running = true;
      tick();
    },
    stop() {
      running = false;
      clearTimeout(timer);
    },
  };
}
