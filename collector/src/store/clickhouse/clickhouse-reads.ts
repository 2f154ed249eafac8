// The ClickHouse store's reads of spans and logs for the HTTP API, run on its query threads
// (clickhouse-query-worker.ts) as SQLite's are: a trace's records and view, trace and session
// summaries (finished on read from the materialized views' aggregates, and reused while a trace has
// not grown), the trace and session lists, services and export pages. Decoding a session list's
// records held up ingest on the main thread for as long as a second. Attribute keys (one small
// SELECT) stay on the main thread.
import {
  EXPORT_CHUNK_RECORDS,
  type ExportKey,
  type ExportSelection,
  type ExportShape,
  exportPageBytes,
  exportPageOf,
} from '../export-page.js';
import type { LogRecord, SessionSummary, SpanRecord, TraceResponse, TraceSummary } from '../../wire-types.js';
import { FIXED_KEYS, noiseFilter } from '../read-options.js';
import type { TraceListFilter } from '../store.js';
import { summarizeSession, summarizeTrace } from '../summaries.js';
import { traceResponse } from '../trace-view.js';
import { spanStartRangeSql, spansStartingInSql } from './clickhouse-sql.js';
import { LAST_US, daysSql, literal } from './rows.js';

/** Trace summaries a collector keeps for reuse (about 1 KiB each). */
const MAX_KNOWN_SUMMARIES = 20_000;

export interface ClickHouseReadContext {
  /** A table's name in the store's database. */
  T(name: string): string;
  select<T>(sql: string): Promise<T[]>;
  /** A SELECT whose rows are handed over as they are decoded (the event loop gets turns). */
  eachRow<T>(sql: string, each: (row: T) => void): Promise<void>;
}

/** The span and log reads over one ClickHouse database. */
export function createClickHouseReads({ T, select, eachRow }: ClickHouseReadContext) {
  const docs = <R>(rows: { doc: string }[]): R[] => rows.map((r) => JSON.parse(r.doc) as R);

  /**
   * Hands the spans of each trace (deduplicated by span id, in start order) to `each`, one trace at
   * a time, so only one trace's records are held at once; `rows`: the trace_spans rows they came from
   * (a retried span's copies included).
   */
  async function eachTrace(
    ids: readonly string[],
    each: (traceId: string, spans: SpanRecord[], rows: number) => void,
  ): Promise<void> {
    if (!ids.length) return;
    let traceId = '';
    let spans: SpanRecord[] = [];
    let rows = 0;
    let last = '';
    await eachRow<{ trace_id: string; span_id: string; doc: string }>(
      // PREWHERE: the docs of only the rows whose trace id matches are read (ClickHouse does not move
      // a primary-key condition there by itself); for a session list's 400 traces at 10M spans the
      // read took 56 ms instead of 99.
      `SELECT trace_id, span_id, doc FROM ${T('trace_spans')} PREWHERE trace_id IN (${ids.map(literal).join(', ')}) ORDER BY trace_id, start_ns, span_id`,
      (r) => {
        if (r.trace_id !== traceId) {
          if (spans.length) each(traceId, spans, rows);
          traceId = r.trace_id;
          spans = [];
          rows = 0;
        }
        rows++;
        const key = `${r.trace_id}/${r.span_id}`;
        if (key === last) return;
        last = key;
        spans.push(JSON.parse(r.doc) as SpanRecord);
      },
    );
    if (spans.length) each(traceId, spans, rows);
  }

  async function spansOfTrace(traceId: string): Promise<SpanRecord[]> {
    let out: SpanRecord[] = [];
    await eachTrace([traceId], (_, spans) => (out = spans));
    return out;
  }

  /**
   * Trace summaries worked out before, with how many trace_spans rows each was made from. Rows are
   * only ever added (a retried span's copy too) or dropped with their whole day, so a trace with as
   * many rows as its summary was made from has the same spans, whichever collector stored them: its
   * summary is reused, and only new or grown traces have their records read. The Sessions and
   * Traces pages ask again on every live update; at 10M spans reading the records of a session
   * list's 400 traces was most of its time.
   */
  const known = new Map<string, { rows: number; summary: TraceSummary }>();

  async function summaries(ids: readonly string[]): Promise<Map<string, TraceSummary>> {
    const out = new Map<string, TraceSummary>();
    // Only the row counts of traces with a summary kept are read (the trace_id column: no record is
    // decompressed); with none kept, no extra round trip.
    const kept = ids.filter((id) => known.has(id));
    const counts = kept.length
      ? await select<{ trace_id: string; n: string }>(
          `SELECT trace_id, count() AS n FROM ${T('trace_spans')} WHERE trace_id IN (${kept.map(literal).join(', ')}) GROUP BY trace_id`,
        )
      : [];
    for (const { trace_id: id, n } of counts) {
      const hit = known.get(id);
      if (hit?.rows === Number(n)) out.set(id, hit.summary);
    }
    const read = out.size ? ids.filter((id) => !out.has(id)) : ids;
    await eachTrace(read, (id, spans, rows) => {
      const summary = summarizeTrace(id, spans);
      out.set(id, summary);
      known.delete(id);
      // The oldest entries go first (a Map keeps insertion order).
      if (known.size >= MAX_KNOWN_SUMMARIES) known.delete(known.keys().next().value!);
      known.set(id, { rows, summary });
    });
    return out;
  }

  async function sessionsWithTraces(sessionIds: readonly string[]): Promise<Map<string, TraceSummary[]>> {
    const out = new Map<string, TraceSummary[]>();
    if (!sessionIds.length) return out;
    const pairs = await select<{ session_id: string; trace_id: string }>(
      `SELECT session_id, trace_id, minMerge(first_ns) AS f FROM ${T('session_traces')} WHERE session_id IN (${sessionIds.map(literal).join(', ')}) GROUP BY session_id, trace_id ORDER BY f, trace_id`,
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

  async function listTraces(filter: TraceListFilter = {}): Promise<TraceSummary[]> {
    const where: string[] = [];
    const having: string[] = [];
    if (filter.sessionId) {
      where.push(
        `trace_id IN (SELECT trace_id FROM ${T('session_traces')} WHERE session_id = ${literal(filter.sessionId)})`,
      );
    }
    const q = filter.q?.trim();
    if (q) {
      if (/^[0-9a-fA-F]{32}$/.test(q)) where.push(`trace_id = ${literal(q.toLowerCase())}`);
      else
        where.push(
          `trace_id IN (SELECT trace_id FROM ${T('spans')} WHERE positionCaseInsensitive(doc, ${literal(q)}) > 0)`,
        );
    }
    if (filter.service) having.push(`svc = ${literal(filter.service)}`);
    if (filter.status === 'error') having.push('err > 0');
    if (filter.status === 'ok') having.push('err = 0');
    if (filter.startMs !== undefined)
      having.push(`s >= ${literal(BigInt(Math.max(0, Math.round(filter.startMs * 1000))) * 1000n)}`);
    if (filter.endMs !== undefined)
      having.push(`s < ${literal(BigInt(Math.max(0, Math.round(filter.endMs * 1000))) * 1000n)}`);
    if (filter.minDurationMs !== undefined)
      having.push(`e - s >= ${literal(Math.round(filter.minDurationMs * 1e6))}`);
    const limit = Math.max(1, Math.min(filter.limit ?? 100, 1000));
    // Whether a trace is noise is known from its summary (summarizeTrace owns the rule), so the
    // listing pages through candidates until `limit` pass the noise setting.
    const noise = noiseFilter(filter);
    const passes = (s: TraceSummary): boolean =>
      noise === 'include' || (noise === 'only') === (s.noise !== undefined);
    const tail = having.length ? ` AND ${having.join(' AND ')}` : '';
    /**
     * Pages through candidates (the first page the size asked for, each further one doubled up to
     * 1000, at most 20 pages: a store of nothing but probes answers short) until `limit` pass
     * `keep`; whether the candidates ran out before that.
     */
    const pageThrough = async (
      sql: (offset: number, page: number) => string,
      keep: (s: TraceSummary) => boolean,
    ): Promise<{ out: TraceSummary[]; exhausted: boolean }> => {
      const out: TraceSummary[] = [];
      let page = limit;
      for (
        let offset = 0, round = 0;
        out.length < limit && round < 20;
        offset += page, page = Math.min(1000, page * 2), round++
      ) {
        const rows = await select<{ trace_id: string }>(sql(offset, page));
        const sums = await summaries(rows.map((r) => r.trace_id));
        for (const r of rows) {
          const s = sums.get(r.trace_id);
          if (s && keep(s) && out.length < limit) out.push(s);
        }
        if (rows.length < page) return { out, exhausted: true };
      }
      return { out, exhausted: false };
    };
    if (!where.length) {
      // The newest traces first from the spans of a recent window (their ORDER BY narrows a time
      // range to its hours): a trace that starts inside the window has all its spans there, so its
      // aggregates are exact; one that started before it shows up with a later start, and its
      // summary (read whole from trace_spans) gives it away. The window grows 8× until `limit`
      // traces are found or it holds every span — instead of merging every trace's aggregates.
      const [span] = await select<{ lo: string; hi: string }>(
        `SELECT min(start_s) AS lo, max(start_s) AS hi FROM ${T('span_rollup')}`,
      );
      const lo = Number(span?.lo ?? 0);
      let newest = Number(span?.hi ?? 0) + 1;
      if (filter.endMs !== undefined) newest = Math.min(newest, Math.ceil(filter.endMs / 1000));
      const oldest = filter.startMs !== undefined ? Math.max(lo, Math.floor(filter.startMs / 1000)) : lo;
      for (let w = 60; ; w *= 8) {
        const fromS = Math.max(newest - w, oldest);
        const fromNs = BigInt(fromS) * 1_000_000_000n;
        const { out, exhausted } = await pageThrough(
          (offset, page) =>
            `SELECT trace_id, min(start_ns) AS s, max(end_ns) AS e, anyIf(service, parent_span_id = '') AS svc, sum(status = 'ERROR') AS err FROM ${T('spans')} WHERE ${spanStartRangeSql(BigInt(fromS) * 1_000_000n)} AND start_ns >= ${fromNs} GROUP BY trace_id HAVING s >= ${fromNs}${tail} ORDER BY s DESC, trace_id LIMIT ${offset}, ${page}`,
          (s) => s.startTimeUnixNano >= fromS * 1e9 && passes(s),
        );
        if (out.length >= limit || !exhausted || fromS <= oldest) return out;
      }
    }
    const { out } = await pageThrough(
      (offset, page) =>
        `SELECT trace_id, minMerge(start_ns) AS s, maxMerge(end_ns) AS e, anyIfMerge(root_service) AS svc, sumMerge(errors) AS err FROM ${T('traces')}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} GROUP BY trace_id${having.length ? ` HAVING ${having.join(' AND ')}` : ''} ORDER BY s DESC, trace_id LIMIT ${offset}, ${page}`,
      passes,
    );
    return out;
  }

  async function listSessions(limit = 100): Promise<SessionSummary[]> {
    const n = Math.max(1, Math.min(limit, 1000));
    const [span] = await select<{ lo: string; hi: string; d: string }>(
      `SELECT min(start_s) AS lo, max(start_s) AS hi, maxMerge(dur_max) AS d FROM ${T('span_rollup')}`,
    );
    const lo = Number(span?.lo ?? 0);
    const newest = Number(span?.hi ?? 0) + 1;
    // The longest span: a session last active at L has a span that ends at L, so starts after L - d.
    const longestNs = Math.max(0, Number(span?.d ?? 0));
    const order = `GROUP BY session_id ORDER BY l DESC, session_id LIMIT ${n}`;
    let rows: { session_id: string; l: string }[];
    // Sessions with spans in a recent window (the spans' ORDER BY narrows it to its hours), their
    // last activity read whole from session_traces; the window grows 8× until the n-th newest is
    // far enough inside it that no session outside could be newer — instead of merging every
    // session's aggregates.
    for (let w = 60; ; w *= 8) {
      const fromS = Math.max(newest - w, lo);
      rows = await select<{ session_id: string; l: string }>(
        `SELECT session_id, maxMerge(last_ns) AS l FROM ${T('session_traces')} WHERE session_id IN (SELECT session_id FROM ${T('spans')} WHERE session_id != '' AND ${spanStartRangeSql(BigInt(fromS) * 1_000_000n)} AND start_ns >= ${BigInt(fromS) * 1_000_000_000n}) ${order}`,
      );
      if (fromS <= lo) break;
      if (rows.length === n && fromS * 1e9 <= Number(rows[n - 1]!.l) - longestNs) break;
    }
    const traces = await sessionsWithTraces(rows.map((r) => r.session_id));
    return rows
      .filter((r) => traces.has(r.session_id))
      .map((r) => summarizeSession(r.session_id, traces.get(r.session_id)!));
  }

  async function getSession(sessionId: string) {
    const traces = (await sessionsWithTraces([sessionId])).get(sessionId);
    if (!traces?.length) return undefined;
    return { session: summarizeSession(sessionId, traces), traces };
  }

  async function services() {
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

  /**
   * One export page (http/export.ts): the records after the key, in (time, id) order, from one
   * keyset SELECT — spans by their start µs and span id (a time range reads only the hours from the
   * key on, as the spans table is ordered by hour; a trace reads trace_spans), log records by time
   * and a hash of the record (they have no id) — cut as every store cuts them (exportPageOf).
   */
  async function exportPage(
    table: 'spans' | 'logs',
    selection: ExportSelection,
    after: ExportKey,
    shape?: ExportShape,
  ): Promise<Uint8Array | undefined> {
    // a range's end past 2100 (the API's default is the end of JS time) is ClickHouse's DateTime's
    const sel =
      'traceId' in selection ? selection : { ...selection, endUs: Math.min(selection.endUs, LAST_US) };
    const [t0, k0] = after;
    const first = t0 === -Infinity;
    const byTrace = 'traceId' in sel;
    let sql: string;
    if (table === 'spans') {
      const key = first
        ? ''
        : ` AND (t > ${literal(t0)} OR (t = ${literal(t0)} AND k > ${literal(String(k0))}))`;
      const where = byTrace
        ? `trace_id = ${literal(sel.traceId)}`
        : spansStartingInSql([BigInt(first ? sel.startUs : Math.max(sel.startUs, t0)), BigInt(sel.endUs)]);
      const from = byTrace ? T('trace_spans') : T('spans');
      const t = byTrace ? 'intDiv(start_ns, 1000)' : 'start_us';
      sql = `SELECT ${t} AS t, span_id AS k, doc FROM ${from} WHERE ${where}${key} ORDER BY t, k LIMIT ${EXPORT_CHUNK_RECORDS}`;
    } else {
      const key = first
        ? ''
        : ` AND (time_us > ${literal(t0)} OR (time_us = ${literal(t0)} AND cityHash64(doc) > toUInt64(${literal(String(k0))})))`;
      const where = byTrace
        ? `trace_id = ${literal(sel.traceId)}`
        : `${daysSql(sel.startUs, sel.endUs)} AND time_us >= ${literal(sel.startUs)} AND time_us < ${literal(sel.endUs)}`;
      sql = `SELECT time_us AS t, toString(cityHash64(doc)) AS k, doc FROM ${T('logs')} WHERE ${where}${key} ORDER BY t, cityHash64(doc) LIMIT ${EXPORT_CHUNK_RECORDS}`;
    }
    const rows = await select<{ t: string | number; k: string; doc: string }>(sql);
    // A span its exporter sent again (a retry ClickHouse had already stored) is a second row with
    // the same key, next to the first in key order: exported once (a page's keyset starts past it).
    const unique =
      table === 'spans'
        ? rows.filter((r, i) => i === 0 || r.k !== rows[i - 1]!.k || r.t !== rows[i - 1]!.t)
        : rows;
    const page = exportPageOf(
      table,
      unique.map((r) => ({ t: Number(r.t), id: r.k, doc: r.doc })),
      shape,
    );
    return exportPageBytes(page);
  }

  const logsOfTrace = async (traceId: string): Promise<LogRecord[]> =>
    docs<LogRecord>(
      await select(`SELECT doc FROM ${T('logs')} WHERE trace_id = ${literal(traceId)} ORDER BY time_ns`),
    );

  /** The whole trace view, or undefined for a trace with no spans (the summary from the spans in hand). */
  async function trace(traceId: string): Promise<TraceResponse | undefined> {
    const [spans, logs] = await Promise.all([spansOfTrace(traceId), logsOfTrace(traceId)]);
    return spans.length ? traceResponse(summarizeTrace(traceId, spans), spans, logs) : undefined;
  }

  return {
    spansOfTrace,
    logsOfTrace,
    listTraces,
    listSessions,
    getSession,
    services,
    trace,
    exportPage,
  };
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
