// The embedded store behind the storage boundary: the SQLite span store (span-store.ts) and the
// metrics store beside it (metric-store.ts), both read on the query threads (../reader-pool.ts,
// read-ops.ts); spans are written by the writer thread (writer-thread.ts), which also rebuilds the
// summaries and runs retention, metric points by the main thread. The main thread's own connection
// creates and migrates the span schema at start.
import type { Logger } from '../../logger.js';
import type { MetricLimits } from '../../metrics/metric-store.js';
import { type SqliteMetricStore, createMetricStore } from '../../metrics/sqlite-metric-store.js';
import { join } from 'node:path';
import { type QueryPool, createQueryPool } from '../reader-pool.js';
import { RECOVERY_HINT, corruptError, createIntegrityMonitor, isCorruption } from './integrity.js';
import type { LogRecord, SpanRecord } from '../../wire-types.js';
import { type SpanStore, createSpanStore } from './span-store.js';
import { exportPageFromBytes } from '../export-page.js';
import type { MetricRead } from '../../metrics/metric-read.js';
import { type Backend, type MetricBackend, StoreCorruptError } from '../store.js';
import { type WriterThread, startWriterThread } from './writer-thread.js';
import { openSqliteAlertWindows } from './alert-windows.js';

export interface SqliteStoreOptions {
  dataDir: string;
  traceIndexPercent: number;
  logger: Logger;
  /** Query threads, each with its own read-only connection. */
  queryWorkers: number;
  /** A query's deadline; its thread is replaced when it runs past. */
  queryTimeoutMs: number;
  /** How often `PRAGMA quick_check` runs on a query thread (0: only at start). */
  integrityCheckMinutes: number;
  /** Series limits of the metrics store (attribute cardinality). */
  metricLimits?: Partial<MetricLimits>;
  /** How long ingest holds a request for others to join its commit (AGENTRT_INGEST_LINGER_MS). */
  ingestLingerMs: number;
}

export type SqliteStore = Backend & {
  /** The span store (the main thread's connection): tests, benchmarks, embedding. */
  readonly spanStore: SpanStore;
  /** The writer thread that commits ingested batches. */
  readonly writer: WriterThread;
  /** Integrity checks of the database file (corrupt: ingest refused, /healthz 503). */
  readonly integrity: ReturnType<typeof createIntegrityMonitor>;
  /** metrics.sqlite beside the span store. */
  readonly metrics: SqliteMetricStore & MetricBackend;
};

/**
 * Stale summaries a read of summaries waits for (rebuilt on the writer thread first): at most this
 * many, for at most this long; the background refresh catches up with the rest.
 */
const READ_REFRESH_ITEMS = 2000;
const READ_REFRESH_MS = 1000;
/**
 * A writer-thread summary transaction: at most this many summaries or this much time (a session of
 * many traces is slow to rebuild); writes queued meanwhile commit between slices.
 */
const REFRESH_SLICE_ITEMS = 64;
const REFRESH_SLICE_MS = 10;

/** Opens (creates, migrates) the SQLite store and starts its writer thread. */
export async function createSqliteStore(options: SqliteStoreOptions): Promise<SqliteStore> {
  // The main thread's connection creates and migrates the schema, then serves reads, summaries and
  // retention; ingest batches are encoded here and committed by the writer thread.
  let store: SpanStore;
  try {
    store = createSpanStore({
      dataDir: options.dataDir,
      traceIndexPercent: options.traceIndexPercent,
      backgroundCheckpoints: true,
    });
  } catch (error) {
    if (!isCorruption(error)) throw error;
    // A header too damaged to open: nothing can run on it; say which file and how to recover.
    throw new Error(
      `the store ${join(options.dataDir, 'collector.sqlite')} is corrupt (${(error as Error).message}); ${RECOVERY_HINT}`,
      { cause: error },
    );
  }
  let metrics: SqliteMetricStore;
  try {
    metrics = createMetricStore({
      dataDir: options.dataDir,
      ...(options.metricLimits ? { limits: options.metricLimits } : {}),
    });
  } catch (error) {
    store.close();
    throw error;
  }
  let writer: WriterThread;
  try {
    writer = await startWriterThread({
      path: store.path,
      traceIndexPercent: options.traceIndexPercent,
      logger: options.logger,
    });
  } catch (error) {
    await metrics.close();
    store.close();
    throw error;
  }
  let queries: QueryPool;
  try {
    queries = await createQueryPool({
      path: store.path,
      metricsPath: metrics.path,
      logger: options.logger,
      size: options.queryWorkers,
      timeoutMs: options.queryTimeoutMs,
    });
  } catch (error) {
    await writer.close();
    await metrics.close();
    store.close();
    throw error;
  }
  const integrity = createIntegrityMonitor({
    file: store.path,
    check: () => queries.check(),
    intervalMs: options.integrityCheckMinutes * 60_000,
    logger: options.logger,
  });
  // Before the first acknowledgement: a damaged file found later may lose what was acknowledged.
  await integrity.start();
  const alertWindows = openSqliteAlertWindows(options.dataDir);

  const readBytes = queries.readBytes.bind(queries);
  const read = queries.readParsed.bind(queries);
  let refreshing: Promise<void> | undefined;
  /**
   * Brings stale summaries up to date before a read of them, as the in-process store does: on the
   * writer thread, in slices that let ingest commit in between. Reads arriving meanwhile share it.
   */
  const refreshForRead = (): Promise<void> =>
    (refreshing ??= (async () => {
      try {
        const until = performance.now() + READ_REFRESH_MS;
        for (let done = 0, n = 1; n > 0 && done < READ_REFRESH_ITEMS && performance.now() < until; done += n)
          n = await writer.refreshSummaries(REFRESH_SLICE_ITEMS, REFRESH_SLICE_MS);
      } catch (error) {
        // The writer thread is down (restarting) or the store is closing: the read answers with
        // the summaries as stored rather than failing.
        options.logger.warn('summary refresh before a read failed', { error });
      } finally {
        refreshing = undefined;
      }
    })());
  /** An error a read or write met: SQLite's words for a damaged file mark the store corrupt. */
  const failure = (error: unknown): unknown => {
    if (error instanceof StoreCorruptError || !isCorruption(error)) return error;
    // markCorrupt logs the file; the client is told the store is corrupt, not where it is.
    integrity.markCorrupt(error instanceof Error ? error.message : String(error));
    return corruptError(undefined, error);
  };
  // The ingesting store's open roll-up windows as they are now: the thread reads raw points there.
  const metricJson = (metricRead: MetricRead): Promise<Uint8Array> =>
    queries.read('metric', [metricRead, metrics.unwrittenFromUs()]);
  return {
    integrity,
    queryStats: () => ({ ...queries.stats, queued: queries.queued }),
    location: store.path,
    spanStore: store,
    metrics: Object.assign(metrics, { json: metricJson }),
    alertWindows,
    writer,
    ingestLingerMs: options.ingestLingerMs,
    async write(spans: SpanRecord[], logs: LogRecord[]): Promise<void> {
      const batch = store.encodeBatch(spans, logs);
      try {
        await writer.write(batch);
      } catch (error) {
        store.forgetBatch(batch);
        throw failure(error);
      }
    },
    unwritable: () => integrity.unwritable() ?? writer.failure,
    failure,
    health: () =>
      integrity.state.status === 'corrupt'
        ? { ok: false, detail: { status: 'corrupt', store: integrity.publicState(), hint: RECOVERY_HINT } }
        : { ok: true },
    spans: {
      queryJson: (query, range) => queries.run(query, range),
      spansOfTrace: (traceId) => read('spansOfTrace', [traceId]),
      async listTraces(filter) {
        await refreshForRead();
        return read('listTraces', [filter]);
      },
      async listSessions(limit) {
        await refreshForRead();
        return read('listSessions', [limit]);
      },
      async getSession(sessionId) {
        await refreshForRead();
        return read('getSession', [sessionId]);
      },
      services: () => read('services', []),
      // The encoder's key set, in memory (at most maxAttributeKeys): no SQL.
      attributeKeys: async () => store.attributeKeys(),
      traceJson: (traceId) => readBytes('trace', [traceId]),
      async sessionJson(sessionId) {
        await refreshForRead();
        return readBytes('getSession', [sessionId]);
      },
      refreshSummaries: (limit) => writer.refreshSummaries(limit, REFRESH_SLICE_MS),
    },
    logs: {
      json: (q) => queries.read('logs', [q]),
      ofTrace: (traceId) => read('logsOfTrace', [traceId]),
    },
    async exportPage(table, sel, after, shape) {
      // An export admitted (http/export.ts) is not refused half-way: its pages go ahead of queries.
      return exportPageFromBytes(
        await readBytes('exportPage', [table, sel, after, shape], after[0] !== -Infinity),
      );
    },
    // Acknowledged means committed: readable at once.
    caughtUp: async () => undefined,
    // On the writer thread, a DELETE chunk per message: ingest commits in between.
    async applyRetention(retention) {
      const nowMs = Date.now();
      let deleted = 0;
      for (let step = { deleted: 0, more: true }; step.more; deleted += step.deleted)
        step = await writer.retain(retention, nowMs);
      if (deleted) await writer.retain(retention, nowMs, true);
      return deleted;
    },
    async close(): Promise<void> {
      integrity.close();
      await queries.close();
      // The writer's connection closes first, so the main one is the last: it checkpoints the
      // WAL into the database and removes it.
      await writer.close();
      store.close();
      await metrics.close();
      alertWindows.close();
    },
  };
}
