// Metric points on ClickHouse: what metrics.sqlite keeps for one collector, kept in the shared
// database so every collector answers for the metrics any of them received (tables in schema.ts).
import { createHash } from 'node:crypto';
import {
  type CumulativeState,
  type StoredBuckets,
  isCumulative,
  microseconds,
  storedPointOf,
} from '../../metrics/increase.js';
import { type MetricKind, type MetricPoint, type Temporality } from '../../metrics/metric-point.js';
import { tooManyBucketValues } from '../../metrics/metric-query.js';
import {
  type BucketTotals,
  DEFAULT_METRIC_LIMITS,
  type MetricIngestResult,
  type MetricLimits,
  type MetricReader,
  type MetricSeries,
  type MetricStore,
  type SeriesTotals,
  seriesIdentities,
  seriesLimitReason,
} from '../../metrics/metric-store.js';
import { type BucketTriple, ROLLUP_WIDTHS_US, bucketsOf, planSegments } from '../../metrics/rollups.js';
import type { Attributes } from '../../wire-types.js';
import { createBatcher } from '../batcher.js';
import { LAST_US, dayOfUs, daysSql, literal, tsvNullable, tsvString } from './rows.js';

/** What the metric tables need of the ClickHouse store. */
export interface ClickHouseMetricsContext {
  /** The database (for `location`). */
  location: string;
  /** The table reads and inserts go through. */
  table(name: string): string;
  select<T>(sql: string): Promise<T[]>;
  /** Inserts TabSeparated lines; rejects with StoreUnavailableError when ClickHouse is not there. */
  insert(table: string, columns: readonly string[], lines: string[]): Promise<void>;
  /** Why writes cannot be taken now (ClickHouse marked down), or undefined. */
  unavailable(): Error | undefined;
  limits?: Partial<MetricLimits>;
}

const SERIES_COLUMNS = [
  'date',
  'series_id',
  'name',
  'kind',
  'unit',
  'description',
  'temporality',
  'monotonic',
  'service',
  'attributes',
  'resource',
] as const;
const POINT_COLUMNS = [
  'date',
  'series_id',
  'time_us',
  'value',
  'delta',
  'cnt',
  'lo',
  'hi',
  'blo',
  'bhi',
  'bc',
] as const;
const LAST_COLUMNS = ['date', 'series_id', 'name', 'time_us', 'start_us', 'value', 'cnt', 'buckets'] as const;

/** A series' id: 53 bits of a hash of its key, the same on every collector. */
function seriesIdOf(key: string): number {
  const h = createHash('sha256').update(key).digest();
  return h.readUInt32BE(0) * 2 ** 21 + (h.readUInt32BE(4) >>> 11);
}

/** Numbers as a TabSeparated Array(Float64) field (±inf for the open ends). */
const floats = (xs: number[]): string =>
  `[${xs.map((x) => (x === Infinity ? 'inf' : x === -Infinity ? '-inf' : String(x))).join(',')}]`;

/** A histogram point's bucket increases as three array fields: lower edges, upper edges, counts. */
function bucketFields(buckets: StoredBuckets | undefined): string {
  const triples = buckets ? bucketsOf(buckets) : [];
  return `${floats(triples.map((t) => t[0]))}\t${floats(triples.map((t) => t[1]))}\t${floats(triples.map((t) => t[2]))}`;
}

/**
 * Series ids per statement: an IN list of them is ~17 bytes each, and ClickHouse refuses a
 * statement longer than max_query_size (256 KiB by default).
 */
const IDS_PER_STATEMENT = 4000;

/** Runs `each` over `ids` a statement's worth at a time, one after another. */
async function inChunks(ids: readonly number[], each: (chunk: number[]) => Promise<void>): Promise<void> {
  for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) await each(ids.slice(i, i + IDS_PER_STATEMENT));
}

interface Known {
  id: number;
  /** The last day a series row was written for (one per day it has points: retention drops days). */
  day: string;
}

/**
 * The metric store on ClickHouse. Each point's increase is worked out at ingest as on SQLite
 * (storedPointOf), from the series' last point as metric_last has it — whichever collector stored
 * it — read once per request. A collector's ingest calls run one at a time, so its own last points
 * are always read back. Series limits count the series in the database: read at start, added to
 * as this collector stores new ones, and read again on a retention run that finds them changed.
 */
export async function createClickHouseMetricStore(ctx: ClickHouseMetricsContext): Promise<MetricStore> {
  const limits = { ...DEFAULT_METRIC_LIMITS, ...ctx.limits };
  const T = ctx.table;
  const reader = createClickHouseMetricReader(ctx);
  let known = new Map<string, Known>();
  let byId = new Map<number, Known>();
  let seriesPerName = new Map<string, number>();
  /** Reads the series in the database (every collector's): what the series limits count. */
  const readSeries = async (): Promise<void> => {
    const ids = new Map<number, Known>();
    const perName = new Map<string, number>();
    for (const r of await ctx.select<{ series_id: number; name: string; day: string }>(
      `SELECT series_id, any(name) AS name, toString(max(date)) AS day FROM ${T('metric_series')} GROUP BY series_id`,
    )) {
      ids.set(r.series_id, byId.get(r.series_id) ?? { id: r.series_id, day: r.day });
      perName.set(r.name, (perName.get(r.name) ?? 0) + 1);
    }
    byId = ids;
    seriesPerName = perName;
    known = new Map([...known].filter(([, k]) => ids.has(k.id)));
  };
  await readSeries();
  const identityOf = seriesIdentities();

  /** The series of a point, its series row's fields when new; or why its points are refused. */
  const seriesFor = (p: MetricPoint): { k: Known; attributes: string; resource: string } | string => {
    const { key, attributes, resource } = identityOf(p);
    let k = known.get(key);
    if (!k) {
      const id = seriesIdOf(key);
      k = byId.get(id);
      if (!k) {
        const perName = seriesPerName.get(p.name) ?? 0;
        const refused = seriesLimitReason(limits, p.name, perName, byId.size);
        if (refused) return refused;
        k = { id, day: '' };
        byId.set(id, k);
        seriesPerName.set(p.name, perName + 1);
      }
      if (known.size < limits.maxSeries) known.set(key, k);
    }
    return { k, attributes, resource };
  };

  /** Each series' last point as metric_last has it (the newest row, merged or not). */
  const lastStates = async (ids: number[]): Promise<Map<number, CumulativeState>> => {
    const out = new Map<number, CumulativeState>();
    await inChunks(ids, async (chunk) => {
      const rows = await ctx.select<{ id: number; t: number; st: number; v: number; c: number; b: string }>(
        `SELECT series_id AS id, max(time_us) AS t, argMax(start_us, time_us) AS st, argMax(value, time_us) AS v, argMax(cnt, time_us) AS c, argMax(buckets, time_us) AS b FROM ${T('metric_last')} WHERE series_id IN (${chunk.join(', ')}) GROUP BY series_id`,
      );
      for (const r of rows)
        out.set(r.id, {
          timeUs: r.t,
          startUs: r.st,
          value: r.v,
          count: r.c,
          buckets: r.b ? (JSON.parse(r.b) as StoredBuckets) : undefined,
        });
    });
    return out;
  };

  /**
   * Which of these (series, time) points are stored already, as `id|timeUs`: an exporter's retry of
   * a stored point is kept once (as SQLite's primary key keeps it), so queries add rows up as they are.
   */
  const storedAlready = async (points: readonly { id: number; timeUs: number }[]): Promise<Set<string>> => {
    const out = new Set<string>();
    const times = new Set<number>();
    let lo = Infinity;
    let hi = -Infinity;
    for (const { timeUs } of points) {
      times.add(timeUs);
      lo = Math.min(lo, timeUs);
      hi = Math.max(hi, timeUs);
    }
    if (!points.length || times.size > 5000) {
      // A request spanning that many instants is a backfill, not a retry: its points are new
      // unless stored at those very times, which the ReplacingMergeTree's merges collapse.
      return out;
    }
    await inChunks([...new Set(points.map((p) => p.id))], async (chunk) => {
      const rows = await ctx.select<{ id: number; t: number }>(
        `SELECT series_id AS id, time_us AS t FROM ${T('metric_points')} WHERE series_id IN (${chunk.join(', ')}) AND ${daysSql(lo, hi)} AND time_us IN (${[...times].join(', ')})`,
      );
      for (const r of rows) out.add(`${r.id}|${r.t}`);
    });
    return out;
  };

  /**
   * Stores the points of several requests, in the order they came, with one read of the last points
   * and of the points stored already, and one INSERT per table; a result per request.
   */
  const ingestBatch = async (
    requests: readonly (readonly MetricPoint[])[],
  ): Promise<MetricIngestResult[]> => {
    const down = ctx.unavailable();
    if (down) throw down;
    const results = requests.map((): MetricIngestResult => ({ stored: 0, rejected: 0 }));
    const reject = (r: MetricIngestResult, why: string) => {
      r.rejected++;
      r.rejectReason ??= why;
    };
    const resolved: {
      p: MetricPoint;
      k: Known;
      attributes: string;
      resource: string;
      r: MetricIngestResult;
    }[] = [];
    const cumulative = new Set<number>();
    requests.forEach((points, i) => {
      const r = results[i]!;
      for (const p of points) {
        const s = seriesFor(p);
        if (typeof s === 'string') reject(r, s);
        else {
          resolved.push({ p, ...s, r });
          if (isCumulative(p)) cumulative.add(s.k.id);
        }
      }
    });
    const [previous, stored0] = await Promise.all([
      lastStates([...cumulative]),
      storedAlready(resolved.map((r) => ({ id: r.k.id, timeUs: microseconds(r.p.timeUnixNano) }))),
    ]);
    const seriesLines: string[] = [];
    const pointLines: string[] = [];
    /** Per series, the newest point of this request: its metric_last row. */
    const last = new Map<number, { name: string; timeUs: number; state: CumulativeState | undefined }>();
    /** Series rows this request writes, by series: the day of each (one per series and day). */
    const newDays = new Map<Known, string>();
    for (const { p, k, attributes, resource, r } of resolved) {
      const prev = previous.get(k.id);
      const result = storedPointOf(p, prev);
      if (typeof result === 'string') {
        reject(r, result);
        continue;
      }
      const { point, state } = result;
      r.stored++;
      if (state) previous.set(k.id, state);
      const had = last.get(k.id);
      if (!had || point.timeUs >= had.timeUs) last.set(k.id, { name: p.name, timeUs: point.timeUs, state });
      const key = `${k.id}|${point.timeUs}`;
      if (stored0.has(key)) continue;
      stored0.add(key);
      const day = dayOfUs(point.timeUs);
      if (k.day < day && (newDays.get(k) ?? '') < day) {
        const service = typeof p.resource['service.name'] === 'string' ? p.resource['service.name'] : '';
        seriesLines.push(
          `${day}\t${k.id}\t${tsvString(p.name)}\t${p.kind}\t${tsvString(p.unit)}\t${tsvString(p.description)}\t${p.temporality}\t${p.monotonic ? 1 : 0}\t${tsvString(service)}\t${tsvString(attributes)}\t${tsvString(resource)}\n`,
        );
        newDays.set(k, day);
      }
      pointLines.push(
        `${day}\t${k.id}\t${point.timeUs}\t${tsvNullable(point.value)}\t${tsvNullable(point.delta)}\t${tsvNullable(point.count)}\t${tsvNullable(point.min)}\t${tsvNullable(point.max)}\t${bucketFields(point.buckets)}\n`,
      );
    }
    const lastLines = [...last].map(
      ([id, l]) =>
        `${dayOfUs(l.timeUs)}\t${id}\t${tsvString(l.name)}\t${l.timeUs}\t${l.state?.startUs ?? 0}\t${tsvNullable(l.state?.value ?? 0)}\t${tsvNullable(l.state?.count ?? 0)}\t${l.state?.buckets ? tsvString(JSON.stringify(l.state.buckets)) : ''}\n`,
    );
    // Points before the last-point rows: if ClickHouse fails between the two, the exporter's retry
    // works out the same increases from the same last points, finds the points stored, and writes
    // the last-point rows.
    if (seriesLines.length) await ctx.insert('metric_series', SERIES_COLUMNS, seriesLines);
    for (const [k, day] of newDays) if (k.day < day) k.day = day;
    if (pointLines.length) await ctx.insert('metric_points', POINT_COLUMNS, pointLines);
    if (lastLines.length) await ctx.insert('metric_last', LAST_COLUMNS, lastLines);
    return results;
  };

  // One batch at a time, each reading the last points the one before it wrote; requests that come
  // while one runs go together in the next (a collector taking many exporters' metrics makes a few
  // round trips to ClickHouse per batch, not per request). A batch that fails fails its requests.
  const batcher = createBatcher(ingestBatch);
  const ingest = (points: readonly MetricPoint[]): Promise<MetricIngestResult> => batcher.add(points);

  return {
    location: ctx.location,
    ingest,
    ...reader,
    // Retention is the ClickHouse store's: the metric tables are dropped day by day with the spans.
    // When the series there are not the ones counted (retention dropped some, other collectors
    // stored more), they are read again: the limits count what is there, as on SQLite.
    async applyRetention() {
      const [row] = await ctx.select<{ n: number }>(
        `SELECT uniqExact(series_id) AS n FROM ${T('metric_series')}`,
      );
      if (Number(row?.n ?? 0) !== byId.size) await readSeries();
      return 0;
    },
    async close() {
      await batcher.flush();
    },
  };
}

/** What the metric reads need of ClickHouse: the store's connection, or a query thread's own. */
export interface ClickHouseMetricReadContext {
  table(name: string): string;
  select<T>(sql: string): Promise<T[]>;
}

/** The reads of the metric tables (a query thread runs them for the collector, under its deadline). */
export function createClickHouseMetricReader(ctx: ClickHouseMetricReadContext): MetricReader {
  const T = ctx.table;
  return {
    async seriesOf(name) {
      const rows = await ctx.select<{
        id: number;
        kind: string;
        unit: string;
        description: string;
        temporality: string;
        monotonic: number;
        service: string;
        attributes: string;
        resource: string;
      }>(
        `SELECT series_id AS id, any(kind) AS kind, any(unit) AS unit, any(description) AS description, any(temporality) AS temporality, any(monotonic) AS monotonic, any(service) AS service, any(attributes) AS attributes, any(resource) AS resource FROM ${T('metric_series')} WHERE name = ${literal(name)} GROUP BY series_id ORDER BY series_id`,
      );
      return rows.map((r): MetricSeries => ({
        id: Number(r.id),
        name,
        kind: r.kind as MetricKind,
        unit: r.unit,
        description: r.description,
        temporality: r.temporality as Temporality,
        monotonic: Number(r.monotonic) === 1,
        service: r.service,
        attributes: JSON.parse(r.attributes) as Attributes,
        resource: JSON.parse(r.resource) as Attributes,
      }));
    },
    async names() {
      const [names, lasts] = await Promise.all([
        ctx.select<{ name: string; kind: MetricKind; unit: string; description: string; series: number }>(
          `SELECT name, kind, unit, max(description) AS description, uniqExact(series_id) AS series FROM ${T('metric_series')} GROUP BY name, kind, unit ORDER BY name`,
        ),
        ctx.select<{ name: string; t: number }>(
          `SELECT name, max(time_us) AS t FROM ${T('metric_last')} GROUP BY name`,
        ),
      ]);
      const lastUs = new Map(lasts.map((r) => [r.name, Number(r.t)]));
      return names.map((r) => ({
        name: r.name,
        kind: r.kind,
        unit: r.unit,
        description: r.description,
        series: Number(r.series),
        lastMs: Math.floor((lastUs.get(r.name) ?? 0) / 1000),
      }));
    },
    async totals(q) {
      const out: SeriesTotals = { rows: [], buckets: [] };
      if (!q.ids.length) return out;
      const endUs = Math.min(q.endUs, LAST_US);
      // Whole windows from the roll-ups whose width divides the query's buckets (as on SQLite), the
      // points for the rest. Unlike SQLite's, these roll-ups hold every point stored (views fill
      // them on INSERT; retention drops the same whole days of both).
      const usable =
        q.rollups === false ? [] : ROLLUP_WIDTHS_US.filter((w) => q.oneBucket || q.stepUs % w === 0);
      const segments = planSegments(q.startUs, endUs, usable);
      if (!segments.length) return out;
      // Rows added up as they are: ingest stores a point once (a retry of a stored one is skipped;
      // one that raced its first attempt through another collector is a second row only until a
      // merge of the ReplacingMergeTree keeps one). Series ids are under 2^53 and the client reads
      // 64-bit numbers as JSON numbers: rows as they come.
      // Each segment's part of a statement, the parts as one UNION ALL: one round trip whatever the
      // number of segments (an unaligned week has raw ends, five-minute and hourly windows).
      const parts = (chunk: number[], part: (where: string, bucket: string, widthUs: number) => string) =>
        segments
          .map((seg) => {
            const time = seg.widthUs ? 'bucket_us' : 'time_us';
            const where = `series_id IN (${chunk.join(', ')}) AND ${daysSql(seg.fromUs, seg.toUs)}${seg.widthUs ? ` AND width_us = ${seg.widthUs}` : ''} AND ${time} >= ${literal(seg.fromUs)} AND ${time} < ${literal(seg.toUs)}`;
            return part(
              where,
              `intDiv(${time}, ${literal(q.stepUs)}) - ${literal(q.firstIndex)}`,
              seg.widthUs,
            );
          })
          .join(' UNION ALL ');
      /** Bucket values the answer may still hold (q.maxBucketValues, less what chunks read). */
      let left = q.maxBucketValues;
      await inChunks(q.ids, async (chunk) => {
        // Nulls as 0 (the query adds them so) and the same column types in every part.
        const totals = parts(chunk, (where, bucket, widthUs) =>
          widthUs
            ? `SELECT series_id AS s, ${bucket} AS b, sumMerge(d) AS d, sumMerge(v) AS v, sumMerge(c) AS c, countMerge(n) AS n, minMerge(mn) AS mn, maxMerge(mx) AS mx FROM ${T('metric_rollup')} WHERE ${where} GROUP BY s, b`
            : `SELECT series_id AS s, ${bucket} AS b, sum(ifNull(delta, 0)) AS d, sum(value) AS v, sum(ifNull(cnt, 0)) AS c, count() AS n, min(ifNull(lo, value)) AS mn, max(ifNull(hi, value)) AS mx FROM ${T('metric_points')} WHERE ${where} GROUP BY s, b`,
        );
        // The buckets of each series and time bucket added up by edges in ClickHouse (one list per
        // series and time bucket comes back, not one per point), beside the totals. JSON has no
        // ±inf: null at the ends.
        const edges = parts(chunk, (where, bucket, widthUs) =>
          widthUs
            ? `SELECT series_id AS s, ${bucket} AS b, edge_lo AS l, edge_hi AS h, sumMerge(c) AS n FROM ${T('metric_bucket_rollup')} WHERE ${where} GROUP BY s, b, l, h`
            : `SELECT s, b, l, h, sum(x) AS n FROM (SELECT series_id AS s, ${bucket} AS b, blo, bhi, bc FROM ${T('metric_points')} WHERE ${where}) ARRAY JOIN blo AS l, bhi AS h, bc AS x GROUP BY s, b, l, h`,
        );
        const [rows, lists] = await Promise.all([
          ctx.select<BucketTotals>(totals),
          q.buckets
            ? ctx.select<{ s: number; b: number; lo: (number | null)[]; hi: (number | null)[]; c: number[] }>(
                `SELECT s, b, groupArray(l) AS lo, groupArray(h) AS hi, groupArray(n) AS c FROM (SELECT s, b, l, h, sum(n) AS n FROM (${edges}) GROUP BY s, b, l, h${left === undefined ? '' : ` LIMIT ${left + 1}`}) GROUP BY s, b`,
              )
            : [],
        ]);
        for (const r of rows) out.rows.push(r);
        // One more bucket value than the cap allows is what the LIMIT lets through when it is passed.
        if (left !== undefined) {
          left -= lists.reduce((n, r) => n + r.c.length, 0);
          if (left < 0) throw tooManyBucketValues(q.maxBucketValues!);
        }
        for (const r of lists)
          out.buckets.push({
            s: r.s,
            b: r.b,
            list: r.c.map((c, i): BucketTriple => [r.lo[i] ?? -Infinity, r.hi[i] ?? Infinity, c]),
          });
      });
      return out;
    },
  };
}
