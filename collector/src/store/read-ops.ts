// The store's reads as the query threads run them (query-worker.ts), each on the thread's own
// read-only connection and under the query deadline: the trace list (with its free-text search, a
// full scan), trace lookups, sessions, services and export ranges. Each answers with what the API
// sends, so the main thread passes the bytes on without parsing them.
import type { DatabaseSync } from 'node:sqlite';
import { buildSpanTree, type SpanTreeNode } from '../trace-model/span-tree.js';
import type { LogRecord, SpanNode, SpanRecord, TraceResponse, TraceSummary } from '../wire-types.js';
import { type TraceListFilter, createSpanReader } from './span-store.js';

/** A trace's spans as a tree with their logs; logs of spans not in the trace are `unattached`. */
export function traceTree(
  spans: SpanRecord[],
  logs: LogRecord[],
): { roots: SpanNode[]; unattached: LogRecord[] } {
  const bySpan = new Map<string, LogRecord[]>();
  const unattached: LogRecord[] = [];
  const ids = new Set(spans.map((s) => s.spanId));
  for (const l of logs) {
    if (l.spanId && ids.has(l.spanId)) {
      const list = bySpan.get(l.spanId);
      if (list) list.push(l);
      else bySpan.set(l.spanId, [l]);
    } else unattached.push(l);
  }
  const convert = (n: SpanTreeNode<SpanRecord>): SpanNode => ({
    span: n.span,
    logs: bySpan.get(n.span.spanId) ?? [],
    children: n.children.map(convert),
  });
  return { roots: buildSpanTree(spans).map(convert), unattached };
}

/** GET /api/traces/:traceId from a trace's spans, logs and summary. */
export function traceResponse(summary: TraceSummary, spans: SpanRecord[], logs: LogRecord[]): TraceResponse {
  const { roots, unattached } = traceTree(spans, logs);
  return { summary, roots, logs: unattached };
}

/** The reads a query thread runs, by name (the pool's `read` requests). */
export function createReadOps(db: DatabaseSync) {
  const reader = createSpanReader(db);
  const docs = <T>(sql: string) => {
    const stmt = db.prepare(sql);
    return (from: number, to: number, limit: number): T[] =>
      (stmt.all(from, to, limit) as { doc: string }[]).map((r) => JSON.parse(r.doc) as T);
  };
  const spansIn = docs<SpanRecord>(
    'SELECT doc FROM spans WHERE start_us >= ? AND start_us < ? ORDER BY start_us LIMIT ?',
  );
  const logsIn = docs<LogRecord>(
    'SELECT doc FROM logs WHERE time_us >= ? AND time_us < ? ORDER BY time_us LIMIT ?',
  );
  return {
    listTraces: (filter?: TraceListFilter) => reader.listTraces(filter),
    listSessions: (limit?: number) => reader.listSessions(limit),
    getSession: (sessionId: string) => reader.getSession(sessionId),
    services: () => reader.services(),
    traceSummary: (traceId: string) => reader.traceSummary(traceId),
    spansOfTrace: (traceId: string) => reader.spansOfTrace(traceId),
    logsOfTrace: (traceId: string) => reader.logsOfTrace(traceId),
    /** The whole trace view, or undefined for a trace with no spans. */
    trace(traceId: string): TraceResponse | undefined {
      const spans = reader.spansOfTrace(traceId);
      if (!spans.length) return undefined;
      const summary = reader.traceSummary(traceId)!;
      return traceResponse(summary, spans, reader.logsOfTrace(traceId));
    },
    exportRange(startMs: number, endMs: number, limit: number) {
      const from = Math.floor(startMs * 1000);
      const to = Math.floor(endMs * 1000);
      return { spans: spansIn(from, to, limit), logs: logsIn(from, to, limit) };
    },
  };
}

export type ReadOps = ReturnType<typeof createReadOps>;
export type ReadOp = keyof ReadOps;
