// The trace and session lists of the ClickHouse store: newest first, from the spans of a recent
// window grown until it holds enough (instead of merging every trace's or session's aggregates),
// or from the traces' aggregates when a filter names the traces.
import type { SessionSummary, TraceSummary } from '../../wire-types.js';
import { noiseFilter } from '../read-options.js';
import type { TraceListFilter } from '../store.js';
import { summarizeSession } from '../summaries.js';
import type { ClickHouseReadContext } from './clickhouse-read-context.js';
import { spanStartRangeSql } from './clickhouse-sql.js';
import type { TraceSummaries } from './clickhouse-trace-summaries.js';
import { literal } from './rows.js';

/** Candidate traces, a page at a time: the SQL of the page at `offset` of `page` rows. */
type PageSql = (offset: number, page: number) => string;

interface Listing {
  ctx: ClickHouseReadContext;
  summaries: TraceSummaries['summaries'];
  limit: number;
}

export async function listTraces(
  ctx: ClickHouseReadContext,
  summaries: TraceSummaries['summaries'],
  filter: TraceListFilter = {},
): Promise<TraceSummary[]> {
  const { where, having } = conditions(ctx, filter);
  const listing = { ctx, summaries, limit: Math.max(1, Math.min(filter.limit ?? 100, 1000)) };
  // Whether a trace is noise is known from its summary (summarizeTrace owns the rule), so the
  // listing pages through candidates until `limit` pass the noise setting.
  const noise = noiseFilter(filter);
  const passes = (s: TraceSummary): boolean =>
    noise === 'include' || (noise === 'only') === (s.noise !== undefined);
  if (!where.length) return newestTraces(listing, filter, having, passes);
  const { out } = await pageThrough(
    listing,
    (offset, page) =>
      `SELECT trace_id, minMerge(start_ns) AS s, maxMerge(end_ns) AS e, anyIfMerge(root_service) AS svc, sumMerge(errors) AS err FROM ${ctx.T('traces')} WHERE ${where.join(' AND ')} GROUP BY trace_id${having.length ? ` HAVING ${having.join(' AND ')}` : ''} ORDER BY s DESC, trace_id LIMIT ${offset}, ${page}`,
    passes,
  );
  return out;
}

/** The filter as conditions on trace ids (`where`) and on a trace's aggregates (`having`). */
function conditions({ T }: ClickHouseReadContext, filter: TraceListFilter) {
  const where: string[] = [];
  const having: string[] = [];
  if (filter.sessionId)
    where.push(
      `trace_id IN (SELECT trace_id FROM ${T('session_traces')} WHERE session_id = ${literal(filter.sessionId)})`,
    );
  const q = filter.q?.trim();
  if (q && /^[0-9a-fA-F]{32}$/.test(q)) where.push(`trace_id = ${literal(q.toLowerCase())}`);
  else if (q)
    where.push(
      `trace_id IN (SELECT trace_id FROM ${T('spans')} WHERE positionCaseInsensitive(doc, ${literal(q)}) > 0)`,
    );
  if (filter.service) having.push(`svc = ${literal(filter.service)}`);
  if (filter.status === 'error') having.push('err > 0');
  if (filter.status === 'ok') having.push('err = 0');
  const ns = (ms: number) => literal(BigInt(Math.max(0, Math.round(ms * 1000))) * 1000n);
  if (filter.startMs !== undefined) having.push(`s >= ${ns(filter.startMs)}`);
  if (filter.endMs !== undefined) having.push(`s < ${ns(filter.endMs)}`);
  if (filter.minDurationMs !== undefined)
    having.push(`e - s >= ${literal(Math.round(filter.minDurationMs * 1e6))}`);
  return { where, having };
}

/**
 * The newest traces first from the spans of a recent window (their ORDER BY narrows a time range
 * to its hours): a trace that starts inside the window has all its spans there, so its aggregates
 * are exact; one that started before it shows up with a later start, and its summary (read whole
 * from trace_spans) gives it away. The window grows 8× until `limit` traces are found or it holds
 * every span.
 */
async function newestTraces(
  listing: Listing,
  filter: TraceListFilter,
  having: string[],
  passes: (s: TraceSummary) => boolean,
): Promise<TraceSummary[]> {
  const { T } = listing.ctx;
  const [span] = await listing.ctx.select<{ lo: string; hi: string }>(
    `SELECT min(start_s) AS lo, max(start_s) AS hi FROM ${T('span_rollup')}`,
  );
  const lo = Number(span?.lo ?? 0);
  let newest = Number(span?.hi ?? 0) + 1;
  if (filter.endMs !== undefined) newest = Math.min(newest, Math.ceil(filter.endMs / 1000));
  const oldest = filter.startMs !== undefined ? Math.max(lo, Math.floor(filter.startMs / 1000)) : lo;
  const tail = having.length ? ` AND ${having.join(' AND ')}` : '';
  for (let w = 60; ; w *= 8) {
    const fromS = Math.max(newest - w, oldest);
    const fromNs = BigInt(fromS) * 1_000_000_000n;
    const { out, exhausted } = await pageThrough(
      listing,
      (offset, page) =>
        `SELECT trace_id, min(start_ns) AS s, max(end_ns) AS e, anyIf(service, parent_span_id = '') AS svc, sum(status = 'ERROR') AS err FROM ${T('spans')} WHERE ${spanStartRangeSql(BigInt(fromS) * 1_000_000n)} AND start_ns >= ${fromNs} GROUP BY trace_id HAVING s >= ${fromNs}${tail} ORDER BY s DESC, trace_id LIMIT ${offset}, ${page}`,
      (s) => s.startTimeUnixNano >= fromS * 1e9 && passes(s),
    );
    if (out.length >= listing.limit || !exhausted || fromS <= oldest) return out;
  }
}

/**
 * Pages through candidates (the first page the size asked for, each further one doubled up to
 * 1000, at most 20 pages: a store of nothing but probes answers short) until `limit` pass `keep`;
 * whether the candidates ran out before that.
 */
async function pageThrough(
  { ctx, summaries, limit }: Listing,
  sql: PageSql,
  keep: (s: TraceSummary) => boolean,
): Promise<{ out: TraceSummary[]; exhausted: boolean }> {
  const out: TraceSummary[] = [];
  let page = limit;
  for (let offset = 0, round = 0; out.length < limit && round < 20; round++) {
    const rows = await ctx.select<{ trace_id: string }>(sql(offset, page));
    const sums = await summaries(rows.map((r) => r.trace_id));
    for (const r of rows) {
      const s = sums.get(r.trace_id);
      if (s && keep(s) && out.length < limit) out.push(s);
    }
    if (rows.length < page) return { out, exhausted: true };
    offset += page;
    page = Math.min(1000, page * 2);
  }
  return { out, exhausted: false };
}

/**
 * The newest sessions: those with spans in a recent window (the spans' ORDER BY narrows it to its
 * hours), their last activity read whole from session_traces; the window grows 8× until the n-th
 * newest is far enough inside it that no session outside could be newer.
 */
export async function listSessions(
  ctx: ClickHouseReadContext,
  sessionsWithTraces: TraceSummaries['sessionsWithTraces'],
  limit = 100,
): Promise<SessionSummary[]> {
  const { T } = ctx;
  const n = Math.max(1, Math.min(limit, 1000));
  const [span] = await ctx.select<{ lo: string; hi: string; d: string }>(
    `SELECT min(start_s) AS lo, max(start_s) AS hi, maxMerge(dur_max) AS d FROM ${T('span_rollup')}`,
  );
  const lo = Number(span?.lo ?? 0);
  const newest = Number(span?.hi ?? 0) + 1;
  // The longest span: a session last active at L has a span that ends at L, so starts after L - d.
  const longestNs = Math.max(0, Number(span?.d ?? 0));
  let rows: { session_id: string; l: string }[];
  for (let w = 60; ; w *= 8) {
    const fromS = Math.max(newest - w, lo);
    rows = await ctx.select<{ session_id: string; l: string }>(
      `SELECT session_id, maxMerge(last_ns) AS l FROM ${T('session_traces')} WHERE session_id IN (SELECT session_id FROM ${T('spans')} WHERE session_id != '' AND ${spanStartRangeSql(BigInt(fromS) * 1_000_000n)} AND start_ns >= ${BigInt(fromS) * 1_000_000_000n}) GROUP BY session_id ORDER BY l DESC, session_id LIMIT ${n}`,
    );
    if (fromS <= lo) break;
    if (rows.length === n && fromS * 1e9 <= Number(rows[n - 1]!.l) - longestNs) break;
  }
  const traces = await sessionsWithTraces(rows.map((r) => r.session_id));
  return rows
    .filter((r) => traces.has(r.session_id))
    .map((r) => summarizeSession(r.session_id, traces.get(r.session_id)!));
}
