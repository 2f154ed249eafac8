// The store's reads as the query threads run them (reader-worker.ts), each on the thread's own
// read-only connection and under the query deadline: the trace list (with its free-text search, a
// full scan), trace lookups, sessions, services, export ranges, the log search and metric reads.
// Each answers with what the API sends, so the main thread passes the bytes on without parsing them.
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import {
  EXPORT_CHUNK_RECORDS,
  type ExportKey,
  type ExportSelection,
  type ExportShape,
  exportPageBytes,
  exportPageOf,
} from '../export-page.js';
import { traceResponse } from '../trace-view.js';
import { type LogQuery, type LogQueryResult, queryLogs } from '../../logs/log-query.js';
import { type MetricRead, answerMetricRead } from '../../metrics/metric-read.js';
import { createSqliteMetricReader } from '../../metrics/sqlite-metric-reader.js';
import type { TraceResponse } from '../../wire-types.js';
import type { TraceListFilter } from '../read-options.js';
import { createSpanReader } from './span-store.js';

/**
 * Export pages (http/export.ts): the records of a table after a (time, id) key, one short keyset
 * statement each — an index range walked in order up to a chunk, so a page costs the same however
 * much is stored — encoded as one OTLP/JSON line. Answers `{"last":[t,id]}\n` and the line as
 * bytes, or undefined when nothing is left.
 */
function createExportPager(db: DatabaseSync) {
  const statements = new Map<string, StatementSync>();
  return (
    table: 'spans' | 'logs',
    sel: ExportSelection,
    after: ExportKey,
    shape: ExportShape = 'otlp',
  ): Uint8Array | undefined => {
    const time = table === 'spans' ? 'start_us' : 'time_us';
    const where = 'traceId' in sel ? 'trace_id = ?' : `${time} >= ? AND ${time} < ?`;
    const pageIds = `SELECT id FROM ${table} WHERE ${where} AND (${time}, id) > (?, ?) ORDER BY ${time}, id LIMIT ?`;
    // A trace's records are found by its index, then sorted: the sort carries the keys only (not
    // every record of a trace of 50,000 spans per page), the page's records are read by row id.
    const sql =
      'traceId' in sel
        ? `SELECT id, ${time} AS t, doc FROM ${table} WHERE id IN (${pageIds}) ORDER BY ${time}, id`
        : `SELECT id, ${time} AS t, doc FROM ${table} WHERE ${where} AND (${time}, id) > (?, ?) ORDER BY ${time}, id LIMIT ?`;
    let stmt = statements.get(sql);
    if (!stmt) statements.set(sql, (stmt = db.prepare(sql)));
    const args = 'traceId' in sel ? [sel.traceId] : [sel.startUs, sel.endUs];
    const rows = stmt.iterate(...args, after[0], after[1], EXPORT_CHUNK_RECORDS) as Iterable<{
      id: number;
      t: number;
      doc: string;
    }>;
    return exportPageBytes(exportPageOf(table, rows, shape));
  };
}

/**
 * The reads a query thread runs, by name (the pool's `read` requests). `metricsDb`: the thread's
 * connection to metrics.sqlite (opened on the first metric read).
 */
export function createReadOps(db: DatabaseSync, metricsDb: () => DatabaseSync) {
  const reader = createSpanReader(db);
  const exportPage = createExportPager(db);
  return {
    /** GET /api/logs. */
    logs: (q: LogQuery): LogQueryResult => queryLogs(db, q),
    /**
     * A metric read; `unwrittenFromUs`: where the ingesting store's roll-up rows may lack points
     * (SqliteMetricStore.unwrittenFromUs when the read was queued). ClickHouse threads take `read`.
     */
    metric: (read: MetricRead, unwrittenFromUs?: number) =>
      answerMetricRead(
        createSqliteMetricReader(metricsDb(), () => unwrittenFromUs),
        read,
      ),
    listTraces: (filter?: TraceListFilter) => reader.listTraces(filter),
    listSessions: (limit?: number) => reader.listSessions(limit),
    getSession: (sessionId: string) => reader.getSession(sessionId),
    services: () => reader.services(),
    spansOfTrace: (traceId: string) => reader.spansOfTrace(traceId),
    logsOfTrace: (traceId: string) => reader.logsOfTrace(traceId),
    /** The whole trace view, or undefined for a trace with no spans. */
    trace(traceId: string): TraceResponse | undefined {
      const spans = reader.spansOfTrace(traceId);
      if (!spans.length) return undefined;
      const summary = reader.traceSummary(traceId)!;
      return traceResponse(summary, spans, reader.logsOfTrace(traceId));
    },
    exportPage,
  };
}

export type ReadOps = ReturnType<typeof createReadOps>;
export type ReadOp = keyof ReadOps;
