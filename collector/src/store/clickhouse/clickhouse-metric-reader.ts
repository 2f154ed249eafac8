// The reads of the metric tables: the series of a metric, the metric names, and a time-series
// query's totals per series and time bucket, from the roll-ups and the raw points.
import type { MetricKind, Temporality } from '../../metrics/metric-point.js';
import { tooManyBucketValues } from '../../metrics/metric-query.js';
import type {
  BucketTotals,
  MetricReader,
  MetricSeries,
  SeriesTotals,
  TotalsRequest,
} from '../../metrics/metric-store.js';
import { type BucketTriple, ROLLUP_WIDTHS_US, type Segment, planSegments } from '../../metrics/rollups.js';
import type { Attributes } from '../../wire-types.js';
import { inChunks } from './clickhouse-metric-lookups.js';
import { LAST_US, daysSql, literal } from './rows.js';

/** What the metric reads need of ClickHouse: the store's connection, or a query thread's own. */
export interface ClickHouseMetricReadContext {
  table(name: string): string;
  select<T>(sql: string): Promise<T[]>;
}

/** The reads of the metric tables (a query thread runs them for the collector, under its deadline). */
export function createClickHouseMetricReader(ctx: ClickHouseMetricReadContext): MetricReader {
  return {
    seriesOf: (name) => seriesOf(ctx, name),
    names: () => names(ctx),
    totals: (q) => totals(ctx, q),
  };
}

interface SeriesRow {
  id: number;
  kind: string;
  unit: string;
  description: string;
  temporality: string;
  monotonic: number;
  service: string;
  attributes: string;
  resource: string;
}

async function seriesOf(ctx: ClickHouseMetricReadContext, name: string): Promise<MetricSeries[]> {
  const rows = await ctx.select<SeriesRow>(
    `SELECT series_id AS id, any(kind) AS kind, any(unit) AS unit, any(description) AS description, any(temporality) AS temporality, any(monotonic) AS monotonic, any(service) AS service, any(attributes) AS attributes, any(resource) AS resource FROM ${ctx.table('metric_series')} WHERE name = ${literal(name)} GROUP BY series_id ORDER BY series_id`,
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
}

async function names(ctx: ClickHouseMetricReadContext): ReturnType<MetricReader['names']> {
  const [names, lasts] = await Promise.all([
    ctx.select<{ name: string; kind: MetricKind; unit: string; description: string; series: number }>(
      `SELECT name, kind, unit, max(description) AS description, uniqExact(series_id) AS series FROM ${ctx.table('metric_series')} GROUP BY name, kind, unit ORDER BY name`,
    ),
    ctx.select<{ name: string; t: number }>(
      `SELECT name, max(time_us) AS t FROM ${ctx.table('metric_last')} GROUP BY name`,
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
}

async function totals(ctx: ClickHouseMetricReadContext, q: TotalsRequest): Promise<SeriesTotals> {
  const out: SeriesTotals = { rows: [], buckets: [] };
  if (!q.ids.length) return out;
  const segments = segmentsOf(q);
  if (!segments.length) return out;
  // Rows added up as they are: ingest stores a point once (a retry of a stored one is skipped;
  // one that raced its first attempt through another collector is a second row only until a
  // merge of the ReplacingMergeTree keeps one). Series ids are under 2^53 and the client reads
  // 64-bit numbers as JSON numbers: rows as they come.
  /** Bucket values the answer may still hold (q.maxBucketValues, less what chunks read). */
  let left = q.maxBucketValues;
  await inChunks(q.ids, async (chunk) => {
    left = await totalsOfChunk(ctx, q, segments, chunk, left, out);
  });
  return out;
}

/**
 * Whole windows from the roll-ups whose width divides the query's buckets (as on SQLite), the
 * points for the rest. Unlike SQLite's, these roll-ups hold every point stored (views fill them on
 * INSERT; retention drops the same whole days of both).
 */
function segmentsOf(q: TotalsRequest): Segment[] {
  const endUs = Math.min(q.endUs, LAST_US);
  const usable = q.rollups === false ? [] : ROLLUP_WIDTHS_US.filter((w) => q.oneBucket || q.stepUs % w === 0);
  return planSegments(q.startUs, endUs, usable);
}

/** One segment's SELECT, given its condition, its time bucket expression and its roll-up width (0: raw). */
type SegmentSql = (where: string, bucket: string, widthUs: number) => string;

/**
 * Each segment's part of a statement, the parts as one UNION ALL: one round trip whatever the
 * number of segments (an unaligned week has raw ends, five-minute and hourly windows).
 */
function unionOf(q: TotalsRequest, segments: Segment[], chunk: number[], part: SegmentSql): string {
  return segments
    .map((seg) => {
      const time = seg.widthUs ? 'bucket_us' : 'time_us';
      const where = `series_id IN (${chunk.join(', ')}) AND ${daysSql(seg.fromUs, seg.toUs)}${seg.widthUs ? ` AND width_us = ${seg.widthUs}` : ''} AND ${time} >= ${literal(seg.fromUs)} AND ${time} < ${literal(seg.toUs)}`;
      return part(where, `intDiv(${time}, ${literal(q.stepUs)}) - ${literal(q.firstIndex)}`, seg.widthUs);
    })
    .join(' UNION ALL ');
}

/** Totals per series and time bucket. Nulls as 0 (the query adds them so) and the same column types in every part. */
const totalsPart =
  (T: (name: string) => string): SegmentSql =>
  (where, bucket, widthUs) =>
    widthUs
      ? `SELECT series_id AS s, ${bucket} AS b, sumMerge(d) AS d, sumMerge(v) AS v, sumMerge(c) AS c, countMerge(n) AS n, minMerge(mn) AS mn, maxMerge(mx) AS mx FROM ${T('metric_rollup')} WHERE ${where} GROUP BY s, b`
      : `SELECT series_id AS s, ${bucket} AS b, sum(ifNull(delta, 0)) AS d, sum(value) AS v, sum(ifNull(cnt, 0)) AS c, count() AS n, min(ifNull(lo, value)) AS mn, max(ifNull(hi, value)) AS mx FROM ${T('metric_points')} WHERE ${where} GROUP BY s, b`;

/**
 * The buckets of each series and time bucket added up by edges in ClickHouse (one list per series
 * and time bucket comes back, not one per point), beside the totals. JSON has no ±inf: null at the
 * ends.
 */
const edgesPart =
  (T: (name: string) => string): SegmentSql =>
  (where, bucket, widthUs) =>
    widthUs
      ? `SELECT series_id AS s, ${bucket} AS b, edge_lo AS l, edge_hi AS h, sumMerge(c) AS n FROM ${T('metric_bucket_rollup')} WHERE ${where} GROUP BY s, b, l, h`
      : `SELECT s, b, l, h, sum(x) AS n FROM (SELECT series_id AS s, ${bucket} AS b, blo, bhi, bc FROM ${T('metric_points')} WHERE ${where}) ARRAY JOIN blo AS l, bhi AS h, bc AS x GROUP BY s, b, l, h`;

interface BucketListRow {
  s: number;
  b: number;
  lo: (number | null)[];
  hi: (number | null)[];
  c: number[];
}

/**
 * Reads one chunk of series into `out`; returns the bucket values the answer may still hold, or
 * throws tooManyBucketValues once they run out.
 */
async function totalsOfChunk(
  ctx: ClickHouseMetricReadContext,
  q: TotalsRequest,
  segments: Segment[],
  chunk: number[],
  left: number | undefined,
  out: SeriesTotals,
): Promise<number | undefined> {
  const edges = unionOf(q, segments, chunk, edgesPart(ctx.table));
  const [rows, lists] = await Promise.all([
    ctx.select<BucketTotals>(unionOf(q, segments, chunk, totalsPart(ctx.table))),
    q.buckets
      ? ctx.select<BucketListRow>(
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
  return left;
}
