// The ClickHouse store's reads of spans and logs for the HTTP API, run on its query threads
// (clickhouse-query-worker.ts) as SQLite's are: a trace's records and view, trace and session
// summaries (finished on read from the materialized views' aggregates, and reused while a trace has
// not grown: clickhouse-trace-summaries.ts), the trace and session lists (clickhouse-trace-list.ts),
// services and export pages (clickhouse-export-page.ts). Decoding a session list's records held up
// ingest on the main thread for as long as a second. Attribute keys (one small SELECT) stay on the
// main thread.
import type { LogRecord, SpanRecord, TraceResponse } from '../../wire-types.js';
import type { ExportKey, ExportSelection, ExportShape } from '../export-page.js';
import { FIXED_KEYS } from '../read-options.js';
import type { TraceListFilter } from '../store.js';
import { summarizeSession, summarizeTrace } from '../summaries.js';
import { traceResponse } from '../trace-view.js';
import { exportPage } from './clickhouse-export-page.js';
import type { ClickHouseReadContext } from './clickhouse-read-context.js';
import { listSessions, listTraces } from './clickhouse-trace-list.js';
import { createTraceSummaries, eachTrace } from './clickhouse-trace-summaries.js';
import { literal } from './rows.js';

export type { ClickHouseReadContext } from './clickhouse-read-context.js';

/** The span and log reads over one ClickHouse database. */
export function createClickHouseReads(ctx: ClickHouseReadContext) {
  const { summaries, sessionsWithTraces } = createTraceSummaries(ctx);

  async function spansOfTrace(traceId: string): Promise<SpanRecord[]> {
    let out: SpanRecord[] = [];
    await eachTrace(ctx, [traceId], (_, spans) => (out = spans));
    return out;
  }

  const logsOfTrace = async (traceId: string): Promise<LogRecord[]> =>
    (
      await ctx.select<{ doc: string }>(
        `SELECT doc FROM ${ctx.T('logs')} WHERE trace_id = ${literal(traceId)} ORDER BY time_ns`,
      )
    ).map((r) => JSON.parse(r.doc) as LogRecord);

  return {
    spansOfTrace,
    logsOfTrace,
    listTraces: (filter?: TraceListFilter) => listTraces(ctx, summaries, filter),
    listSessions: (limit?: number) => listSessions(ctx, sessionsWithTraces, limit),
    async getSession(sessionId: string) {
      const traces = (await sessionsWithTraces([sessionId])).get(sessionId);
      if (!traces?.length) return undefined;
      return { session: summarizeSession(sessionId, traces), traces };
    },
    services: () => services(ctx),
    /** The whole trace view, or undefined for a trace with no spans (the summary from the spans in hand). */
    async trace(traceId: string): Promise<TraceResponse | undefined> {
      const [spans, logs] = await Promise.all([spansOfTrace(traceId), logsOfTrace(traceId)]);
      return spans.length ? traceResponse(summarizeTrace(traceId, spans), spans, logs) : undefined;
    },
    exportPage: (
      table: 'spans' | 'logs',
      selection: ExportSelection,
      after: ExportKey,
      shape?: ExportShape,
    ) => exportPage(ctx, table, selection, after, shape),
  };
}

async function services({ T, select }: ClickHouseReadContext) {
  const rows = await select<{ name: string; n: number; last: number }>(
    // From the rollup (its rows are per second and service): ~60× fewer rows than the spans.
    `SELECT service AS name, countMerge(spans) AS n, maxMerge(last_end_us) AS last FROM ${T('span_rollup')} WHERE service != '' GROUP BY service ORDER BY last DESC, name`,
  );
  return rows.map((r) => ({
    name: r.name,
    spanCount: Number(r.n),
    lastSeenUnixNano: Number(r.last) * 1000,
  }));
}

/** The attribute keys the query language offers: the fixed ones, then those the spans hold. */
export async function attributeKeys({
  T,
  select,
}: Pick<ClickHouseReadContext, 'T' | 'select'>): Promise<string[]> {
  const rows = await select<{ key: string }>(
    `SELECT arrayJoin(groupUniqArrayArrayMerge(keys)) AS key FROM ${T('attribute_key_sets')} ORDER BY key LIMIT 10000`,
  );
  return [...FIXED_KEYS, 'resource.attributes.service.name', ...rows.map((r) => r.key)].filter(
    (k, i, all) => all.indexOf(k) === i,
  );
}
