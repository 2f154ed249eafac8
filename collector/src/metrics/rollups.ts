import type { StoredBuckets } from './increase.js';

/**
 * Roll-up widths, coarsest first: per series and per hour / per five minutes, the sum of increases,
 * values and counts, the number of points, min, max and the merged histogram buckets of the raw
 * points in that window. Written in the same transaction as the raw points, so a query whose bucket
 * edges fall on these widths adds up a few rows instead of every point.
 */
export const ROLLUP_WIDTHS_US = [3_600_000_000, 300_000_000] as const;

/** A histogram bucket as queries merge it: [lower, upper, count] (lower −∞ / upper +∞ at the ends). */
export type BucketTriple = [number, number, number];

/** [lower, upper, count] buckets of one stored histogram point. */
export function bucketsOf(b: StoredBuckets): BucketTriple[] {
  const out: BucketTriple[] = [];
  if ('b' in b) {
    for (let i = 0; i < b.c.length; i++) {
      const c = b.c[i]!;
      if (c > 0) out.push([i === 0 ? -Infinity : b.b[i - 1]!, i < b.b.length ? b.b[i]! : Infinity, c]);
    }
    return out;
  }
  const base = 2 ** (2 ** -b.s);
  if (b.z > 0) out.push([0, 0, b.z]);
  b.p?.counts.forEach((c, i) => {
    if (c > 0) out.push([base ** (b.p!.offset + i), base ** (b.p!.offset + i + 1), c]);
  });
  b.n?.counts.forEach((c, i) => {
    if (c > 0) out.push([-(base ** (b.n!.offset + i + 1)), -(base ** (b.n!.offset + i)), c]);
  });
  return out;
}

/** Adds buckets into a merge keyed by their edges (the same edges add up; others stay apart). */
export function mergeBuckets(into: Map<string, BucketTriple>, buckets: Iterable<BucketTriple>): void {
  for (const [lo, hi, c] of buckets) {
    const key = `${lo}|${hi}`;
    const had = into.get(key);
    if (had) had[2] += c;
    else into.set(key, [lo, hi, c]);
  }
}

/** A roll-up's merged buckets as stored: JSON triples, the infinite edges written as null. */
export function encodeTriples(merged: Map<string, BucketTriple>): string {
  return JSON.stringify(
    [...merged.values()].map(([lo, hi, c]) => [
      Number.isFinite(lo) ? lo : null,
      Number.isFinite(hi) ? hi : null,
      c,
    ]),
  );
}

export function decodeTriples(json: string): BucketTriple[] {
  return (JSON.parse(json) as [number | null, number | null, number][]).map(([lo, hi, c]) => [
    lo ?? -Infinity,
    hi ?? Infinity,
    c,
  ]);
}

/** Where a time range is read from: raw points (widthUs 0) or one roll-up width, [fromUs, toUs). */
export interface Segment {
  widthUs: number;
  fromUs: number;
  toUs: number;
}

const floorTo = (t: number, w: number) => Math.floor(t / w) * w;
const ceilTo = (t: number, w: number) => Math.ceil(t / w) * w;

/**
 * Splits [fromUs, toUs) into the coarsest pieces that answer it exactly: whole roll-up windows of
 * each usable width in the middle, finer ones towards the edges, raw points for what is left at
 * either end. `usable` are the widths whose windows never straddle a query bucket edge.
 */
export function planSegments(fromUs: number, toUs: number, usable: readonly number[]): Segment[] {
  if (toUs <= fromUs) return [];
  const [width, ...finer] = usable;
  if (width === undefined) return [{ widthUs: 0, fromUs, toUs }];
  const lo = ceilTo(fromUs, width);
  const hi = floorTo(toUs, width);
  if (hi <= lo) return planSegments(fromUs, toUs, finer);
  return [
    ...planSegments(fromUs, lo, finer),
    { widthUs: width, fromUs: lo, toUs: hi },
    ...planSegments(hi, toUs, finer),
  ];
}
