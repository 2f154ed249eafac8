// A shared job that runs `pass` now and then `intervalMs` after each pass ends, until stopped; a
// failed pass is logged and the next one runs on time. `kick` asks for a pass now rather than at
// the next interval (one right after the running pass, if there is one).
import { type Logger } from '../logger.js';
import { type SharedJob } from './backend.js';

export function periodicJob(
  what: string,
  pass: () => Promise<void>,
  intervalMs: number,
  logger: Logger,
): SharedJob & { kick(): void } {
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let passing = false;
  let again = false;
  const run = () => {
    clearTimeout(timer);
    if (!running) return;
    if (passing) {
      again = true;
      return;
    }
    passing = true;
    void pass()
      .catch((error: unknown) => logger.warn(`${what} pass failed`, { error: (error as Error).message }))
      .finally(() => {
        passing = false;
        if (!running) return;
        if (again) {
          again = false;
          run();
        } else timer = setTimeout(run, intervalMs);
      });
  };
  return {
    start() {
      running = true;
      run();
    },
    stop() {
      running = false;
      clearTimeout(timer);
    },
    kick() {
      if (running) setImmediate(run);
    },
  };
}
