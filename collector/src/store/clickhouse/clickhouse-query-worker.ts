// A query thread of the ClickHouse store (started by store/reader-pool.ts, as SQLite's are): its own
// HTTP client to ClickHouse; runs one query or read (trace and session views and lists, export
// pages, the log search, metric reads) at a time — ClickHouse does the scan, this thread the
// parts the language evaluates in JS (regex filters, stats ClickHouse cannot group, sorting) — and
// answers with the response's JSON bytes. On the main thread that work held up ingest and /healthz
// for as long as a second per query; here the pool's deadline ends it with the thread.
import { parentPort, workerData } from 'node:worker_threads';
import type { QueryPoolData, QueryReply, QueryRequest } from '../query-protocol.js';
import { resultBytes } from '../../query/result-bytes.js';
import { type ClickHouseConnection, connectClickHouse, isUnreachable } from './clickhouse-client.js';
import { clickHouseQueryFailure, runClickHouseQuery } from './clickhouse-query.js';
import { queryClickHouseLogs } from './clickhouse-logs.js';
import { createClickHouseReads } from './clickhouse-reads.js';
import { createClickHouseMetricReader } from './clickhouse-metric-reader.js';
import { tableName } from './schema-ddl.js';
import type { LogQuery } from '../../logs/log-query.js';
import { type MetricRead, answerMetricRead, metricFailure } from '../../metrics/metric-read.js';
import type { ReadOp } from '../sqlite/read-ops.js';

/** What the store hands its query threads (QueryPoolData.extra). */
export interface ClickHouseWorkerData extends ClickHouseConnection {
  queryTimeoutMs: number;
  table: string;
  rollupTable: string;
  serverVersion: string;
  /** The database: the tables the reads name (the Distributed ones with a cluster). */
  database: string;
}

const port = parentPort!;
const { maxResultBytes, maxRows, extra } = workerData as QueryPoolData & { extra: ClickHouseWorkerData };
// ClickHouse's own deadline on each statement; the pool's ends the thread past it.
const client = connectClickHouse(extra, {
  max_execution_time: Math.max(1, Math.ceil(extra.queryTimeoutMs / 1000)),
});
const reply = (message: QueryReply, transfer: ArrayBuffer[] = []): void =>
  port.postMessage(message, transfer);
async function select<T>(sql: string): Promise<T[]> {
  const rs = await client.query({ query: sql, format: 'JSONEachRow' });
  return rs.json<T>();
}

const T = (name: string): string => tableName({ database: extra.database, replicated: false }, name);
const spans = createClickHouseReads({
  T,
  select,
  eachRow: async (sql, each) => {
    const rs = await client.query({ query: sql, format: 'JSONEachRow' });
    for await (const rows of rs.stream()) for (const row of rows) each(row.json());
  },
});
/** The store's reads these threads run (the pool's `read` requests), by name (SQLite's names). */
const reads: Partial<Record<ReadOp, (...args: never[]) => Promise<unknown>>> = {
  ...spans,
  logs: (q: LogQuery) =>
    queryClickHouseLogs({ select, logs: T('logs'), sessionTraces: T('session_traces') }, q),
  metric: (read: MetricRead) => answerMetricRead(createClickHouseMetricReader({ select, table: T }), read),
};

/** Runs one query's or read's work: its answer. */
function run(m: Extract<QueryRequest, { type: 'query' | 'read' }>): Promise<unknown> {
  if (m.type === 'query')
    return runClickHouseQuery(
      { select, table: extra.table, rollupTable: extra.rollupTable, serverVersion: extra.serverVersion },
      m.query,
      { ...m.options, maxRows },
    );
  const read = reads[m.op] as ((...args: unknown[]) => Promise<unknown>) | undefined;
  if (!read) return Promise.reject(new Error(`${m.op} is not run on ClickHouse query threads`));
  return read(...m.args);
}

/** Runs one query or read and answers it: its JSON bytes, or the 400 body, or why it could not run. */
async function answer(m: Extract<QueryRequest, { type: 'query' | 'read' }>): Promise<void> {
  try {
    const json = resultBytes(await run(m), maxResultBytes, m.type);
    reply({ type: 'result', id: m.id, json }, [json.buffer as ArrayBuffer]);
  } catch (error) {
    const metric = metricFailure(error);
    const query = m.type === 'query' ? m.query : '';
    const body = clickHouseQueryFailure(error, query, extra.serverVersion, extra.queryTimeoutMs);
    if (metric) reply({ type: 'error', id: m.id, ...metric });
    else if (body) reply({ type: 'error', id: m.id, body });
    else
      reply({
        type: 'error',
        id: m.id,
        message: isUnreachable(error)
          ? `ClickHouse at ${extra.url} is not answering (${(error as Error).message})`
          : error instanceof Error
            ? error.message
            : String(error),
        unavailable: isUnreachable(error),
      });
  }
}

port.on('message', (m: QueryRequest) => {
  if (m.type === 'close') {
    void client.close().finally(() => port.close());
    return;
  }
  if (m.type === 'check') {
    reply({ type: 'error', id: m.id, message: 'check is not run on ClickHouse query threads' });
    return;
  }
  void answer(m);
});
reply({ type: 'ready' });
