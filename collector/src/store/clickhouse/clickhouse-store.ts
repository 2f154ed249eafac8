// The ClickHouse store: any number of collectors write to and read from one ClickHouse (or a
// cluster of shards) through the official client over HTTP. A request's records are acknowledged
// once they are in the local spool (clickhouse-writer.ts), which ships them in large batches; while
// ClickHouse is down the spool absorbs ingest up to its limit (then 503 + Retry-After), reads fail
// fast with StoreUnavailableError, and a probe brings the store back (clickhouse-availability.ts).
// Start-up and schema: clickhouse-start.ts. Reads: clickhouse-reads.ts; the query language and
// log search on threads of their own (clickhouse-query-worker.ts).
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from '../../logger.js';
import { type QueryPool, createQueryPool } from '../reader-pool.js';
import {
  type ClickHouseLocation,
  type Backend,
  type MetricBackend,
  StoreUnavailableError,
  type TraceListFilter,
} from '../store.js';
import type { MetricRead } from '../../metrics/metric-read.js';
import { createClickHouseMetricStore } from './clickhouse-metrics.js';
import type { MetricLimits, MetricStore } from '../../metrics/metric-store.js';
import { attributeKeys } from './clickhouse-reads.js';
import { exportPageFromBytes } from '../export-page.js';
import { createClickHouseWriter } from './clickhouse-writer.js';
import { dropOldDays } from './clickhouse-retention.js';
import type { LogQuery } from '../../logs/log-query.js';
import { clickHouseAlertWindows } from './clickhouse-alert-windows.js';
import { type ClickHouseStatements, clickHouseStatements, connectClickHouse } from './clickhouse-client.js';
import { type Availability, createAvailability, createInserter } from './clickhouse-availability.js';
import type { ClickHouseWorkerData } from './clickhouse-query-worker.js';
import { migrate, serverVersionOf } from './clickhouse-start.js';
import { type SchemaTarget, tableName } from './schema-ddl.js';

export { versionAtLeast } from './clickhouse-start.js';

const QUERY_WORKER = new URL(
  import.meta.url.endsWith('.ts') ? './clickhouse-query-worker.ts' : './clickhouse-query-worker.js',
  import.meta.url,
).href;

export interface ClickHouseStoreOptions extends ClickHouseLocation {
  logger: Logger;
  /** How often a store marked down probes ClickHouse (default 1 s). */
  probeIntervalMs?: number;
  /** How long start-up waits for ClickHouse to answer (default 30 s). */
  connectTimeoutMs?: number;
  /** A query's deadline (ClickHouse's max_execution_time, whole seconds; default 30 s). */
  queryTimeoutMs?: number;
  /** Metric records per INSERT at most (bigger batches are split; default 100 000). */
  maxBatchRecords?: number;
  /** The write-ahead spool's folder (spans and logs wait there for ClickHouse; clickhouse-writer.ts). */
  spoolDir: string;
  /** Unshipped spool bytes past which ingest is refused with 503 + Retry-After (default 1 GiB). */
  spoolMaxBytes?: number;
  /**
   * How long the oldest spooled request waits for others before it is shipped (default 1000 ms):
   * each INSERT writes a new part per table, and ClickHouse's cost is mostly per part.
   */
  shipDelayMs?: number;
  /** Query threads (default 1). */
  queryWorkers?: number;
  /** Series limits of the metric tables (attribute cardinality). */
  metricLimits?: Partial<MetricLimits>;
}

export type ClickHouseStore = Backend & {
  /** `SELECT version()` of the server at start. */
  readonly serverVersion: string;
  /** Raw SQL for tests and benchmarks (JSONEachRow rows). */
  select<T>(sql: string): Promise<T[]>;
  /** Metric points, in this database's metric tables (shared by every collector on it). */
  readonly metrics: MetricBackend;
};

/** Connects, checks the server version, creates or migrates the schema. */
export async function createClickHouseStore(options: ClickHouseStoreOptions): Promise<ClickHouseStore> {
  const target: SchemaTarget = {
    database: options.database,
    replicated: options.replicated,
    ...(options.cluster ? { cluster: options.cluster } : {}),
  };
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const client: ClickHouseClient = connectClickHouse({ ...options, requestTimeoutMs });
  const sql = clickHouseStatements(client, options.url, options.cluster);
  const T = (name: string): string => tableName(target, name);
  try {
    const serverVersion = await serverVersionOf(sql, options.url, options.connectTimeoutMs ?? 30_000);
    await migrate(sql, target, serverVersion, options.logger);
    const parts = await openParts({ options, client, sql, T, serverVersion, requestTimeoutMs });
    return clickHouseBackend({ ...parts, options, client, sql, T, target, serverVersion });
  } catch (error) {
    await client.close();
    throw error;
  }
}

interface StoreContext {
  options: ClickHouseStoreOptions;
  client: ClickHouseClient;
  sql: ClickHouseStatements;
  /** A table's name in the store's database. */
  T(name: string): string;
  serverVersion: string;
}

interface StoreParts {
  availability: Availability;
  insert: ReturnType<typeof createInserter>;
  writer: ReturnType<typeof createClickHouseWriter>;
  metrics: MetricStore;
  pool: QueryPool;
}

/** The writer and its spool, the metric tables and the query threads, over one connection. */
async function openParts(ctx: StoreContext & { requestTimeoutMs: number }): Promise<StoreParts> {
  const { options, client, sql, T } = ctx;
  const insertSettings: Record<string, 0 | 1> = options.cluster ? { insert_distributed_sync: 1 } : {};
  const availability = createAvailability({
    client,
    logger: options.logger,
    url: options.url,
    probeIntervalMs: options.probeIntervalMs ?? 1000,
    onBack: () => writer.retryNow(),
  });
  const insert = createInserter({
    client,
    table: T,
    insertSettings,
    maxBatch: options.maxBatchRecords ?? 100_000,
    sql,
    availability,
  });
  const writer = createClickHouseWriter({
    client,
    logger: options.logger,
    table: T,
    select: sql.select,
    insertSettings,
    spoolDir: options.spoolDir,
    spoolMaxBytes: options.spoolMaxBytes ?? 1024 * 1024 * 1024,
    ...(options.shipDelayMs !== undefined ? { shipDelayMs: options.shipDelayMs } : {}),
    onUnreachable(error) {
      const e = error instanceof StoreUnavailableError ? error : sql.unavailableOr(error);
      if (!(e instanceof StoreUnavailableError)) return undefined;
      availability.markDown(e);
      return e;
    },
  });
  const metrics = await createClickHouseMetricStore({
    location: locationOf(options),
    table: T,
    select: sql.select,
    insert,
    unavailable: availability.down,
    ...(options.metricLimits ? { limits: options.metricLimits } : {}),
  });
  return { availability, insert, writer, metrics, pool: await openQueryPool(ctx) };
}

/**
 * Queries run on threads of their own (clickhouse-query-worker.ts), as on SQLite: the parts the
 * language evaluates in JS would hold up ingest and /healthz on this one.
 */
function openQueryPool({
  options,
  T,
  serverVersion,
  requestTimeoutMs,
}: StoreContext & { requestTimeoutMs: number }) {
  const queryTimeoutMs = options.queryTimeoutMs ?? 30_000;
  return createQueryPool({
    entry: QUERY_WORKER,
    extra: {
      url: options.url,
      username: options.username,
      password: options.password,
      requestTimeoutMs,
      queryTimeoutMs,
      table: T('spans'),
      rollupTable: T('span_rollup'),
      serverVersion,
      database: options.database,
    } satisfies ClickHouseWorkerData,
    logger: options.logger,
    size: options.queryWorkers ?? 1,
    timeoutMs: queryTimeoutMs,
  });
}

const locationOf = (o: ClickHouseStoreOptions): string =>
  `${o.url}/${o.database}${o.cluster ? ` (cluster ${o.cluster})` : ''}`;

/** The store's Backend over its parts. */
function clickHouseBackend(store: StoreContext & StoreParts & { target: SchemaTarget }): ClickHouseStore {
  const { sql, T, writer, metrics, pool, insert } = store;
  /** A read that first ships what this collector acknowledged: it sees its own writes. */
  const fresh =
    <A extends unknown[], R>(read: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await writer.caughtUp();
      return read(...args);
    };
  return {
    location: locationOf(store.options),
    serverVersion: store.serverVersion,
    select: sql.select,
    alertWindows: clickHouseAlertWindows({ table: T, select: sql.select, insert }),
    // The log search and metric reads run on the query threads, as on SQLite (the rows they decode
    // and add up held up ingest and /healthz here).
    metrics: Object.assign(metrics, { json: (read: MetricRead) => pool.read('metric', [read]) }),
    queryStats: () => ({ ...pool.stats, queued: pool.queued }),
    write: (spans, logs) => writer.write(spans, logs),
    // The spool batches requests itself (the shipper's delay): the ingest queue holds none.
    ingestLingerMs: 0,
    unwritable: () => writer.unwritable(),
    failure: (error) => error,
    health: () => ({ ok: true, detail: { spool: writer.stats() } }),
    spans: spanReads(store, fresh),
    logs: {
      json: fresh((q: LogQuery) => pool.read('logs', [q])),
      ofTrace: fresh((traceId: string) => pool.readParsed('logsOfTrace', [traceId])),
    },
    // An export admitted (http/export.ts) is not refused half-way: its pages go ahead of queries.
    // Not fresh(): each page shipping the spool would cut its batches to a page's worth of ingest.
    exportPage: async (table, sel, after, shape) =>
      exportPageFromBytes(
        await pool.readBytes('exportPage', [table, sel, after, shape], after[0] !== -Infinity),
      ),
    caughtUp: () => writer.caughtUp(),
    applyRetention: (opts) => dropOldDays(sql, store.target, opts),
    async close(): Promise<void> {
      store.availability.close();
      await writer.close();
      await metrics.close();
      await pool.close();
      await store.client.close();
    },
  };
}

type Fresh = <A extends unknown[], R>(read: (...args: A) => Promise<R>) => (...args: A) => Promise<R>;

/** The span reads: on the query threads, each after this collector's own writes are shipped. */
function spanReads({ pool, T, sql }: StoreContext & StoreParts, fresh: Fresh): ClickHouseStore['spans'] {
  return {
    queryJson: fresh((q: string, range?: Parameters<typeof pool.run>[1]) => pool.run(q, range)),
    spansOfTrace: fresh((traceId: string) => pool.readParsed('spansOfTrace', [traceId])),
    traceJson: fresh((traceId: string) => pool.readBytes('trace', [traceId])),
    sessionJson: fresh((sessionId: string) => pool.readBytes('getSession', [sessionId])),
    listTraces: fresh((filter?: TraceListFilter) => pool.readParsed('listTraces', [filter])),
    listSessions: fresh((limit?: number) => pool.readParsed('listSessions', [limit])),
    getSession: fresh((sessionId: string) => pool.readParsed('getSession', [sessionId])),
    services: fresh(() => pool.readParsed('services', [])),
    attributeKeys: fresh(() => attributeKeys({ T, select: sql.select })),
    // Summaries are kept by materialized views and finished on read: nothing to refresh.
    refreshSummaries: async () => 0,
  };
}
