// The collector's background upkeep on any store: summaries rebuilt while ingest pauses, and
// retention (spans, logs and metric points) on a timer.
import type { Logger } from './logger.js';
import type { Backend } from './store/store.js';

/** A background summary slice: this many traces and sessions per transaction. */
const SUMMARY_SLICE_ITEMS = 8;

export interface BackgroundJobsOptions {
  backend: Backend;
  logger: Logger;
  /** How often stale summaries are rebuilt (0: only on read). */
  summaryRefreshIntervalMs: number;
  retentionIntervalMs: number;
  maxAgeMs: number;
  maxBytes: number;
  /** When ingest last committed (epoch ms): summaries wait for a pause. */
  lastCommitMs: () => number;
}

/** Starts the timers; `stop()` ends them (a slice running finishes its step). */
export function startBackgroundJobs(options: BackgroundJobsOptions): { stop(): void } {
  const { backend, logger } = options;
  let stopped = false;
  let refreshing = false;
  /**
   * Rebuilds up to `budget` summaries in slices of a few milliseconds, yielding to the event loop
   * between them: a store with thousands of stale traces (a restart, a burst) never holds up
   * ingest or /healthz for longer than a slice.
   */
  const refreshSlices = async (budget: number): Promise<void> => {
    refreshing = true;
    try {
      for (let n = 1; n > 0 && budget > 0 && !stopped;) {
        n = await backend.spans.refreshSummaries(SUMMARY_SLICE_ITEMS);
        budget -= n;
        await new Promise((resolve) => setImmediate(resolve));
      }
    } catch (error) {
      logger.warn('summary refresh failed', { error });
    } finally {
      refreshing = false;
    }
  };
  const refreshMs = options.summaryRefreshIntervalMs;
  const refresher =
    refreshMs > 0
      ? setInterval(() => {
          // Summaries are rebuilt when ingest pauses (reads rebuild what they need right away),
          // so a burst of spans is not slowed by re-reading traces that are still growing.
          if (Date.now() - options.lastCommitMs() < refreshMs || refreshing) return;
          void refreshSlices(500);
        }, refreshMs)
      : undefined;
  refresher?.unref();
  const bounds = { maxAgeMs: options.maxAgeMs, maxBytes: options.maxBytes };
  const runRetention = (): void => {
    backend.applyRetention(bounds).then(
      (deleted) => {
        if (deleted) logger.info('retention deleted old spans', { deleted });
      },
      (error: unknown) => logger.warn('retention failed', { error }),
    );
    backend.metrics.applyRetention(bounds).then(
      (points) => {
        if (points) logger.info('retention deleted old metric points', { points });
      },
      (error: unknown) => logger.warn('metric retention failed', { error }),
    );
  };
  const retention = setInterval(runRetention, options.retentionIntervalMs);
  retention.unref();
  return {
    stop(): void {
      stopped = true;
      clearInterval(refresher);
      clearInterval(retention);
    },
  };
}
