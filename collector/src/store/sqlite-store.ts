// The embedded store behind the storage boundary: the SQLite span store (span-store.ts) read on the
// main thread, written by its writer thread (writer-thread.ts).
import type { Logger } from '../logger.js';
import { join } from 'node:path';
import { type QueryPool, createQueryPool } from '../query/query-pool.js';
import { RECOVERY_HINT, createIntegrityMonitor, isCorruption } from './integrity.js';
import type { LogRecord, SpanRecord } from '../wire-types.js';
import { type SpanStore, createSpanStore } from './span-store.js';
import type { CollectorStore } from './store.js';
import { type WriterThread, startWriterThread } from './writer-thread.js';

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
}

export type SqliteStore = CollectorStore & {
  readonly kind: 'sqlite';
  /** The span store (the main thread's connection): tests, benchmarks, embedding. */
  readonly spans: SpanStore;
  /** The writer thread that commits ingested batches. */
  readonly writer: WriterThread;
  /** Integrity checks of the database file (corrupt: ingest refused, /healthz 503). */
  readonly integrity: ReturnType<typeof createIntegrityMonitor>;
  /** The query threads' counters, for /healthz. */
  queryStats(): Record<string, number>;
};

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
  let writer: WriterThread;
  try {
    writer = await startWriterThread({
      path: store.path,
      traceIndexPercent: options.traceIndexPercent,
      logger: options.logger,
    });
  } catch (error) {
    store.close();
    throw error;
  }
  let queries: QueryPool;
  try {
    queries = await createQueryPool({
      path: store.path,
      logger: options.logger,
      size: options.queryWorkers,
      timeoutMs: options.queryTimeoutMs,
    });
  } catch (error) {
    await writer.close();
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
  return {
    kind: 'sqlite',
    integrity,
    queryStats: () => ({ ...queries.stats, queued: queries.queued }),
    location: store.path,
    spans: store,
    writer,
    async write(spans: SpanRecord[], logs: LogRecord[]): Promise<void> {
      const batch = store.encodeBatch(spans, logs);
      try {
        await writer.write(batch);
      } catch (error) {
        store.forgetBatch(batch);
        if (isCorruption(error)) integrity.markCorrupt((error as Error).message);
        throw error;
      }
    },
    unavailable: () => writer.failure,
    queryJson: (query, range) => queries.run(query, range),
    spansOfTrace: async (traceId) => store.spansOfTrace(traceId),
    logsOfTrace: async (traceId) => store.logsOfTrace(traceId),
    traceSummary: async (traceId) => store.traceSummary(traceId),
    listTraces: async (filter) => store.listTraces(filter),
    listSessions: async (limit) => store.listSessions(limit),
    getSession: async (sessionId) => store.getSession(sessionId),
    services: async () => store.services(),
    attributeKeys: async () => store.attributeKeys(),
    async exportRange(startMs, endMs, limit) {
      const range = [Math.floor(startMs * 1000), Math.floor(endMs * 1000)] as const;
      const spans = (
        store
          .prepare('SELECT doc FROM spans WHERE start_us >= ? AND start_us < ? ORDER BY start_us LIMIT ?')
          .all(range[0], range[1], limit) as { doc: string }[]
      ).map((r) => JSON.parse(r.doc) as SpanRecord);
      const logs = (
        store
          .prepare('SELECT doc FROM logs WHERE time_us >= ? AND time_us < ? ORDER BY time_us LIMIT ?')
          .all(range[0], range[1], limit) as { doc: string }[]
      ).map((r) => JSON.parse(r.doc) as LogRecord);
      return { spans, logs };
    },
    refreshSummaries: async (limit) => store.refreshSummaries(limit),
    applyRetention: async (retention) => store.applyRetention(retention),
    async close(): Promise<void> {
      integrity.close();
      await queries.close();
      // The writer's connection closes first, so the main one is the last: it checkpoints the
      // WAL into the database and removes it.
      await writer.close();
      store.close();
    },
  };
}
