// A trace's records as the ClickHouse store reads them (trace_spans: one trace at a time, a retried
// span's copies once), and the trace summaries worked out from them, kept while a trace has not grown.
import type { SpanRecord, TraceSummary } from '../../wire-types.js';
import { summarizeTrace } from '../summaries.js';
import type { ClickHouseReadContext } from './clickhouse-read-context.js';
import { literal } from './rows.js';

/** Trace summaries a collector keeps for reuse (about 1 KiB each). */
const MAX_KNOWN_SUMMARIES = 20_000;

type SpanRow = { trace_id: string; span_id: string; doc: string };

/**
 * Hands the spans of each trace (deduplicated by span id, in start order) to `each`, one trace at
 * a time, so only one trace's records are held at once; `rows`: the trace_spans rows they came from
 * (a retried span's copies included).
 */
export async function eachTrace(
  { T, eachRow }: ClickHouseReadContext,
  ids: readonly string[],
  each: (traceId: string, spans: SpanRecord[], rows: number) => void,
): Promise<void> {
  if (!ids.length) return;
  let current = { traceId: '', spans: [] as SpanRecord[], rows: 0, last: '' };
  await eachRow<SpanRow>(
    // PREWHERE: the docs of only the rows whose trace id matches are read (ClickHouse does not move
    // a primary-key condition there by itself); for a session list's 400 traces at 10M spans the
    // read took 56 ms instead of 99.
    `SELECT trace_id, span_id, doc FROM ${T('trace_spans')} PREWHERE trace_id IN (${ids.map(literal).join(', ')}) ORDER BY trace_id, start_ns, span_id`,
    (r) => {
      if (r.trace_id !== current.traceId) {
        if (current.spans.length) each(current.traceId, current.spans, current.rows);
        current = { traceId: r.trace_id, spans: [], rows: 0, last: '' };
      }
      current.rows++;
      const key = `${r.trace_id}/${r.span_id}`;
      if (key === current.last) return;
      current.last = key;
      current.spans.push(JSON.parse(r.doc) as SpanRecord);
    },
  );
  if (current.spans.length) each(current.traceId, current.spans, current.rows);
}

/**
 * Trace summaries worked out before, with how many trace_spans rows each was made from. Rows are
 * only ever added (a retried span's copy too) or dropped with their whole day, so a trace with as
 * many rows as its summary was made from has the same spans, whichever collector stored them: its
 * summary is reused, and only new or grown traces have their records read. The Sessions and
 * Traces pages ask again on every live update; at 10M spans reading the records of a session
 * list's 400 traces was most of its time.
 */
export function createTraceSummaries(ctx: ClickHouseReadContext) {
  const known = new Map<string, { rows: number; summary: TraceSummary }>();

  /** The summaries kept whose trace has as many rows as when it was summarized. */
  async function stillCurrent(ids: readonly string[]): Promise<Map<string, TraceSummary>> {
    const out = new Map<string, TraceSummary>();
    // Only the row counts of traces with a summary kept are read (the trace_id column: no record is
    // decompressed); with none kept, no extra round trip.
    const kept = ids.filter((id) => known.has(id));
    if (!kept.length) return out;
    const counts = await ctx.select<{ trace_id: string; n: string }>(
      `SELECT trace_id, count() AS n FROM ${ctx.T('trace_spans')} WHERE trace_id IN (${kept.map(literal).join(', ')}) GROUP BY trace_id`,
    );
    for (const { trace_id: id, n } of counts) {
      const hit = known.get(id);
      if (hit?.rows === Number(n)) out.set(id, hit.summary);
    }
    return out;
  }

  function keep(id: string, rows: number, summary: TraceSummary): void {
    known.delete(id);
    // The oldest entries go first (a Map keeps insertion order).
    if (known.size >= MAX_KNOWN_SUMMARIES) known.delete(known.keys().next().value!);
    known.set(id, { rows, summary });
  }

  async function summaries(ids: readonly string[]): Promise<Map<string, TraceSummary>> {
    const out = await stillCurrent(ids);
    const read = out.size ? ids.filter((id) => !out.has(id)) : ids;
    await eachTrace(ctx, read, (id, spans, rows) => {
      const summary = summarizeTrace(id, spans);
      out.set(id, summary);
      keep(id, rows, summary);
    });
    return out;
  }

  /** Each session's trace summaries, in the order its traces started. */
  async function sessionsWithTraces(sessionIds: readonly string[]): Promise<Map<string, TraceSummary[]>> {
    const out = new Map<string, TraceSummary[]>();
    if (!sessionIds.length) return out;
    const pairs = await ctx.select<{ session_id: string; trace_id: string }>(
      `SELECT session_id, trace_id, minMerge(first_ns) AS f FROM ${ctx.T('session_traces')} WHERE session_id IN (${sessionIds.map(literal).join(', ')}) GROUP BY session_id, trace_id ORDER BY f, trace_id`,
    );
    const sums = await summaries([...new Set(pairs.map((p) => p.trace_id))]);
    for (const p of pairs) {
      const s = sums.get(p.trace_id);
      if (!s) continue;
      const list = out.get(p.session_id);
      if (list) list.push(s);
      else out.set(p.session_id, [s]);
    }
    return out;
  }

  return { summaries, sessionsWithTraces };
}

export type TraceSummaries = ReturnType<typeof createTraceSummaries>;
