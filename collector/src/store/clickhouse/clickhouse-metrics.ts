// Metric points on ClickHouse: what metrics.sqlite keeps for one collector, kept in the shared
// database so every collector answers for the metrics any of them received (tables in schema.ts).
// The series counted against the limits are in clickhouse-metric-series.ts, the rows written in
// clickhouse-metric-lines.ts, the reads in clickhouse-metric-reader.ts.
import { type CumulativeState, isCumulative, microseconds, storedPointOf } from '../../metrics/increase.js';
import type { MetricPoint } from '../../metrics/metric-point.js';
import {
  DEFAULT_METRIC_LIMITS,
  type MetricIngestResult,
  type MetricLimits,
  type MetricStore,
} from '../../metrics/metric-store.js';
import { createBatcher } from '../batcher.js';
import {
  LAST_COLUMNS,
  type LastPoint,
  POINT_COLUMNS,
  SERIES_COLUMNS,
  lastLine,
  pointLine,
  seriesLine,
} from './clickhouse-metric-lines.js';
import { lastStates, storedAlready } from './clickhouse-metric-lookups.js';
import { createClickHouseMetricReader } from './clickhouse-metric-reader.js';
import {
  type Known,
  type ResolvedSeries,
  type SeriesCount,
  countSeries,
  readSeries,
  seriesFor,
} from './clickhouse-metric-series.js';
import { dayOfUs } from './rows.js';

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

/**
 * The metric store on ClickHouse. Each point's increase is worked out at ingest as on SQLite
 * (storedPointOf), from the series' last point as metric_last has it — whichever collector stored
 * it — read once per request. A collector's ingest calls run one at a time, so its own last points
 * are always read back. Series limits count the series in the database: read at start, added to
 * as this collector stores new ones, and read again on a retention run that finds them changed.
 */
export async function createClickHouseMetricStore(ctx: ClickHouseMetricsContext): Promise<MetricStore> {
  const series = await countSeries(ctx, { ...DEFAULT_METRIC_LIMITS, ...ctx.limits });
  // One batch at a time, each reading the last points the one before it wrote; requests that come
  // while one runs go together in the next (a collector taking many exporters' metrics makes a few
  // round trips to ClickHouse per batch, not per request). A batch that fails fails its requests.
  const batcher = createBatcher((requests: (readonly MetricPoint[])[]) => ingestBatch(ctx, series, requests));
  return {
    location: ctx.location,
    ingest: (points) => batcher.add(points),
    ...createClickHouseMetricReader(ctx),
    applyRetention: () => applyRetention(ctx, series),
    async close() {
      await batcher.flush();
    },
  };
}

/**
 * Retention is the ClickHouse store's: the metric tables are dropped day by day with the spans.
 * When the series there are not the ones counted (retention dropped some, other collectors stored
 * more), they are read again: the limits count what is there, as on SQLite.
 */
async function applyRetention(ctx: ClickHouseMetricsContext, series: SeriesCount): Promise<number> {
  const [row] = await ctx.select<{ n: number }>(
    `SELECT uniqExact(series_id) AS n FROM ${ctx.table('metric_series')}`,
  );
  if (Number(row?.n ?? 0) !== series.byId.size) await readSeries(ctx, series);
  return 0;
}

/** A point whose series is counted, and the result of the request it came in. */
interface Resolved extends ResolvedSeries {
  p: MetricPoint;
  r: MetricIngestResult;
}

/** The rows a batch writes. */
interface BatchLines {
  series: string[];
  points: string[];
  /** Per series, the newest point of this batch: its metric_last row. */
  last: Map<number, LastPoint>;
  /** Series rows this batch writes, by series: the day of each (one per series and day). */
  newDays: Map<Known, string>;
}

function reject(r: MetricIngestResult, why: string): void {
  r.rejected++;
  r.rejectReason ??= why;
}

/**
 * Stores the points of several requests, in the order they came, with one read of the last points
 * and of the points stored already, and one INSERT per table; a result per request.
 */
async function ingestBatch(
  ctx: ClickHouseMetricsContext,
  series: SeriesCount,
  requests: readonly (readonly MetricPoint[])[],
): Promise<MetricIngestResult[]> {
  const down = ctx.unavailable();
  if (down) throw down;
  const results = requests.map((): MetricIngestResult => ({ stored: 0, rejected: 0 }));
  const { resolved, cumulative } = resolveRequests(series, requests, results);
  const [previous, stored] = await Promise.all([
    lastStates(ctx, [...cumulative]),
    storedAlready(
      ctx,
      resolved.map((r) => ({ id: r.k.id, timeUs: microseconds(r.p.timeUnixNano) })),
    ),
  ]);
  const lines: BatchLines = { series: [], points: [], last: new Map(), newDays: new Map() };
  for (const item of resolved) addPoint(lines, item, previous, stored);
  await writeLines(ctx, lines);
  return results;
}

/** Each request's points with their series (a refused one counted in its result), and the cumulative series. */
function resolveRequests(
  series: SeriesCount,
  requests: readonly (readonly MetricPoint[])[],
  results: MetricIngestResult[],
): { resolved: Resolved[]; cumulative: Set<number> } {
  const resolved: Resolved[] = [];
  const cumulative = new Set<number>();
  requests.forEach((points, i) => {
    const r = results[i]!;
    for (const p of points) {
      const s = seriesFor(series, p);
      if (typeof s === 'string') reject(r, s);
      else {
        resolved.push({ p, ...s, r });
        if (isCumulative(p)) cumulative.add(s.k.id);
      }
    }
  });
  return { resolved, cumulative };
}

/**
 * Works out a point's increase over its series' last (`previous`, updated) and adds its rows to
 * `lines`: its point row unless `stored` has it already, its series row on a day the series has
 * none yet, and its series' last-point row if it is the newest.
 */
function addPoint(
  lines: BatchLines,
  { p, k, attributes, resource, r }: Resolved,
  previous: Map<number, CumulativeState>,
  stored: Set<string>,
): void {
  const result = storedPointOf(p, previous.get(k.id));
  if (typeof result === 'string') return reject(r, result);
  const { point, state } = result;
  r.stored++;
  if (state) previous.set(k.id, state);
  const had = lines.last.get(k.id);
  if (!had || point.timeUs >= had.timeUs) lines.last.set(k.id, { name: p.name, timeUs: point.timeUs, state });
  const key = `${k.id}|${point.timeUs}`;
  if (stored.has(key)) return;
  stored.add(key);
  const day = dayOfUs(point.timeUs);
  if (k.day < day && (lines.newDays.get(k) ?? '') < day) {
    lines.series.push(seriesLine(day, k.id, p, attributes, resource));
    lines.newDays.set(k, day);
  }
  lines.points.push(pointLine(day, k.id, point));
}

async function writeLines(ctx: ClickHouseMetricsContext, lines: BatchLines): Promise<void> {
  const lastLines = [...lines.last].map(([id, l]) => lastLine(id, l));
  // Points before the last-point rows: if ClickHouse fails between the two, the exporter's retry
  // works out the same increases from the same last points, finds the points stored, and writes
  // the last-point rows.
  if (lines.series.length) await ctx.insert('metric_series', SERIES_COLUMNS, lines.series);
  for (const [k, day] of lines.newDays) if (k.day < day) k.day = day;
  if (lines.points.length) await ctx.insert('metric_points', POINT_COLUMNS, lines.points);
  if (lastLines.length) await ctx.insert('metric_last', LAST_COLUMNS, lastLines);
}
