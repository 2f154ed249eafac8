// Reads of the metric tables by series id, a statement's worth of ids at a time: what ingest looks
// up before it writes (each series' last point, the points stored already), and the chunking the
// query reads share.
import type { CumulativeState, StoredBuckets } from '../../metrics/increase.js';
import { daysSql } from './rows.js';
import type { SeriesReadContext } from './clickhouse-metric-series.js';

/**
 * Series ids per statement: an IN list of them is ~17 bytes each, and ClickHouse refuses a
 * statement longer than max_query_size (256 KiB by default).
 */
const IDS_PER_STATEMENT = 4000;

/** Runs `each` over `ids` a statement's worth at a time, one after another. */
export async function inChunks(
  ids: readonly number[],
  each: (chunk: number[]) => Promise<void>,
): Promise<void> {
  for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) await each(ids.slice(i, i + IDS_PER_STATEMENT));
}

/** Each series' last point as metric_last has it (the newest row, merged or not). */
export async function lastStates(
  ctx: SeriesReadContext,
  ids: number[],
): Promise<Map<number, CumulativeState>> {
  const out = new Map<number, CumulativeState>();
  await inChunks(ids, async (chunk) => {
    const rows = await ctx.select<{ id: number; t: number; st: number; v: number; c: number; b: string }>(
      `SELECT series_id AS id, max(time_us) AS t, argMax(start_us, time_us) AS st, argMax(value, time_us) AS v, argMax(cnt, time_us) AS c, argMax(buckets, time_us) AS b FROM ${ctx.table('metric_last')} WHERE series_id IN (${chunk.join(', ')}) GROUP BY series_id`,
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
}

/**
 * Which of these (series, time) points are stored already, as `id|timeUs`: an exporter's retry of
 * a stored point is kept once (as SQLite's primary key keeps it), so queries add rows up as they are.
 */
export async function storedAlready(
  ctx: SeriesReadContext,
  points: readonly { id: number; timeUs: number }[],
): Promise<Set<string>> {
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
      `SELECT series_id AS id, time_us AS t FROM ${ctx.table('metric_points')} WHERE series_id IN (${chunk.join(', ')}) AND ${daysSql(lo, hi)} AND time_us IN (${[...times].join(', ')})`,
    );
    for (const r of rows) out.add(`${r.id}|${r.t}`);
  });
  return out;
}
