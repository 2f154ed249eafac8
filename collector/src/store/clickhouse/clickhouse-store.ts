// The ClickHouse store: any number of collectors write to and read from one ClickHouse (or a
// cluster of shards) through the official client over HTTP. A request's records are acknowledged
// once they are in the local spool (clickhouse-writer.ts), which ships them in large batches; while
// ClickHouse is down the spool absorbs ingest up to its limit (then 503 + Retry-After), reads fail
// fast with StoreUnavailableError, and a probe brings the store back. Reads: clickhouse-reads.ts;
// the query language and log search on threads of their own (clickhouse-query-worker.ts).
import { Readable } from 'node:stream';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from '../../logger.js';
import { type QueryPool, createQueryPool } from '../reader-pool.js';
import {
  type ClickHouseLocation,
  type Backend,
  type MetricBackend,
  StoreConfigError,
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
import { connectClickHouse, isUnreachable } from './clickhouse-client.js';
import type { ClickHouseWorkerData } from './clickhouse-query-worker.js';
import { type SchemaTarget, migrationsTable, tableName } from './schema-ddl.js';
import { CLICKHOUSE_SCHEMA_VERSION, MIGRATIONS, MIN_CLICKHOUSE_VERSION } from './schema.js';

const QUERY_WORKER = new URL(
  import.meta.url.endsWith('.ts') ? './clickhouse-query-worker.ts' : './clickhouse-query-worker.js',
  import.meta.url,
).href;
/** A read decoding rows gives the event loop a turn this often (ms). */
const BREATHE_EVERY_MS = 5;

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

/** Compares a version string like 18.16.1 with [major, minor]. */
export function versionAtLeast(version: string, min: readonly [number, number]): boolean {
  const [major = 0, minor = 0] = version.split('.').map((p) => Number.parseInt(p, 10));
  return major > min[0] || (major === min[0] && minor >= min[1]);
}

/** Connects, checks the server version, creates or migrates the schema. */
export async function createClickHouseStore(options: ClickHouseStoreOptions): Promise<ClickHouseStore> {
  const logger = options.logger;
  const target: SchemaTarget = {
    database: options.database,
    replicated: options.replicated,
    ...(options.cluster ? { cluster: options.cluster } : {}),
  };
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const client: ClickHouseClient = connectClickHouse({ ...options, requestTimeoutMs });
  const location = `${options.url}/${options.database}${options.cluster ? ` (cluster ${options.cluster})` : ''}`;

  /**
   * Runs a SELECT and hands each row to `each` as it is decoded. Every few milliseconds of that work
   * it gives the event loop a turn: a read of thousands of whole records (a session list parses
   * every span of its traces) would otherwise hold up ingest and /healthz for as long as a second.
   */
  async function eachRow<T>(sql: string, each: (row: T) => void): Promise<void> {
    try {
      const rs = await client.query({ query: sql, format: 'JSONEachRow' });
      let turn = performance.now();
      for await (const rows of rs.stream<T>()) {
        for (const row of rows) each(row.json());
        if (performance.now() - turn > BREATHE_EVERY_MS) {
          await new Promise((resolve) => setImmediate(resolve));
          turn = performance.now();
        }
      }
    } catch (error) {
      throw unavailableOr(error);
    }
  }

  async function select<T>(sql: string): Promise<T[]> {
    const out: T[] = [];
    await eachRow<T>(sql, (row) => out.push(row));
    return out;
  }

  async function command(sql: string): Promise<void> {
    try {
      await client.command({
        query: sql,
        clickhouse_settings: options.cluster ? { distributed_ddl_task_timeout: '60' } : {},
      });
    } catch (error) {
      throw unavailableOr(error);
    }
  }

  function unavailableOr(error: unknown): Error {
    if (isUnreachable(error)) {
      return new StoreUnavailableError(
        `ClickHouse at ${options.url} is not answering (${(error as Error).message})`,
        {
          cause: error,
        },
      );
    }
    return error as Error;
  }

  // Start-up: wait for the server, then check what it can run.
  let serverVersion = '';
  const deadline = Date.now() + (options.connectTimeoutMs ?? 30_000);
  for (;;) {
    try {
      serverVersion = (await select<{ v: string }>('SELECT version() AS v'))[0]!.v;
      break;
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) || Date.now() > deadline) {
        await client.close();
        throw error;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  if (!versionAtLeast(serverVersion, MIN_CLICKHOUSE_VERSION)) {
    await client.close();
    throw new StoreConfigError(
      `ClickHouse ${serverVersion} at ${options.url} is older than ${MIN_CLICKHOUSE_VERSION.join('.')}, the oldest release this collector runs on`,
    );
  }

  async function migrate(): Promise<void> {
    const ddl = async (sql: string): Promise<void> => {
      try {
        await command(sql);
      } catch (error) {
        if (error instanceof StoreUnavailableError) throw error;
        throw new StoreConfigError(
          `ClickHouse ${serverVersion} could not run ${JSON.stringify(sql.replace(/\s+/g, ' ').slice(0, 120))}: ${(error as Error).message}`,
          { cause: error },
        );
      }
    };
    await ddl(
      `CREATE DATABASE IF NOT EXISTS ${target.database}${target.cluster ? ` ON CLUSTER ${target.cluster}` : ''}`,
    );
    await ddl(migrationsTable(target));
    const [row] = await select<{ v: number }>(
      `SELECT max(version) AS v FROM ${target.database}.schema_migrations`,
    );
    const have = Number(row?.v ?? 0);
    if (have > CLICKHOUSE_SCHEMA_VERSION) {
      throw new StoreConfigError(
        `the ClickHouse schema in ${target.database} is version ${have}, newer than this collector's ${CLICKHOUSE_SCHEMA_VERSION}; upgrade the collector`,
      );
    }
    for (let v = have + 1; v <= CLICKHOUSE_SCHEMA_VERSION; v++) {
      for (const sql of MIGRATIONS[v]!(target)) await ddl(sql);
      await command(`INSERT INTO ${target.database}.schema_migrations VALUES (${v}, now())`);
      logger.info('clickhouse schema migrated', { version: v, database: target.database });
    }
  }
  try {
    await migrate();
  } catch (error) {
    await client.close();
    throw error;
  }

  const T = (name: string): string => tableName(target, name);

  // ---- writes ----------------------------------------------------------------------------------
  /** Why reads fail now (ClickHouse not answering), until the probe finds it back. */
  let down: StoreUnavailableError | undefined;
  let probe: NodeJS.Timeout | undefined;
  let closed = false;
  const maxBatch = options.maxBatchRecords ?? 100_000;
  const insertSettings: Record<string, 0 | 1> = options.cluster ? { insert_distributed_sync: 1 } : {};

  function markDown(error: StoreUnavailableError): void {
    if (!down)
      logger.warn('clickhouse unavailable; ingest is spooled until it is back', { error: error.message });
    down = error;
    if (probe || closed) return;
    probe = setInterval(() => {
      client.ping().then(
        (r) => {
          if (!r.success || !down) return;
          logger.info('clickhouse is back', { url: options.url });
          down = undefined;
          writer.retryNow();
          clearInterval(probe);
          probe = undefined;
        },
        () => undefined,
      );
    }, options.probeIntervalMs ?? 1000);
    probe.unref();
  }

  /**
   * INSERTs TabSeparated bodies, one statement each. A ClickHouse that is not there marks the store
   * down and rejects with StoreUnavailableError.
   */
  async function insert(table: string, columns: readonly string[], bodies: Buffer[]): Promise<void> {
    try {
      for (const body of bodies) {
        await client.insert({
          table: T(table),
          columns: columns as [string, ...string[]],
          // One buffer as the body (raw formats take a byte stream, not objects).
          values: Readable.from([body], { objectMode: false }),
          format: 'TabSeparated',
          clickhouse_settings: insertSettings,
        });
      }
    } catch (error) {
      const e = unavailableOr(error);
      if (e instanceof StoreUnavailableError) markDown(e);
      throw e;
    }
  }

  /** TabSeparated lines as INSERT bodies of at most maxBatch lines. */
  function bodiesOf(lines: string[]): Buffer[] {
    const bodies: Buffer[] = [];
    for (let i = 0; i < lines.length; i += maxBatch)
      bodies.push(Buffer.from(lines.slice(i, i + maxBatch).join('')));
    return bodies;
  }

  const writer = createClickHouseWriter({
    client,
    logger,
    table: T,
    select,
    insertSettings,
    spoolDir: options.spoolDir,
    spoolMaxBytes: options.spoolMaxBytes ?? 1024 * 1024 * 1024,
    ...(options.shipDelayMs !== undefined ? { shipDelayMs: options.shipDelayMs } : {}),
    onUnreachable(error) {
      const e = error instanceof StoreUnavailableError ? error : unavailableOr(error);
      if (!(e instanceof StoreUnavailableError)) return undefined;
      markDown(e);
      return e;
    },
  });

  // Queries run on threads of their own (clickhouse-query-worker.ts), as on SQLite: the parts the
  // language evaluates in JS would hold up ingest and /healthz on this one.
  const queryTimeoutMs = options.queryTimeoutMs ?? 30_000;
  let metrics: MetricStore;
  let pool: QueryPool;
  try {
    metrics = await createClickHouseMetricStore({
      location,
      table: T,
      select,
      insert: (table, columns, lines) => insert(table, columns, bodiesOf(lines)),
      unavailable: () => down,
      ...(options.metricLimits ? { limits: options.metricLimits } : {}),
    });
    pool = await createQueryPool({
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
        database: target.database,
      } satisfies ClickHouseWorkerData,
      logger,
      size: options.queryWorkers ?? 1,
      timeoutMs: queryTimeoutMs,
    });
  } catch (error) {
    await client.close();
    throw error;
  }

  /** A read that first ships what this collector acknowledged: it sees its own writes. */
  const fresh =
    <A extends unknown[], R>(read: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await writer.caughtUp();
      return read(...args);
    };
  return {
    location,
    serverVersion,
    select,
    alertWindows: clickHouseAlertWindows({
      table: T,
      select,
      insert: (table, columns, lines) => insert(table, columns, bodiesOf(lines)),
    }),
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
    spans: {
      queryJson: fresh((q: string, range?: Parameters<typeof pool.run>[1]) => pool.run(q, range)),
      spansOfTrace: fresh((traceId: string) => pool.readParsed('spansOfTrace', [traceId])),
      traceJson: fresh((traceId: string) => pool.readBytes('trace', [traceId])),
      sessionJson: fresh((sessionId: string) => pool.readBytes('getSession', [sessionId])),
      listTraces: fresh((filter?: TraceListFilter) => pool.readParsed('listTraces', [filter])),
      listSessions: fresh((limit?: number) => pool.readParsed('listSessions', [limit])),
      getSession: fresh((sessionId: string) => pool.readParsed('getSession', [sessionId])),
      services: fresh(() => pool.readParsed('services', [])),
      attributeKeys: fresh(() => attributeKeys({ T, select })),
      // Summaries are kept by materialized views and finished on read: nothing to refresh.
      refreshSummaries: async () => 0,
    },
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
    applyRetention: (opts) => dropOldDays({ select, command }, target, opts),
    async close(): Promise<void> {
      closed = true;
      clearInterval(probe);
      await writer.close();
      await metrics.close();
      await pool.close();
      await client.close();
    },
  };
}
