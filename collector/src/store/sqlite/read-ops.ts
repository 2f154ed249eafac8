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

/** A trace's records as a page reads them: row id and time, and the document. */
type PageRow = { id: number; t: number; doc: string };

/** Traces whose sorted keys a thread keeps for their next pages (each a few MB at most). */
const KEPT_TRACES = 4;

/**
 * The records of a trace in (time, id) order, a page at a time. The trace is found through its
 * trace_id index, which is not in time order: a trace of one page is sorted whole (a few keys); a
 * bigger one has its keys sorted once and kept for its next pages — sorting them again for each
 * page made the 50,001-span stream take seconds, and an index in time order cost ingest 12–21%
 * of its CPU (docs/benchmarks.md). The kept keys are taken again when the trace's record count
 * changed, so a page never misses what was stored since.
 */
function createTracePager(db: DatabaseSync, table: 'spans' | 'logs') {
  const time = table === 'spans' ? 'start_us' : 'time_us';
  const count = db.prepare(`SELECT count(*) AS n FROM ${table} WHERE trace_id = ?`);
  const keysOf = db.prepare(`SELECT ${time} AS t, id FROM ${table} WHERE trace_id = ? ORDER BY ${time}, id`);
  const onePage = db.prepare(
    `SELECT id, ${time} AS t, doc FROM ${table} WHERE trace_id = ? AND (${time}, id) > (?, ?) ORDER BY ${time}, id LIMIT ?`,
  );
  // A page's records by row id, in key order: the sort carries the page's records only, in SQLite's
  // memory, and they are handed on one at a time.
  const byIds = db.prepare(
    `SELECT id, ${time} AS t, doc FROM ${table} WHERE id IN (SELECT value FROM json_each(?)) ORDER BY ${time}, id`,
  );
  const kept = new Map<string, { n: number; t: Float64Array; id: Float64Array }>();

  const sortedKeys = (traceId: string, n: number) => {
    let keys = kept.get(traceId);
    if (keys?.n === n) return keys;
    keys = { n, t: new Float64Array(n), id: new Float64Array(n) };
    let i = 0;
    for (const r of keysOf.iterate(traceId) as Iterable<{ t: number; id: number }>) {
      if (i === n) break; // stored since the count: taken by the next page's count
      keys.t[i] = r.t;
      keys.id[i++] = r.id;
    }
    keys = { n: i, t: keys.t.subarray(0, i), id: keys.id.subarray(0, i) };
    kept.delete(traceId);
    if (kept.size >= KEPT_TRACES) kept.delete(kept.keys().next().value!);
    kept.set(traceId, keys);
    return keys;
  };

  return (traceId: string, after: ExportKey): Iterable<PageRow> => {
    const { n } = count.get(traceId) as { n: number };
    if (n <= EXPORT_CHUNK_RECORDS)
      return onePage.iterate(traceId, after[0], after[1], EXPORT_CHUNK_RECORDS) as Iterable<PageRow>;
    const keys = sortedKeys(traceId, n);
    // The first key after `after` (binary search over the sorted (time, id) pairs).
    let lo = 0;
    for (let hi = keys.n; lo < hi;) {
      const mid = (lo + hi) >>> 1;
      const t = keys.t[mid]!;
      if (t < after[0] || (t === after[0] && keys.id[mid]! <= Number(after[1]))) lo = mid + 1;
      else hi = mid;
    }
    const ids = keys.id.subarray(lo, lo + EXPORT_CHUNK_RECORDS);
    return ids.length ? (byIds.iterate(JSON.stringify(Array.from(ids))) as Iterable<PageRow>) : [];
  };
}

/**
 * Export pages (http/export.ts): the records of a time range after a (time, id) key, one short
 * keyset statement each — an index range walked in order up to a chunk, so a page costs the same
 * however much is stored — or of a trace (createTracePager), encoded as one OTLP/JSON line. Answers
 * `{"last":[t,id]}\n` and the line as bytes, or undefined when nothing is left.
 */
function createExportPager(db: DatabaseSync) {
  const statements = new Map<string, StatementSync>();
  const traces = { spans: createTracePager(db, 'spans'), logs: createTracePager(db, 'logs') };
  return (
    table: 'spans' | 'logs',
    sel: ExportSelection,
    after: ExportKey,
    shape: ExportShape = 'otlp',
  ): Uint8Array | undefined => {
    if ('traceId' in sel)
      return exportPageBytes(exportPageOf(table, traces[table](sel.traceId, after), shape));
    const time = table === 'spans' ? 'start_us' : 'time_us';
    const sql = `SELECT id, ${time} AS t, doc FROM ${table} WHERE ${time} >= ? AND ${time} < ? AND (${time}, id) > (?, ?) ORDER BY ${time}, id LIMIT ?`;
    let stmt = statements.get(sql);
    if (!stmt) statements.set(sql, (stmt = db.prepare(sql)));
    const rows = stmt.iterate(
      sel.startUs,
      sel.endUs,
      after[0],
      after[1],
      EXPORT_CHUNK_RECORDS,
    ) as Iterable<PageRow>;
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
