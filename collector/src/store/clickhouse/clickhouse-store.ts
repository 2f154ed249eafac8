// The ClickHouse store: any number of collectors write to and read from one ClickHouse (or a
// cluster of shards) through the official client over HTTP. A request's records are acknowledged
// only once ClickHouse answered their INSERT; while it is down or slow, writes fail fast with
// StoreUnavailableError (503 + Retry-After, exporters retry) and a probe brings the store back.
import { Readable } from 'node:stream';
import type { ClickHouseClient } from '@clickhouse/client';
import {
  EXPORT_CHUNK_RECORDS,
  type ExportKey,
  type ExportPage,
  type ExportSelection,
  type ExportShape,
  exportPageOf,
} from '../export-page.js';
import type { Logger } from '../../logger.js';
import { type QueryPool, createQueryPool } from '../reader-pool.js';
import type { LogRecord, SessionSummary, SpanRecord, TraceSummary } from '../../wire-types.js';
import { FIXED_KEYS, noiseFilter } from '../read-options.js';
import {
  type ClickHouseLocation,
  type Backend,
  type MetricBackend,
  StoreConfigError,
  StoreUnavailableError,
  type TraceListFilter,
} from '../store.js';
import { summarizeSession, summarizeTrace } from '../summaries.js';
import { traceResponse } from '../trace-view.js';
import type { MetricRead } from '../../metrics/metric-read.js';
import { createClickHouseMetricStore } from './clickhouse-metrics.js';
import type { MetricLimits, MetricStore } from '../../metrics/metric-store.js';
import { createClickHouseWriter } from './clickhouse-writer.js';
import { dropOldDays } from './clickhouse-retention.js';
import type { LogQuery } from '../../logs/log-query.js';
import { connectClickHouse, isUnreachable } from './clickhouse-client.js';
import { spanStartRangeSql, spansStartingInSql } from './clickhouse-query.js';
import type { ClickHouseWorkerData } from './clickhouse-query-worker.js';
import { LAST_US, daysSql, literal } from './rows.js';
import {
  CLICKHOUSE_SCHEMA_VERSION,
  MIGRATIONS,
  MIN_CLICKHOUSE_VERSION,
  type SchemaTarget,
  migrationsTable,
  tableName,
} from './schema.js';

const encoder = new TextEncoder();
const QUERY_WORKER = new URL(
  import.meta.url.endsWith('.ts') ? './clickhouse-query-worker.ts' : './clickhouse-query-worker.js',
  import.meta.url,
).href;
/** A read decoding rows gives the event loop a turn this often (ms). */
const BREATHE_EVERY_MS = 5;
/** Trace summaries a collector keeps for reuse (about 1 KiB each). */
const MAX_KNOWN_SUMMARIES = 20_000;

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

  // ---- reads -----------------------------------------------------------------------------------
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

  async function attributeKeys(): Promise<string[]> {
    const rows = await select<{ key: string }>(
      `SELECT arrayJoin(groupUniqArrayArrayMerge(keys)) AS key FROM ${T('attribute_key_sets')} ORDER BY key LIMIT 10000`,
    );
    return [...FIXED_KEYS, 'resource.attributes.service.name', ...rows.map((r) => r.key)].filter(
      (k, i, all) => all.indexOf(k) === i,
    );
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
  ): Promise<ExportPage | undefined> {
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
    return page && { last: page.last, line: encoder.encode(`${page.text}\n`) };
  }

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

  const logsOfTrace = async (traceId: string): Promise<LogRecord[]> =>
    docs<LogRecord>(
      await select(`SELECT doc FROM ${T('logs')} WHERE trace_id = ${literal(traceId)} ORDER BY time_ns`),
    );
  const json = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value));
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
      spansOfTrace: fresh(spansOfTrace),
      traceJson: fresh(async (traceId: string) => {
        // The spans and the logs at once; the summary from the spans in hand (not read again).
        const [spans, logs] = await Promise.all([spansOfTrace(traceId), logsOfTrace(traceId)]);
        return spans.length ? json(traceResponse(summarizeTrace(traceId, spans), spans, logs)) : undefined;
      }),
      sessionJson: fresh(async (sessionId: string) => {
        const found = await getSession(sessionId);
        return found && json(found);
      }),
      listTraces: fresh(listTraces),
      listSessions: fresh(listSessions),
      getSession: fresh(getSession),
      services: fresh(services),
      attributeKeys: fresh(attributeKeys),
      // Summaries are kept by materialized views and finished on read: nothing to refresh.
      refreshSummaries: async () => 0,
    },
    logs: { json: fresh((q: LogQuery) => pool.read('logs', [q])), ofTrace: fresh(logsOfTrace) },
    exportPage: fresh(exportPage),
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
