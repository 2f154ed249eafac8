// What every metric store is (metrics.sqlite: sqlite-metric-store.ts; ClickHouse's metric tables:
// store/clickhouse/clickhouse-metrics.ts): the series, the reads a time-series query makes, ingest
// and retention, and what identifies a series and limits their number, the same in both.
import type { Attributes } from '../wire-types.js';
import type { MetricKind, MetricPoint, Temporality } from './metric-point.js';
import type { BucketTriple } from './rollups.js';

/** One series: a metric name, kind and temporality with one set of attributes from one resource. */
export interface MetricSeries {
  id: number;
  name: string;
  kind: MetricKind;
  unit: string;
  description: string;
  temporality: Temporality;
  monotonic: boolean;
  service: string;
  attributes: Attributes;
  resource: Attributes;
}

/** A metric name as GET /api/metrics lists it. */
export interface MetricName {
  name: string;
  kind: MetricKind;
  unit: string;
  description: string;
  series: number;
  lastMs: number;
}

export interface MetricLimits {
  /** Series per metric name; points of further series are refused (attribute cardinality). */
  maxSeriesPerMetric: number;
  /** Series in all. */
  maxSeries: number;
}

export const DEFAULT_METRIC_LIMITS: MetricLimits = { maxSeriesPerMetric: 10_000, maxSeries: 200_000 };

export interface MetricIngestResult {
  stored: number;
  rejected: number;
  rejectReason?: string;
}

/** What a time-series query asks of a store (metric-query.ts works out the buckets). */
export interface TotalsRequest {
  /** The series (ids from seriesOf). */
  ids: number[];
  /** The points of [startUs, endUs). */
  startUs: number;
  endUs: number;
  /** Time bucket of a point: floor(timeUs / stepUs) − firstIndex. */
  stepUs: number;
  firstIndex: number;
  /** The whole range is one bucket (stepUs is then 2^53). */
  oneBucket: boolean;
  /** Each point's (or roll-up row's) histogram buckets too: a percentile needs them. */
  buckets: boolean;
  /** false: read every raw point, never roll-ups (what tests compare roll-up answers with). */
  rollups?: boolean;
  /**
   * Most bucket values (edges and count of one bucket) the answer may hold; past it the store stops
   * reading and throws metric-query.ts's tooManyBucketValues.
   */
  maxBucketValues?: number;
}

/**
 * The points of one series in one time bucket added up (a store may answer one bucket in several
 * rows: roll-up windows and raw points; the query adds them up).
 */
export interface BucketTotals {
  /** series id */
  s: number;
  /** time bucket */
  b: number;
  /** Σ increase (null: no point has one, as for gauges) */
  d: number | null;
  /** Σ raw values */
  v: number;
  /** Σ histogram count increases */
  c: number | null;
  /** points */
  n: number;
  mn: number | null;
  mx: number | null;
}

/** The answer to a TotalsRequest; `buckets` holds one list per point or roll-up row when asked. */
export interface SeriesTotals {
  rows: BucketTotals[];
  buckets: { s: number; b: number; list: BucketTriple[] }[];
}

/** What a time-series query reads from a store (a query thread has its own, over its connection). */
export interface MetricReader {
  /** Series of one metric name (all of them: bounded by maxSeriesPerMetric). */
  seriesOf(name: string): Promise<MetricSeries[]>;
  /** Every metric name with its kind, unit, description, series count and last point time. */
  names(): Promise<MetricName[]>;
  /** Per series and time bucket, the totals of the points a query reads. */
  totals(request: TotalsRequest): Promise<SeriesTotals>;
}

/**
 * Where metric points are kept: metrics.sqlite beside the span store (createMetricStore), or the
 * ClickHouse store's tables when several collectors share one database (clickhouse-metrics.ts).
 * Async throughout: the ClickHouse one answers over the network. The collector runs its reads on
 * the query threads (Backend.metrics.json); the store's own reads are for tests and benches.
 */
export interface MetricStore extends MetricReader {
  /** Where the points are (a file path, or the ClickHouse database). */
  readonly location: string;
  ingest(points: readonly MetricPoint[]): Promise<MetricIngestResult>;
  /**
   * Deletes points older than maxAgeMs (and over maxBytes, oldest first) and series left without
   * points; returns points deleted.
   */
  applyRetention(opts: { maxAgeMs: number; maxBytes: number }): Promise<number>;
  close(): Promise<void>;
}

/** Attributes as one string, whatever order their keys came in (part of a series' key). */
function canonical(value: Attributes): string {
  return JSON.stringify(value, Object.keys(value).sort());
}

/** A point's series: its key (name, kind, temporality, unit, attributes, resource) and their JSON. */
export interface SeriesIdentity {
  key: string;
  attributes: string;
  resource: string;
}

/**
 * What identifies the series of a point, for every store alike. A resource's canonical JSON is
 * worked out once per decoded resource (every point of it shares the object).
 */
export function seriesIdentities(): (p: MetricPoint) => SeriesIdentity {
  const resourceKeys = new WeakMap<Attributes, string>();
  return (p) => {
    const attributes = canonical(p.attributes);
    let resource = resourceKeys.get(p.resource);
    if (resource === undefined) resourceKeys.set(p.resource, (resource = canonical(p.resource)));
    const key = `${p.name}\u0000${p.kind}\u0000${p.temporality}\u0000${p.unit}\u0000${attributes}\u0000${resource}`;
    return { key, attributes, resource };
  };
}

/** Why a new series of metric `name` is refused (attribute cardinality), or undefined. */
export function seriesLimitReason(
  limits: MetricLimits,
  name: string,
  seriesOfName: number,
  series: number,
): string | undefined {
  if (seriesOfName >= limits.maxSeriesPerMetric)
    return `metric ${JSON.stringify(name)} has ${seriesOfName} series, the limit (attribute values with too many distinct values); points of new series are dropped`;
  if (series >= limits.maxSeries)
    return `the store holds ${series} metric series, the limit; points of new series are dropped`;
  return undefined;
}
