// Queries run on worker threads, each with its own read-only SQLite connection (or, for the
// ClickHouse store, its own ClickHouse client: clickhouse-query-worker.ts), so a heavy query
// never holds up ingest, the UI or health checks on the main thread. Every query has a deadline
// that really stops it: the engine's own budget stops a scan between rows, SQLite stops a single
// long statement itself (sqlite-deadline.ts), and past a grace period the thread is terminated (the
// sort after a scan, which no check reaches) and a fresh one takes its place.
import type { Logger } from '../logger.js';
import type { ReadOp, ReadOps } from './sqlite/read-ops.js';
import type { QueryOptions } from '../query/engine.js';
import type { QueryPoolData } from './query-protocol.js';
import {
  type PoolSettings,
  type PoolState,
  type QueryPoolStats,
  closePool,
  enqueue,
  enqueueCheck,
  startThreads,
} from './query-scheduler.js';

const decoder = new TextDecoder();

/**
 * Whose threads these are: SQLite's (its sqlite/reader-worker over the database file, created and migrated
 * already, and metrics.sqlite for metric reads), or another store's (its thread module, and what
 * that starts with besides).
 */
export type QueryThreads = { path: string; metricsPath?: string } | { entry: string; extra: unknown };

export type QueryPoolOptions = QueryThreads & {
  logger: Logger;
  /** Query threads (default 2; the collector passes its config, cores − 1). */
  size?: number;
  /** A query's deadline (default 30 s): its scan stops there, its thread soon after. */
  timeoutMs?: number;
  /** Past the deadline, how long a thread may take to notice before it is terminated (default 1 s). */
  graceMs?: number;
  /** Queries waiting for a thread before new ones get 429 (default 16). */
  maxQueued?: number;
  /** Largest result (JSON bytes) before the query fails with a hint (default 64 MiB). */
  maxResultBytes?: number;
  /** Most rows a query may hold in memory for a later sort or stats (default 1,000,000). */
  maxRows?: number;
  /** V8 heap of a query thread (default 512 MiB); a query that needs more fails, the thread is replaced. */
  maxHeapMb?: number;
};

/** The query threads of a store. */
export interface QueryPool {
  readonly stats: QueryPoolStats;
  /** Queries waiting for a thread. */
  readonly queued: number;
  /**
   * Runs a query on a thread; resolves with the QueryResponse as JSON bytes. Rejects with
   * QueryFailure (a 400 body), ReaderBusyError when too many queries wait, ReaderClosedError
   * when closing.
   */
  run(query: string, range?: Pick<QueryOptions, 'startMs' | 'endMs'>): Promise<Uint8Array>;
  /**
   * Runs one of the store's reads (read-ops.ts) on a thread, with the same deadline, result cap
   * and 429 as a query; resolves with its result as JSON bytes (`null` for undefined).
   */
  read<K extends ReadOp>(
    op: K,
    args: Parameters<ReadOps[K]>,
    options?: { ahead?: boolean },
  ): Promise<Uint8Array>;
  /** A read's result as bytes; `null` (an undefined result: no such trace, session, page) as undefined. */
  readBytes<K extends ReadOp>(
    op: K,
    args: Parameters<ReadOps[K]>,
    ahead?: boolean,
  ): Promise<Uint8Array | undefined>;
  /** A read's result, parsed (bounded results: lists of at most 1000, one summary). */
  readParsed<K extends ReadOp>(op: K, args: Parameters<ReadOps[K]>): Promise<Awaited<ReturnType<ReadOps[K]>>>;
  /**
   * Runs SQLite's `PRAGMA quick_check` on a query thread (ahead of waiting queries); resolves with
   * its messages: `['ok']` for a sound database.
   */
  check(timeoutMs?: number): Promise<string[]>;
  /** Fails what waits, stops the threads. */
  close(): Promise<void>;
}

const ENTRY = new URL(
  import.meta.url.endsWith('.ts') ? './sqlite/reader-worker.ts' : './sqlite/reader-worker.js',
  import.meta.url,
).href;

/** The options with their defaults. */
function settingsOf(options: QueryPoolOptions): PoolSettings {
  const data: QueryPoolData = {
    ...('path' in options
      ? {
          entry: ENTRY,
          path: options.path,
          ...(options.metricsPath ? { metricsPath: options.metricsPath } : {}),
        }
      : { entry: options.entry, path: '', extra: options.extra }),
    maxResultBytes: options.maxResultBytes ?? 64 * 1024 * 1024,
    maxRows: options.maxRows ?? 1_000_000,
  };
  return {
    data,
    logger: options.logger,
    timeoutMs: options.timeoutMs ?? 30_000,
    graceMs: options.graceMs ?? 1000,
    maxQueued: options.maxQueued ?? 16,
    maxHeapMb: options.maxHeapMb ?? 512,
  };
}

/** Starts the query threads; resolves once they are ready. */
export async function createQueryPool(options: QueryPoolOptions): Promise<QueryPool> {
  const pool: PoolState = {
    settings: settingsOf(options),
    queue: [],
    slots: [],
    stats: { queries: 0, stoppedAtDeadline: 0, replacedThreads: 0, refused: 0 },
    closed: false,
    nextId: 1,
  };
  await startThreads(pool, Math.max(1, options.size ?? 2));
  return poolApi(pool);
}

function poolApi(pool: PoolState): QueryPool {
  const { timeoutMs } = pool.settings;
  return {
    stats: pool.stats,
    get queued(): number {
      return pool.queue.length;
    },
    run(query, range = {}) {
      return enqueue(pool, { kind: 'query', query, options: { ...range, maxQueryMs: timeoutMs } });
    },
    read(op, args, { ahead = false } = {}) {
      return enqueue(pool, { kind: 'read', op, args, query: '', options: {} }, ahead);
    },
    async readBytes(op, args, ahead = false) {
      const json = await this.read(op, args, { ahead });
      return json.length === 4 && decoder.decode(json) === 'null' ? undefined : json;
    },
    async readParsed<K extends ReadOp>(
      op: K,
      args: Parameters<ReadOps[K]>,
    ): Promise<Awaited<ReturnType<ReadOps[K]>>> {
      const json = await this.readBytes(op, args);
      return (json === undefined ? undefined : JSON.parse(decoder.decode(json))) as Awaited<
        ReturnType<ReadOps[K]>
      >;
    },
    check(checkTimeoutMs = 600_000) {
      return enqueueCheck(pool, checkTimeoutMs).then(
        (json) => JSON.parse(Buffer.from(json).toString()) as string[],
      );
    },
    close: () => closePool(pool),
  };
}
