import type { Attributes } from '../wire-types.js';

export type MetricKind = 'gauge' | 'sum' | 'histogram' | 'exponential_histogram' | 'summary';
export type Temporality = 'delta' | 'cumulative' | 'unspecified';

/** Buckets of one side of an exponential histogram: counts from bucket index `offset` upward. */
export interface ExpBuckets {
  offset: number;
  counts: number[];
}

/** One decoded OTLP data point with its metric's identity (the unit of metrics ingest). */
export interface MetricPoint {
  name: string;
  description: string;
  unit: string;
  kind: MetricKind;
  temporality: Temporality;
  monotonic: boolean;
  resource: Attributes;
  scope: string;
  attributes: Attributes;
  /** Nanoseconds since the epoch as numbers (microsecond precision is all the store keeps). */
  startTimeUnixNano: number;
  timeUnixNano: number;
  /** gauge and sum */
  value?: number;
  /** histogram, exponential histogram, summary */
  count?: number;
  sum?: number;
  min?: number;
  max?: number;
  /** histogram: upper bounds (the last bucket is +Inf) and one more count than bounds */
  bounds?: number[];
  bucketCounts?: number[];
  /** exponential histogram */
  scale?: number;
  zeroCount?: number;
  positive?: ExpBuckets;
  negative?: ExpBuckets;
}

/** What a decoded ExportMetricsServiceRequest yields. */
export interface DecodedMetricPoints {
  points: MetricPoint[];
  /** Data points refused (NaN, negative counts, summaries, …): reported as partial success. */
  rejected: number;
  rejectReason?: string;
}

/**
 * Explicit bounds one histogram data point may have. SDK defaults have 15 (OpenTelemetry) or 11
 * (Prometheus clients); every bound costs a stored bucket per point and per query cell.
 */
export const MAX_EXPLICIT_BOUNDS = 200;
/** Buckets on each side of an exponential histogram point: twice the OpenTelemetry SDK's default maxSize (160). */
export const MAX_EXPONENTIAL_BUCKETS = 320;

/** 2100-01-01T00:00:00Z in ns. */
const LAST_TIME_UNIX_NANO = Date.UTC(2100, 0, 1) * 1e6;

/**
 * Checks a point before it is stored; returns why it is refused. A point that cannot be right
 * (a NaN, a negative count, buckets that do not add up) is refused alone, never the whole request.
 */
export function invalidReason(p: MetricPoint): string | undefined {
  const where = `metric ${JSON.stringify(p.name)}`;
  if (!p.name) return 'a metric has no name';
  if (!Number.isFinite(p.timeUnixNano) || p.timeUnixNano <= 0) return `${where}: timeUnixNano is missing`;
  // Stores keep days to 2100 (ClickHouse's Date ends in 2106): a point past that is a broken clock.
  if (p.timeUnixNano >= LAST_TIME_UNIX_NANO) return `${where}: timeUnixNano is after the year 2100`;
  if (p.kind === 'summary') return `${where}: summary points are not stored (use a histogram)`;
  if (p.kind === 'gauge' || p.kind === 'sum') {
    if (p.value === undefined || !Number.isFinite(p.value)) return `${where}: value is ${String(p.value)}`;
    if (p.kind === 'sum' && p.monotonic && p.value < 0)
      return `${where}: a monotonic sum is negative (${p.value})`;
    return undefined;
  }
  const count = p.count ?? 0;
  if (!Number.isFinite(count) || count < 0) return `${where}: count is ${count}`;
  for (const v of [p.sum, p.min, p.max])
    if (v !== undefined && !Number.isFinite(v)) return `${where}: sum/min/max is ${v}`;
  const tooMany = bucketLimitReason(p);
  if (tooMany) return `${where}: ${tooMany}`;
  const counts =
    p.kind === 'histogram'
      ? (p.bucketCounts ?? [])
      : [...(p.positive?.counts ?? []), ...(p.negative?.counts ?? []), p.zeroCount ?? 0];
  let total = 0;
  for (const c of counts) {
    if (!Number.isFinite(c) || c < 0) return `${where}: a bucket count is ${c}`;
    total += c;
  }
  if (p.kind === 'histogram') {
    const bounds = p.bounds ?? [];
    if (counts.length && counts.length !== bounds.length + 1)
      return `${where}: ${counts.length} bucket counts for ${bounds.length} bounds (need bounds + 1)`;
    for (let i = 0; i < bounds.length; i++)
      if (!Number.isFinite(bounds[i]) || (i > 0 && bounds[i]! <= bounds[i - 1]!))
        return `${where}: explicit bounds must be finite and increasing`;
  } else if (p.scale === undefined || !Number.isInteger(p.scale) || p.scale < -10 || p.scale > 20)
    return `${where}: scale ${p.scale} is outside -10..20`;
  if (counts.length && Math.abs(total - count) > 0.5)
    return `${where}: bucket counts add up to ${total}, count is ${count}`;
  return undefined;
}

/** Why a histogram point has more buckets than a point may have (MAX_EXPLICIT_BOUNDS, …), or undefined. */
function bucketLimitReason(p: MetricPoint): string | undefined {
  const bounds = p.bounds?.length ?? 0;
  if (bounds > MAX_EXPLICIT_BOUNDS)
    return `explicitBounds has ${bounds} bounds, more than ${MAX_EXPLICIT_BOUNDS} (the limit per data point); use fewer buckets or an exponential histogram`;
  for (const [side, b] of [
    ['positive', p.positive],
    ['negative', p.negative],
  ] as const) {
    const n = b?.counts.length ?? 0;
    if (n > MAX_EXPONENTIAL_BUCKETS)
      return `${side}.bucketCounts has ${n} buckets, more than ${MAX_EXPONENTIAL_BUCKETS} (the limit per data point); use a smaller maxSize`;
  }
  return undefined;
}
