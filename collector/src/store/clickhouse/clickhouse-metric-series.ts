// The metric series a collector counts against its series limits: every series in the shared
// database (read at start, added to as this collector stores new ones, read again when retention
// finds them changed), so the limits count what is there, as on SQLite.
import { createHash } from 'node:crypto';
import type { MetricPoint } from '../../metrics/metric-point.js';
import {
  type MetricLimits,
  type SeriesIdentity,
  seriesIdentities,
  seriesLimitReason,
} from '../../metrics/metric-store.js';

/** What the series count reads of ClickHouse. */
export interface SeriesReadContext {
  table(name: string): string;
  select<T>(sql: string): Promise<T[]>;
}

export interface Known {
  id: number;
  /** The last day a series row was written for (one per day it has points: retention drops days). */
  day: string;
}

/** The series counted, by key (those this collector met, up to maxSeries) and by id (all of them). */
export interface SeriesCount {
  limits: MetricLimits;
  identityOf: (p: MetricPoint) => SeriesIdentity;
  known: Map<string, Known>;
  byId: Map<number, Known>;
  perName: Map<string, number>;
}

/** A point's series, with its series row's fields for when the row is new. */
export interface ResolvedSeries {
  k: Known;
  attributes: string;
  resource: string;
}

/** A series' id: 53 bits of a hash of its key, the same on every collector. */
function seriesIdOf(key: string): number {
  const h = createHash('sha256').update(key).digest();
  return h.readUInt32BE(0) * 2 ** 21 + (h.readUInt32BE(4) >>> 11);
}

/** Counts the series in the database, for these limits. */
export async function countSeries(ctx: SeriesReadContext, limits: MetricLimits): Promise<SeriesCount> {
  const count: SeriesCount = {
    limits,
    identityOf: seriesIdentities(),
    known: new Map(),
    byId: new Map(),
    perName: new Map(),
  };
  await readSeries(ctx, count);
  return count;
}

/** Reads the series in the database (every collector's) again: what the series limits count. */
export async function readSeries(ctx: SeriesReadContext, count: SeriesCount): Promise<void> {
  const ids = new Map<number, Known>();
  const perName = new Map<string, number>();
  for (const r of await ctx.select<{ series_id: number; name: string; day: string }>(
    `SELECT series_id, any(name) AS name, toString(max(date)) AS day FROM ${ctx.table('metric_series')} GROUP BY series_id`,
  )) {
    ids.set(r.series_id, count.byId.get(r.series_id) ?? { id: r.series_id, day: r.day });
    perName.set(r.name, (perName.get(r.name) ?? 0) + 1);
  }
  count.byId = ids;
  count.perName = perName;
  count.known = new Map([...count.known].filter(([, k]) => ids.has(k.id)));
}

/** The series of a point, its series row's fields when new; or why its points are refused. */
export function seriesFor(count: SeriesCount, p: MetricPoint): ResolvedSeries | string {
  const { key, attributes, resource } = count.identityOf(p);
  let k = count.known.get(key);
  if (!k) {
    const id = seriesIdOf(key);
    k = count.byId.get(id);
    if (!k) {
      const perName = count.perName.get(p.name) ?? 0;
      const refused = seriesLimitReason(count.limits, p.name, perName, count.byId.size);
      if (refused) return refused;
      k = { id, day: '' };
      count.byId.set(id, k);
      count.perName.set(p.name, perName + 1);
    }
    if (count.known.size < count.limits.maxSeries) count.known.set(key, k);
  }
  return { k, attributes, resource };
}
