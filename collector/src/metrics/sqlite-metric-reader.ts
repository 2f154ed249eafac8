// The reads of metrics.sqlite: a metric's series, the metric names and the totals a time-series
// query adds up. The store's own connection runs them for tests and benchmarks; the collector runs
// them on a query thread's read-only connection (read-ops.ts), under the query deadline: every
// statement carries SQLite's deadline guard, and the loops over rows check it too.
import type { DatabaseSync } from 'node:sqlite';
import {
  DEADLINE_CHECK_ROWS,
  DEADLINE_GUARD_ANY_SQL,
  DEADLINE_GUARD_SQL,
  checkDeadline,
  registerDeadlineCheck,
} from '../query/sqlite-deadline.js';
import type { Attributes } from '../wire-types.js';
import type { StoredBuckets } from './increase.js';
import { tooManyBucketValues } from './metric-query.js';
import type { MetricKind, Temporality } from './metric-point.js';
import type { MetricName, MetricReader, MetricSeries, SeriesTotals, TotalsRequest } from './metric-store.js';
import { ROLLUP_WIDTHS_US, bucketsOf, decodeTriples, planSegments } from './rollups.js';

const parseSeries = (r: Record<string, unknown>): MetricSeries => ({
  id: r.id as number,
  name: r.name as string,
  kind: r.kind as MetricKind,
  unit: r.unit as string,
  description: r.description as string,
  temporality: r.temporality as Temporality,
  monotonic: r.monotonic === 1,
  service: r.service as string,
  attributes: JSON.parse(r.attributes as string) as Attributes,
  resource: JSON.parse(r.resource as string) as Attributes,
});

/**
 * Reads of metrics.sqlite on `db`. `unwrittenFromUs`: where roll-up rows may lack points (the
 * windows the ingesting store still holds in memory); raw points are read from there on.
 */
export function createSqliteMetricReader(
  db: DatabaseSync,
  unwrittenFromUs: () => number | undefined,
): MetricReader {
  registerDeadlineCheck(db);
  const seriesByName = db.prepare(`SELECT * FROM metric_series WHERE name = ? AND ${DEADLINE_GUARD_SQL}`);
  let rows = 0;
  /** Checks the deadline every DEADLINE_CHECK_ROWS rows a loop reads. */
  const tick = (): void => {
    if (++rows % DEADLINE_CHECK_ROWS === 0) checkDeadline(db);
  };

  /**
   * Roll-up rows where whole windows answer exactly (from the oldest point kept: a window retention
   * cut through holds points that are gone; up to the windows still held in memory, whose rows lack
   * points), raw points for the rest.
   */
  const totals = (q: TotalsRequest): SeriesTotals => {
    const { t: oldestUs } = db.prepare('SELECT min(time_us) AS t FROM metric_points').get() as {
      t: number | null;
    };
    const usable =
      q.rollups === false ? [] : ROLLUP_WIDTHS_US.filter((w) => q.oneBucket || q.stepUs % w === 0);
    const fromUs = Math.max(q.startUs, oldestUs ?? q.endUs);
    const rolledToUs = Math.max(fromUs, Math.min(q.endUs, unwrittenFromUs() ?? q.endUs));
    const segments = [
      ...planSegments(fromUs, rolledToUs, usable),
      ...(rolledToUs < q.endUs ? [{ widthUs: 0, fromUs: rolledToUs, toUs: q.endUs }] : []),
    ];
    const ids = JSON.stringify(q.ids);
    const bucketIndex = (column: string) => `CAST(${column} / ? AS INTEGER) - ?`;
    const statement = (widthUs: number, columns: string, grouped: boolean) =>
      db.prepare(
        widthUs === 0
          ? `SELECT series_id AS s, ${bucketIndex('time_us')} AS b, ${columns} FROM metric_points
             WHERE series_id IN (SELECT value FROM json_each(?)) AND time_us >= ? AND time_us < ? AND ${DEADLINE_GUARD_ANY_SQL}${grouped ? ' GROUP BY s, b' : ' AND buckets IS NOT NULL'}`
          : `SELECT series_id AS s, ${bucketIndex('bucket_us')} AS b, ${columns} FROM metric_rollups
             WHERE series_id IN (SELECT value FROM json_each(?)) AND width_us = ${widthUs} AND bucket_us >= ? AND bucket_us < ? AND ${DEADLINE_GUARD_ANY_SQL}`,
      );
    const out: SeriesTotals = { rows: [], buckets: [] };
    let bucketValues = 0;
    /** Keeps one point's or row's bucket list, within the request's cap on bucket values. */
    const keepBuckets = (s: number, b: number, list: SeriesTotals['buckets'][number]['list']): void => {
      bucketValues += list.length;
      if (q.maxBucketValues !== undefined && bucketValues > q.maxBucketValues)
        throw tooManyBucketValues(q.maxBucketValues);
      out.buckets.push({ s, b, list });
    };
    for (const seg of segments) {
      // Roll-up rows come one by one (a few per series and bucket; grouping them in SQL took a
      // temporary B-tree), with their merged buckets when a percentile needs them.
      const columns =
        seg.widthUs === 0
          ? 'sum(delta) AS d, sum(value) AS v, sum(count) AS c, count(*) AS n, min(coalesce(min, value)) AS mn, max(coalesce(max, value)) AS mx'
          : `delta AS d, value AS v, count AS c, points AS n, min AS mn, max AS mx${q.buckets ? ', buckets' : ''}`;
      // Rows as arrays: node:sqlite builds a row object per row by name, several times slower.
      const stmt = statement(seg.widthUs, columns, seg.widthUs === 0);
      stmt.setReturnArrays(true);
      const arrays = stmt.iterate(q.stepUs, q.firstIndex, ids, seg.fromUs, seg.toUs) as unknown as Iterable<
        [
          number,
          number,
          number | null,
          number,
          number | null,
          number,
          number | null,
          number | null,
          (string | null)?,
        ]
      >;
      for (const [s, b, d, v, c, n, mn, mx, json] of arrays) {
        tick();
        if (json) keepBuckets(s, b, decodeTriples(json));
        out.rows.push({ s, b, d, v, c, n, mn, mx });
      }
      if (q.buckets && seg.widthUs === 0) {
        const points = statement(0, 'buckets', false).iterate(
          q.stepUs,
          q.firstIndex,
          ids,
          seg.fromUs,
          seg.toUs,
        ) as Iterable<{ s: number; b: number; buckets: string }>;
        for (const r of points) {
          tick();
          keepBuckets(r.s, r.b, bucketsOf(JSON.parse(r.buckets) as StoredBuckets));
        }
      }
    }
    return out;
  };

  return {
    seriesOf: async (name) => (seriesByName.all(name) as Record<string, unknown>[]).map(parseSeries),
    names: async () =>
      (
        db
          .prepare(
            `SELECT name, kind, unit, max(description) AS description, count(*) AS series,
               max((SELECT max(time_us) FROM metric_points WHERE series_id = metric_series.id)) AS last_us
             FROM metric_series WHERE ${DEADLINE_GUARD_SQL} GROUP BY name, kind, unit ORDER BY name`,
          )
          .all() as {
          name: string;
          kind: MetricKind;
          unit: string;
          description: string;
          series: number;
          last_us: number;
        }[]
      ).map((r): MetricName => ({
        name: r.name,
        kind: r.kind,
        unit: r.unit,
        description: r.description,
        series: r.series,
        lastMs: Math.floor(r.last_us / 1000),
      })),
    totals: async (q) => totals(q),
  };
}
