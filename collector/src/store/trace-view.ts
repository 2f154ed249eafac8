// GET /api/traces/:traceId's answer from a trace's spans, logs and summary: one step every store
// shares (SQLite's query threads build it, ClickHouse's store on its main thread).
import { buildSpanTree, type SpanTreeNode } from '../trace-model/span-tree.js';
import type { LogRecord, SpanNode, SpanRecord, TraceResponse, TraceSummary } from '../wire-types.js';

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
