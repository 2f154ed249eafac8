/** Turns a `stats` query result into chart data: a time series for bin(), else bars by group. */
import type { AttributeValue } from './view-types.js';

export interface StatsResult {
  columns: string[];
  rows: Record<string, AttributeValue>[];
  timeColumn?: string;
}

export interface Series {
  name: string;
  points: { x: number; y: number }[];
  /**
   * The points as the line draws them: a new segment wherever a bucket has no value (a null in the
   * result, or a bucket missing between two that have one), so a line never bridges a gap.
   */
  segments: { x: number; y: number }[][];
}

export type ChartModel =
  | {
      type: 'line';
      metric: string;
      xTitle: string;
      series: Series[];
      xMin: number;
      xMax: number;
      yMax: number;
    }
  | { type: 'bar'; metric: string; xTitle: string; bars: { label: string; value: number }[]; yMax: number }
  | { type: 'none'; reason: string };

function num(v: AttributeValue | undefined): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  return Number.isFinite(n) ? n : undefined;
}

/** A bin() value as epoch ms: ISO strings and epoch s / ms / µs / ns numbers are accepted. */
export function binTimeMs(v: AttributeValue | undefined): number | undefined {
  if (typeof v === 'string') {
    const d = Date.parse(v);
    if (Number.isFinite(d)) return d;
  }
  const n = num(v);
  if (n === undefined) return undefined;
  // Accept epoch ns, µs, ms or s: pick the unit that lands in a plausible range.
  if (n > 1e17) return n / 1e6;
  if (n > 1e14) return n / 1e3;
  if (n > 1e11) return n;
  return n * 1000;
}

/** Metric columns are those whose values are all numeric; the rest are group keys. */
export function metricColumns(result: StatsResult): string[] {
  return result.columns.filter(
    (c) =>
      c !== result.timeColumn &&
      result.rows.length > 0 &&
      result.rows.every((r) => r[c] === undefined || r[c] === null || num(r[c]) !== undefined),
  );
}

/**
 * One chart per aggregate column: every aggregate of a stats query is plotted, each on its own y
 * axis (a count and a duration in nanoseconds on one axis would flatten the count to nothing).
 */
export function buildCharts(result: StatsResult): ChartModel[] {
  if (result.rows.length === 0) return [{ type: 'none', reason: 'No rows to chart.' }];
  const metrics = metricColumns(result);
  if (metrics.length === 0) return [{ type: 'none', reason: 'No numeric column to chart.' }];
  return metrics.map((metric) => buildChart(result, metric));
}

/** The chart of one aggregate column (default: the first numeric one). */
export function buildChart(result: StatsResult, metric = metricColumns(result)[0]): ChartModel {
  if (result.rows.length === 0) return { type: 'none', reason: 'No rows to chart.' };
  const metrics = metricColumns(result);
  if (metric === undefined || !metrics.includes(metric))
    return { type: 'none', reason: 'No numeric column to chart.' };
  const groups = result.columns.filter((c) => c !== result.timeColumn && !metrics.includes(c));
  const groupLabel = (r: Record<string, AttributeValue>): string =>
    groups.map((g) => String(r[g] ?? '∅')).join(' · ');
  if (result.timeColumn) {
    const byName = new Map<string, { x: number; y: number | undefined }[]>();
    for (const row of result.rows) {
      const x = binTimeMs(row[result.timeColumn]);
      if (x === undefined) continue;
      const name = groups.length > 0 ? groupLabel(row) : metric;
      const points = byName.get(name) ?? [];
      byName.set(name, points);
      points.push({ x, y: num(row[metric]) });
    }
    const valued = [...byName.values()].flat().filter((p) => p.y !== undefined);
    if (valued.length === 0) return { type: 'none', reason: 'The time column has no usable timestamps.' };
    const step = bucketStep([...byName.values()].flat().map((p) => p.x));
    const series = [...byName]
      .map(([name, points]) => lineSeries(name, points, step))
      .sort((p, q) => (p.name < q.name ? -1 : p.name > q.name ? 1 : 0));
    const xs = valued.map((p) => p.x);
    const yMax = Math.max(0, ...valued.map((p) => p.y!));
    return {
      type: 'line',
      metric,
      xTitle: `time (${result.timeColumn})`,
      series,
      xMin: Math.min(...xs),
      xMax: Math.max(...xs),
      yMax,
    };
  }
  const bars = result.rows.map((r, i) => ({
    label: groups.length > 0 ? groupLabel(r) : `row ${i + 1}`,
    value: num(r[metric]) ?? 0,
  }));
  return {
    type: 'bar',
    metric,
    xTitle: groups.length > 0 ? groups.join(' · ') : 'row',
    bars,
    yMax: Math.max(0, ...bars.map((b) => b.value)),
  };
}

/** The buckets' width: the smallest distance between two bucket starts (undefined for one bucket). */
export function bucketStep(xs: readonly number[]): number | undefined {
  const sorted = [...new Set(xs)].sort((a, b) => a - b);
  let step: number | undefined;
  for (let i = 1; i < sorted.length; i++) step = Math.min(step ?? Infinity, sorted[i]! - sorted[i - 1]!);
  return step;
}

/** One line's points in time order and its segments, broken where a bucket has no value. */
function lineSeries(
  name: string,
  raw: { x: number; y: number | undefined }[],
  step: number | undefined,
): Series {
  raw.sort((p, q) => p.x - q.x);
  const points: { x: number; y: number }[] = [];
  const segments: { x: number; y: number }[][] = [];
  let current: { x: number; y: number }[] | undefined;
  for (const p of raw) {
    if (p.y === undefined) {
      current = undefined;
      continue;
    }
    const last = current?.at(-1);
    if (!current || !last || (step !== undefined && p.x - last.x > step * 1.5)) segments.push((current = []));
    current.push({ x: p.x, y: p.y });
    points.push({ x: p.x, y: p.y });
  }
  return { name, points, segments };
}

/**
 * A colour for each of `n` series, none repeated: the theme's six, then hues a golden angle apart.
 */
export function seriesColors(n: number): string[] {
  return Array.from({ length: n }, (_, i) =>
    i < 6 ? `var(--c${i + 1})` : `hsl(${Math.round((i * 137.508) % 360)} 62% 48%)`,
  );
}

/** About `count` round tick values from 0 to at least `max` (1, 2, 5 × 10^n steps). */
export function niceTicks(max: number, count = 4): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((f) => f * mag >= raw) ?? 10) * mag;
  const ticks: number[] = [];
  for (let v = 0; v < max + step * 0.999; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}
