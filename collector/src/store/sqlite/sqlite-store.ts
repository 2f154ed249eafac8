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
import { type Backend, type BackendHealth, type MetricBackend, StoreCorruptError } from '../store.js';
import type { RetentionOptions } from '../read-options.js';
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
  const parts = await openParts(options);
  const integrity = createIntegrityMonitor({
    file: parts.store.path,
    check: () => parts.queries.check(),
    intervalMs: options.integrityCheckMinutes * 60_000,
    logger: options.logger,
  });
  // Before the first acknowledgement: a damaged file found later may lose what was acknowledged.
  await integrity.start();
  const alertWindows = openSqliteAlertWindows(options.dataDir);
  return sqliteBackend({ ...parts, options, integrity, alertWindows });
}

/** The store's connections and threads, in the order they open. */
interface StoreParts {
  /** The main thread's connection. */
  store: SpanStore;
  metrics: SqliteMetricStore;
  writer: WriterThread;
  queries: QueryPool;
}

type StoreState = StoreParts & {
  options: SqliteStoreOptions;
  integrity: SqliteStore['integrity'];
  alertWindows: ReturnType<typeof openSqliteAlertWindows>;
};

/**
 * The main thread's connection creates and migrates the schema, then serves reads, summaries and
 * retention; ingest batches are encoded here and committed by the writer thread. A part that fails
 * to open closes those opened before it.
 */
async function openParts(options: SqliteStoreOptions): Promise<StoreParts> {
  const store = openSpanStore(options);
  const metrics = await orUndo(
    () =>
      createMetricStore({
        dataDir: options.dataDir,
        ...(options.metricLimits ? { limits: options.metricLimits } : {}),
      }),
    () => store.close(),
  );
  const closeStores = async (): Promise<void> => {
    await metrics.close();
    store.close();
  };
  const { traceIndexPercent, logger } = options;
  const writer = await orUndo(
    () => startWriterThread({ path: store.path, traceIndexPercent, logger }),
    closeStores,
  );
  const queries = await orUndo(
    () =>
      createQueryPool({
        path: store.path,
        metricsPath: metrics.path,
        logger,
        size: options.queryWorkers,
        timeoutMs: options.queryTimeoutMs,
      }),
    async () => {
      await writer.close();
      await closeStores();
    },
  );
  return { store, metrics, writer, queries };
}

/** What `open` returns; when it fails, `undo` runs before its error is thrown on. */
async function orUndo<T>(open: () => T | Promise<T>, undo: () => void | Promise<void>): Promise<T> {
  try {
    return await open();
  } catch (error) {
    await undo();
    throw error;
  }
}

function openSpanStore(options: SqliteStoreOptions): SpanStore {
  try {
    return createSpanStore({
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
}

/** The store's Backend over its parts. */
function sqliteBackend(s: StoreState): SqliteStore {
  const { options, store, metrics, writer, queries, integrity } = s;
  const failure = failureOf(integrity);
  // The ingesting store's open roll-up windows as they are now: the thread reads raw points there.
  const metricJson = (metricRead: MetricRead): Promise<Uint8Array> =>
    queries.read('metric', [metricRead, metrics.unwrittenFromUs()]);
  return {
    integrity,
    queryStats: () => ({ ...queries.stats, queued: queries.queued }),
    location: store.path,
    spanStore: store,
    metrics: Object.assign(metrics, { json: metricJson }),
    alertWindows: s.alertWindows,
    writer,
    ingestLingerMs: options.ingestLingerMs,
    write: (spans, logs) => writeBatch(s, failure, spans, logs),
    unwritable: () => integrity.unwritable() ?? writer.failure,
    failure,
    health: () => healthOf(integrity),
    spans: spanReads(s, readRefresher(writer, options.logger)),
    logs: {
      json: (q) => queries.read('logs', [q]),
      ofTrace: (traceId) => queries.readParsed('logsOfTrace', [traceId]),
    },
    // An export admitted (http/export.ts) is not refused half-way: its pages go ahead of queries.
    exportPage: async (table, sel, after, shape) =>
      exportPageFromBytes(
        await queries.readBytes('exportPage', [table, sel, after, shape], after[0] !== -Infinity),
      ),
    // Acknowledged means committed: readable at once.
    caughtUp: async () => undefined,
    applyRetention: (retention) => applyRetention(writer, retention),
    close: () => closeStore(s),
  };
}

/** An error a read or write met: SQLite's words for a damaged file mark the store corrupt. */
function failureOf(integrity: SqliteStore['integrity']): (error: unknown) => unknown {
  return (error) => {
    if (error instanceof StoreCorruptError || !isCorruption(error)) return error;
    // markCorrupt logs the file; the client is told the store is corrupt, not where it is.
    integrity.markCorrupt(error instanceof Error ? error.message : String(error));
    return corruptError(undefined, error);
  };
}

/** Encodes the batch here and commits it on the writer thread; a batch not stored is forgotten. */
async function writeBatch(
  { store, writer }: StoreParts,
  failure: (error: unknown) => unknown,
  spans: SpanRecord[],
  logs: LogRecord[],
): Promise<void> {
  const batch = store.encodeBatch(spans, logs);
  try {
    await writer.write(batch);
  } catch (error) {
    store.forgetBatch(batch);
    throw failure(error);
  }
}

function healthOf(integrity: SqliteStore['integrity']): BackendHealth {
  return integrity.state.status === 'corrupt'
    ? { ok: false, detail: { status: 'corrupt', store: integrity.publicState(), hint: RECOVERY_HINT } }
    : { ok: true };
}

/**
 * Brings stale summaries up to date before a read of them, as the in-process store does: on the
 * writer thread, in slices that let ingest commit in between. Reads arriving meanwhile share it.
 */
function readRefresher(writer: WriterThread, logger: Logger): () => Promise<void> {
  let refreshing: Promise<void> | undefined;
  return () =>
    (refreshing ??= (async () => {
      try {
        const until = performance.now() + READ_REFRESH_MS;
        for (let done = 0, n = 1; n > 0 && done < READ_REFRESH_ITEMS && performance.now() < until; done += n)
          n = await writer.refreshSummaries(REFRESH_SLICE_ITEMS, REFRESH_SLICE_MS);
      } catch (error) {
        // The writer thread is down (restarting) or the store is closing: the read answers with
        // the summaries as stored rather than failing.
        logger.warn('summary refresh before a read failed', { error });
      } finally {
        refreshing = undefined;
      }
    })());
}

/** The span reads, on the query threads; those of summaries after refreshForRead. */
function spanReads(
  { store, writer, queries }: StoreParts,
  refreshForRead: () => Promise<void>,
): SqliteStore['spans'] {
  const readBytes = queries.readBytes.bind(queries);
  const read = queries.readParsed.bind(queries);
  return {
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
  };
}

/** On the writer thread, a DELETE chunk per message: ingest commits in between. */
async function applyRetention(writer: WriterThread, retention: RetentionOptions): Promise<number> {
  const nowMs = Date.now();
  let deleted = 0;
  for (let step = { deleted: 0, more: true }; step.more; deleted += step.deleted)
    step = await writer.retain(retention, nowMs);
  if (deleted) await writer.retain(retention, nowMs, true);
  return deleted;
}

async function closeStore({
  integrity,
  queries,
  writer,
  store,
  metrics,
  alertWindows,
}: StoreState): Promise<void> {
  integrity.close();
  await queries.close();
  // The writer's connection closes first, so the main one is the last: it checkpoints the
  // WAL into the database and removes it.
  await writer.close();
  store.close();
  await metrics.close();
  alertWindows.close();
}
