import { type ExpBuckets, type MetricPoint } from './metric-point.js';

/** Histogram buckets as stored: explicit bounds and counts, or exponential scale/zero/±buckets. */
export type StoredBuckets =
  { b: number[]; c: number[] } | { s: number; z: number; p?: ExpBuckets; n?: ExpBuckets };

/** The last cumulative point of a series: what the next one's increase is computed from. */
export interface CumulativeState {
  startUs: number;
  timeUs: number;
  value: number;
  count: number;
  /** The raw (cumulative) buckets, not their increase. */
  buckets: StoredBuckets | undefined;
}

/** One data point as every store keeps it: its raw value and its increase over the series' last. */
export interface StoredPoint {
  timeUs: number;
  /** gauge/sum value; histogram sum */
  value: number;
  /** The increase (delta points as they come): null for gauges. */
  delta: number | null;
  /** A histogram's count increase; null for gauges and sums. */
  count: number | null;
  min: number | null;
  max: number | null;
  /** A histogram's bucket increase. */
  buckets: StoredBuckets | undefined;
}

export const microseconds = (nano: number): number => Math.floor(nano / 1000);

/** Whether a point's increase is worked out from its series' last point (a cumulative sum or histogram). */
export const isCumulative = (p: Pick<MetricPoint, 'kind' | 'temporality'>): boolean =>
  p.kind !== 'gauge' && p.kind !== 'summary' && p.temporality === 'cumulative';

export function storedBuckets(p: MetricPoint): StoredBuckets | undefined {
  if (p.kind === 'histogram')
    return p.bucketCounts?.length ? { b: p.bounds ?? [], c: p.bucketCounts } : undefined;
  if (p.kind !== 'exponential_histogram') return undefined;
  const out: StoredBuckets = { s: p.scale ?? 0, z: p.zeroCount ?? 0 };
  if (p.positive?.counts.length) out.p = p.positive;
  if (p.negative?.counts.length) out.n = p.negative;
  return out;
}

/** Exponential buckets moved to a coarser scale (each step down merges pairs of buckets). */
function downscale(b: ExpBuckets, by: number): Map<number, number> {
  const out = new Map<number, number>();
  b.counts.forEach((c, i) => {
    const index = (b.offset + i) >> by;
    out.set(index, (out.get(index) ?? 0) + c);
  });
  return out;
}

function expMinus(
  cur: ExpBuckets | undefined,
  curScale: number,
  prev: ExpBuckets | undefined,
  prevScale: number,
) {
  if (!cur) return undefined;
  const scale = Math.min(curScale, prevScale);
  const now = downscale(cur, curScale - scale);
  if (prev) for (const [i, c] of downscale(prev, prevScale - scale)) now.set(i, (now.get(i) ?? 0) - c);
  const indexes = [...now.keys()].sort((a, b) => a - b);
  if (!indexes.length) return undefined;
  const offset = indexes[0]!;
  const counts = new Array<number>(indexes.at(-1)! - offset + 1).fill(0);
  for (const [i, c] of now) counts[i - offset] = c;
  return { offset, counts };
}

/** cur − prev, or undefined when the two cannot be subtracted (the layout changed: a reset). */
function bucketsMinus(
  cur: StoredBuckets | undefined,
  prev: StoredBuckets | undefined,
): StoredBuckets | undefined {
  if (!cur || !prev) return cur;
  if ('b' in cur && 'b' in prev) {
    if (cur.b.length !== prev.b.length || cur.b.some((x, i) => x !== prev.b[i])) return undefined;
    return { b: cur.b, c: cur.c.map((x, i) => x - (prev.c[i] ?? 0)) };
  }
  if ('s' in cur && 's' in prev) {
    const out: StoredBuckets = { s: Math.min(cur.s, prev.s), z: cur.z - prev.z };
    const p = expMinus(cur.p, cur.s, prev.p, prev.s);
    const n = expMinus(cur.n, cur.s, prev.n, prev.s);
    if (p) out.p = p;
    if (n) out.n = n;
    return out;
  }
  return undefined;
}

function hasNegative(b: StoredBuckets | undefined): boolean {
  if (!b) return false;
  if ('b' in b) return b.c.some((c) => c < 0);
  return b.z < 0 || !!b.p?.counts.some((c) => c < 0) || !!b.n?.counts.some((c) => c < 0);
}

/**
 * A point as stored, with its increase over `prev` (the series' last cumulative point, if any):
 * delta points as they come; a cumulative one minus the last, with a restart of the counter (a new
 * start time, or a smaller value or count) or a histogram whose bucket layout changed taken as a
 * reset that counts the point whole. `state` is what the series' next point is computed from.
 * Returns why a point is refused instead (a cumulative point older than the last one).
 */
export function storedPointOf(
  p: MetricPoint,
  prev: CumulativeState | undefined,
): { point: StoredPoint; state?: CumulativeState } | string {
  const timeUs = microseconds(p.timeUnixNano);
  const startUs = microseconds(p.startTimeUnixNano);
  const histogram = p.kind === 'histogram' || p.kind === 'exponential_histogram';
  const value = histogram ? (p.sum ?? 0) : p.value!;
  const count = p.count ?? 0;
  const raw = storedBuckets(p);
  let buckets = raw;
  let delta: number | null = null;
  let deltaCount: number | null = histogram ? count : null;
  let state: CumulativeState | undefined;
  if (p.kind === 'sum' || histogram) {
    if (!isCumulative(p)) delta = value;
    else {
      if (prev && timeUs < prev.timeUs)
        return `metric ${JSON.stringify(p.name)}: a cumulative point older than the last one`;
      const reset =
        !prev ||
        startUs !== prev.startUs ||
        (p.kind === 'sum' ? p.monotonic && value < prev.value : count < prev.count);
      if (reset) delta = value;
      else {
        delta = value - prev.value;
        if (histogram) {
          deltaCount = count - prev.count;
          const minus = bucketsMinus(buckets, prev.buckets);
          // A histogram whose buckets changed layout or went down restarted: count it whole.
          if ((buckets && !minus) || hasNegative(minus)) {
            delta = value;
            deltaCount = count;
          } else buckets = minus;
        }
      }
      state = { startUs, timeUs, value, count, buckets: raw };
    }
  }
  const point: StoredPoint = {
    timeUs,
    value,
    delta,
    count: deltaCount,
    min: p.min ?? null,
    max: p.max ?? null,
    buckets,
  };
  return state ? { point, state } : { point };
}
