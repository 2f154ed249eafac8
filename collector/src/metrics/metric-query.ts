import type { AttributeValue } from '../wire-types.js';
import { type MetricKind } from './metric-point.js';
import { type BucketTotals, type MetricReader, type MetricSeries } from './metric-store.js';
import { type BucketTriple, mergeBuckets } from './rollups.js';

/** A time-series question: one metric, filtered and grouped by attributes, in time buckets. */
export interface MetricQuery {
  name: string;
  /** sum, rate, avg, min, max, count, or a percentile pNN (histograms). Default by kind. */
  fn?: string;
  /** Attributes to group by (point attributes, then resource attributes; `service.name` too). */
  by?: string[];
  /** `key=value` / `key!=value` filters, all of which must hold. */
  where?: string[];
  startMs: number;
  endMs: number;
  /**
   * Bucket width; default: the range in at most 300 buckets, at least 1 s. Bucket edges fall on
   * whole multiples of it since the epoch (the first and last bucket clipped to the range); a step
   * of the whole range or more gives one bucket.
   */
  stepMs?: number;
  /** false: read every raw point, never the roll-ups (what tests compare roll-up answers with). */
  rollups?: boolean;
}

export interface MetricSeriesResult {
  group: Record<string, string>;
  /** [bucket start ms, value or null when the bucket has no data] */
  points: [number, number | null][];
}

export interface MetricQueryResult {
  name: string;
  /** null: no point of this name was ever stored (then no series, not an error). */
  kind: MetricKind | null;
  unit: string;
  fn: string;
  startMs: number;
  endMs: number;
  stepMs: number;
  series: MetricSeriesResult[];
  /** Groups beyond MAX_GROUPS were left out (the largest are kept). */
  truncated?: boolean;
}

/** Thrown for a query that cannot be answered as asked (HTTP 400 with the message). */
export class MetricQueryError extends Error {
  override name = 'MetricQueryError';
  readonly status: number;
  // A plain field, not a parameter property: the query threads load this file with Node's type
  // stripping when running from src/ (tests), which has no parameter properties.
  constructor(message: string, status = 400) {
    super(message);
    this.status = status;
  }
}

export const MAX_BUCKETS = 5000;
export const MAX_GROUPS = 200;
/**
 * Series × time buckets one query may read (its totals hold a row for each, and its answer a cell
 * for each group and bucket): 1,666 series over the default 300 buckets, 138 over `every 1s since
 * 1h`. More is refused before anything is read.
 */
export const MAX_SERIES_BUCKETS = 500_000;
/**
 * Histogram bucket values (one bucket's edges and count) one percentile may hold: 10,000
 * series-buckets of 200 bounds. The store stops reading past it.
 */
export const MAX_BUCKET_VALUES = 2_000_000;

/** The refusal of a percentile whose histograms hold more buckets than MAX_BUCKET_VALUES. */
export function tooManyBucketValues(limit: number): MetricQueryError {
  return new MetricQueryError(
    `the percentile needs more than ${limit} histogram bucket values (series × time buckets × bucket bounds), the limit; narrow it with where, a longer step (every) or a shorter range (since)`,
  );
}
const DEFAULT_BUCKETS = 300;

const FNS_BY_KIND: Record<MetricKind, readonly string[]> = {
  sum: ['sum', 'rate', 'avg', 'min', 'max', 'count'],
  gauge: ['avg', 'min', 'max', 'sum', 'count'],
  histogram: ['p50', 'sum', 'count', 'rate', 'avg', 'min', 'max'],
  exponential_histogram: ['p50', 'sum', 'count', 'rate', 'avg', 'min', 'max'],
  summary: [],
};
const PERCENTILE = /^p(\d{1,2}(\.\d+)?|100)$/;

function attributeOf(s: MetricSeries, key: string): AttributeValue | undefined {
  if (key in s.attributes) return s.attributes[key];
  if (key in s.resource) return s.resource[key];
  if (key === 'service.name') return s.service;
  return undefined;
}

const text = (v: AttributeValue | undefined): string =>
  v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v);

function parseWhere(where: string[]): ((s: MetricSeries) => boolean)[] {
  return where.map((w) => {
    const m = /^\s*([^!=\s]+)\s*(!?=)\s*(.*?)\s*$/.exec(w);
    if (!m) throw new MetricQueryError(`where: ${JSON.stringify(w)} is not key=value or key!=value`);
    const [, key, op, raw] = m as unknown as [string, string, string, string];
    const value = raw.replace(/^"(.*)"$/, '$1');
    return op === '='
      ? (s) => text(attributeOf(s, key)) === value
      : (s) => text(attributeOf(s, key)) !== value;
  });
}

/** The q-quantile of merged buckets, linear within a bucket; infinite edges clamp to min/max. */
export function percentileOf(
  merged: Iterable<BucketTriple>,
  q: number,
  min: number,
  max: number,
): number | null {
  const buckets = [...merged].sort((a, b) => a[1] - b[1] || a[0] - b[0]);
  const total = buckets.reduce((n, b) => n + b[2], 0);
  if (total <= 0) return null;
  const rank = q * total;
  let seen = 0;
  for (const [lower, upper, count] of buckets) {
    if (seen + count >= rank) {
      const lo = Number.isFinite(lower) ? Math.max(lower, min) : min;
      const hi = Number.isFinite(upper) ? Math.min(upper, max) : max;
      if (!Number.isFinite(lo) || !Number.isFinite(hi)) return Number.isFinite(hi) ? hi : lo;
      return lo + ((hi - lo) * (rank - seen)) / count;
    }
    seen += count;
  }
  return Number.isFinite(max) ? max : buckets.at(-1)![1];
}

interface Cell {
  delta: number;
  value: number;
  count: number;
  points: number;
  min: number;
  max: number;
  /** Σ of the raw values (gauge values; histogram sums) */
  raw: number;
  /** Each point's or roll-up row's buckets (each list has distinct edges), merged when read. */
  buckets?: BucketTriple[][];
}

/** One list of buckets with distinct edges: a single list as it is, several merged by edges. */
function mergedOf(lists: BucketTriple[][] | undefined): Iterable<BucketTriple> {
  if (!lists?.length) return [];
  if (lists.length === 1) return lists[0]!;
  const merged = new Map<string, BucketTriple>();
  for (const list of lists) mergeBuckets(merged, list);
  return merged.values();
}

const newCell = (): Cell => ({
  delta: 0,
  value: 0,
  count: 0,
  points: 0,
  min: Infinity,
  max: -Infinity,
  raw: 0,
});

function unseenMetric(q: MetricQuery): MetricQueryResult {
  return {
    name: q.name,
    kind: null,
    unit: '',
    fn: q.fn ?? '',
    startMs: q.startMs,
    endMs: q.endMs,
    stepMs: q.stepMs ?? q.endMs - q.startMs,
    series: [],
  };
}

/** The function asked for (or the kind's default), checked against the metric's kind. */
interface ChosenFn {
  fn: string;
  percentile: RegExpExecArray | null;
  histogram: boolean;
}

function chooseFn(q: MetricQuery, kind: MetricKind): ChosenFn {
  const allowed = FNS_BY_KIND[kind];
  const fn = q.fn ?? allowed[0]!;
  const percentile = PERCENTILE.exec(fn);
  const histogram = kind === 'histogram' || kind === 'exponential_histogram';
  if (!(allowed.includes(fn) || (histogram && percentile)))
    throw new MetricQueryError(
      `fn ${JSON.stringify(fn)} does not apply to ${kind} ${JSON.stringify(q.name)}; use ${allowed.join(', ')}${histogram ? ' or a percentile pNN' : ''}`,
    );
  return { fn, percentile, histogram };
}

/** The query's time buckets: the step, the range in µs and the first bucket's index. */
interface TimeBuckets {
  stepMs: number;
  startUs: number;
  endUs: number;
  stepUs: number;
  firstIndex: number;
  oneBucket: boolean;
  buckets: number;
}

function timeBucketsOf(q: MetricQuery): TimeBuckets {
  const rangeMs = q.endMs - q.startMs;
  const stepMs = q.stepMs ?? Math.max(1000, Math.ceil(rangeMs / DEFAULT_BUCKETS / 1000) * 1000);
  if (!Number.isFinite(stepMs) || stepMs < 0.001)
    throw new MetricQueryError('stepMs must be a positive number');
  const startUs = Math.round(q.startMs * 1000);
  const endUs = Math.round(q.endMs * 1000);
  // Bucket edges fall on whole multiples of the step since the epoch (as CloudWatch rounds its
  // periods), the first and last bucket clipped to the range; a step of the whole range or more is
  // one bucket. Aligned edges are what lets whole roll-up windows answer for the points.
  const oneBucket = stepMs >= rangeMs;
  const stepUs = oneBucket ? 2 ** 53 : Math.round(stepMs * 1000);
  const firstIndex = Math.floor(startUs / stepUs);
  const buckets = oneBucket ? 1 : Math.floor((endUs - 1) / stepUs) - firstIndex + 1;
  if (buckets > MAX_BUCKETS)
    throw new MetricQueryError(`${buckets} time buckets asked for; at most ${MAX_BUCKETS} (raise stepMs)`);
  return { stepMs, startUs, endUs, stepUs, firstIndex, oneBucket, buckets };
}

/** The series the where filters keep; refused when they and the buckets are too many to read. */
function chooseSeries(all: MetricSeries[], q: MetricQuery, buckets: number): MetricSeries[] {
  const filters = parseWhere(q.where ?? []);
  const chosen = all.filter((s) => filters.every((f) => f(s)));
  if (chosen.length * buckets > MAX_SERIES_BUCKETS)
    throw new MetricQueryError(
      `${chosen.length} series × ${buckets} time buckets is ${chosen.length * buckets} to read, more than ${MAX_SERIES_BUCKETS}, the limit; narrow it with where, a longer step (every, stepMs) or a shorter range (since)`,
    );
  return chosen;
}

/** Each series' group key (its `by` values as JSON) and each group's values. */
function groupsOf(chosen: MetricSeries[], by: string[]) {
  const groupOf = new Map<number, string>();
  const groups = new Map<string, Record<string, string>>();
  for (const s of chosen) {
    const group: Record<string, string> = {};
    for (const key of by) group[key] = text(attributeOf(s, key));
    const key = JSON.stringify(group);
    groupOf.set(s.id, key);
    if (!groups.has(key)) groups.set(key, group);
  }
  return { groupOf, groups };
}

/** Group → one cell per time bucket. */
type Cells = Map<string, Cell[]>;

function cellOf(cells: Cells, buckets: number, group: string, b: number): Cell {
  let list = cells.get(group);
  if (!list) cells.set(group, (list = Array.from({ length: buckets }, newCell)));
  return list[b]!;
}

/**
 * The store's rows summed per series and time bucket (a store may answer one series' bucket in
 * several rows: roll-up windows and raw points). Keyed by the series' place in `chosen` (a
 * ClickHouse series id is a 53-bit hash).
 */
function perSeriesTotals(rows: BucketTotals[], chosen: MetricSeries[], buckets: number) {
  const place = new Map(chosen.map((s, i) => [s.id, i]));
  const perSeries = new Map<number, BucketTotals>();
  for (const r of rows) {
    const key = place.get(r.s)! * buckets + r.b;
    const had = perSeries.get(key);
    if (!had) perSeries.set(key, { ...r });
    else {
      had.d = (had.d ?? 0) + (r.d ?? 0);
      had.v += r.v;
      had.c = (had.c ?? 0) + (r.c ?? 0);
      had.n += r.n;
      had.mn = had.mn === null ? r.mn : r.mn === null ? had.mn : Math.min(had.mn, r.mn);
      had.mx = had.mx === null ? r.mx : r.mx === null ? had.mx : Math.max(had.mx, r.mx);
    }
  }
  return perSeries;
}

/** Adds one series' totals in one bucket to its group's cell. */
function addToCell(cell: Cell, r: BucketTotals, kind: MetricKind): void {
  cell.delta += r.d ?? 0;
  // A gauge's sum across series adds each series' own average in the bucket.
  cell.value += kind === 'gauge' ? r.v / r.n : r.v;
  cell.raw += r.v;
  cell.count += r.c ?? 0;
  cell.points += r.n;
  if (r.mn !== null) cell.min = Math.min(cell.min, r.mn);
  if (r.mx !== null) cell.max = Math.max(cell.max, r.mx);
}

/** A cell's value under the query's function; null when the bucket has no data. */
function valueOf(cell: Cell, { fn, percentile, histogram }: ChosenFn, kind: MetricKind, stepMs: number) {
  if (cell.points === 0) return null;
  if (percentile)
    return percentileOf(mergedOf(cell.buckets), Number(percentile[1]) / 100, cell.min, cell.max);
  switch (fn) {
    case 'sum':
      return kind === 'gauge' ? cell.value : cell.delta;
    case 'rate':
      return (histogram ? cell.count : cell.delta) / (stepMs / 1000);
    case 'count':
      return histogram ? cell.count : cell.points;
    case 'avg':
      if (histogram) return cell.count > 0 ? cell.delta / cell.count : null;
      return kind === 'gauge' ? cell.raw / cell.points : cell.delta / cell.points;
    case 'min':
      return Number.isFinite(cell.min) ? cell.min : null;
    case 'max':
      return Number.isFinite(cell.max) ? cell.max : null;
    default:
      return null;
  }
}

/** The MAX_GROUPS largest series (by Σ|value|), then all in group order; whether some were left out. */
function largestInOrder(all: MetricSeriesResult[]): { series: MetricSeriesResult[]; truncated: boolean } {
  let series = all;
  let truncated = false;
  if (series.length > MAX_GROUPS) {
    const weight = (s: MetricSeriesResult) => s.points.reduce((n, [, v]) => n + Math.abs(v ?? 0), 0);
    series = series.sort((a, b) => weight(b) - weight(a)).slice(0, MAX_GROUPS);
    truncated = true;
  }
  series.sort((a, b) => JSON.stringify(a.group).localeCompare(JSON.stringify(b.group)));
  return { series, truncated };
}

/** The store's totals for the chosen series, in cells per group and time bucket. */
async function cellsOf(
  store: MetricReader,
  q: MetricQuery,
  chosen: MetricSeries[],
  groupOf: Map<number, string>,
  t: TimeBuckets,
  kind: MetricKind,
  wantBuckets: boolean,
): Promise<Cells> {
  const cells: Cells = new Map();
  const answer = await store.totals({
    ids: chosen.map((s) => s.id),
    startUs: t.startUs,
    endUs: t.endUs,
    stepUs: t.stepUs,
    firstIndex: t.firstIndex,
    oneBucket: t.oneBucket,
    buckets: wantBuckets,
    ...(wantBuckets ? { maxBucketValues: MAX_BUCKET_VALUES } : {}),
    ...(q.rollups === false ? { rollups: false } : {}),
  });
  for (const { s, b, list } of answer.buckets)
    (cellOf(cells, t.buckets, groupOf.get(s)!, b).buckets ??= []).push(list);
  // Per series and bucket first (a gauge's bucket value is each series' own average), then groups.
  for (const r of perSeriesTotals(answer.rows, chosen, t.buckets).values())
    addToCell(cellOf(cells, t.buckets, groupOf.get(r.s)!, r.b), r, kind);
  return cells;
}

/** One series per group: each time bucket's start (the first clipped to the range) and value. */
function seriesOfCells(
  cells: Cells,
  groups: Map<string, Record<string, string>>,
  q: MetricQuery,
  t: TimeBuckets,
  chosenFn: ChosenFn,
  kind: MetricKind,
): MetricSeriesResult[] {
  return [...cells.entries()].map(([key, list]) => ({
    group: groups.get(key)!,
    points: list.map(
      (cell, i) =>
        [i === 0 ? q.startMs : (t.firstIndex + i) * t.stepMs, valueOf(cell, chosenFn, kind, t.stepMs)] as [
          number,
          number | null,
        ],
    ),
  }));
}

/** Answers a time-series query from the metric store. Throws MetricQueryError for a bad question. */
export async function queryMetric(store: MetricReader, q: MetricQuery): Promise<MetricQueryResult> {
  if (!q.name) throw new MetricQueryError('name is required (GET /api/metrics lists the names)');
  if (!Number.isFinite(q.startMs) || !Number.isFinite(q.endMs) || q.endMs <= q.startMs)
    throw new MetricQueryError('startMs must be before endMs');
  const all = await store.seriesOf(q.name);
  // A name no exporter has sent yet (a stack with spans but no runtime metrics) is an empty
  // answer: a dashboard asks for the names it knows before any point of them arrives.
  if (!all.length) return unseenMetric(q);
  const { kind, unit } = all[0]!;
  const chosenFn = chooseFn(q, kind);
  const t = timeBucketsOf(q);
  const chosen = chooseSeries(all, q, t.buckets);
  const { groupOf, groups } = groupsOf(chosen, q.by ?? []);
  const wantBuckets = chosenFn.histogram && chosenFn.percentile !== null;
  const cells = await cellsOf(store, q, chosen, groupOf, t, kind, wantBuckets);
  const { series, truncated } = largestInOrder(seriesOfCells(cells, groups, q, t, chosenFn, kind));
  return {
    name: q.name,
    kind,
    unit,
    fn: chosenFn.fn,
    startMs: q.startMs,
    endMs: q.endMs,
    stepMs: t.stepMs,
    series,
    ...(truncated ? { truncated } : {}),
  };
}
