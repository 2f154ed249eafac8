// The embedded metrics store (metrics.sqlite in the data dir): series, points with their increases
// worked out at ingest, and the roll-up windows (sqlite-rollup-windows.ts) written in the same
// transaction; its reads are sqlite-metric-reader.ts's, its retention sqlite-metric-retention.ts's.
import type { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { inTransaction, openDatabase } from '../store/sqlite/span-writer.js';
import { type CumulativeState, isCumulative, microseconds, storedPointOf } from './increase.js';
import type { MetricPoint } from './metric-point.js';
import {
  DEFAULT_METRIC_LIMITS,
  type MetricIngestResult,
  type MetricLimits,
  type MetricStore,
  seriesIdentities,
  seriesLimitReason,
} from './metric-store.js';
import { createSqliteMetricReader } from './sqlite-metric-reader.js';
import { deleteOldMetricPoints } from './sqlite-metric-retention.js';
import { createRollupWindows, type RollupWindows } from './sqlite-rollup-windows.js';

/** Schema of `metrics.sqlite` (its own file: metric writes never wait on the span writer's lock). */
const SCHEMA_VERSION = 2;
const SCHEMA = `
CREATE TABLE IF NOT EXISTS metric_series (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  unit TEXT NOT NULL,
  description TEXT NOT NULL,
  temporality TEXT NOT NULL,
  monotonic INTEGER NOT NULL,
  service TEXT NOT NULL,
  attributes TEXT NOT NULL,
  resource TEXT NOT NULL,
  last_us INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS metric_series_name ON metric_series(name);
-- Clustered by series and time: a time-series query reads each series' range in order, and an
-- exporter's retry of a point (same series, same time) is kept once.
CREATE TABLE IF NOT EXISTS metric_points (
  series_id INTEGER NOT NULL,
  time_us INTEGER NOT NULL,
  value REAL,
  delta REAL,
  count REAL,
  min REAL,
  max REAL,
  buckets TEXT,
  PRIMARY KEY (series_id, time_us)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS metric_points_time ON metric_points(time_us);
-- Per series and window (width_us: one hour, five minutes), the points of [bucket_us, +width_us)
-- added up: what a query over whole windows reads instead of the points (see rollups.ts).
CREATE TABLE IF NOT EXISTS metric_rollups (
  series_id INTEGER NOT NULL,
  width_us INTEGER NOT NULL,
  bucket_us INTEGER NOT NULL,
  delta REAL NOT NULL,
  value REAL NOT NULL,
  count REAL NOT NULL,
  points INTEGER NOT NULL,
  min REAL,
  max REAL,
  buckets TEXT,
  PRIMARY KEY (series_id, width_us, bucket_us)
) WITHOUT ROWID;
`;

/** The embedded store: its database, for tests and benchmarks that look inside. */
export interface SqliteMetricStore extends MetricStore {
  readonly db: DatabaseSync;
  readonly path: string;
  /**
   * Where roll-up rows may be missing points (the oldest window still only in memory); undefined
   * when every row is complete. Queries read raw points from there on.
   */
  unwrittenFromUs(): number | undefined;
}

/** The embedded metrics store's file in a data dir. */
export const metricsPath = (dataDir: string): string => join(dataDir, 'metrics.sqlite');

/**
 * The embedded metrics store: one row per series, one row per data point with its increase over the
 * series' previous point already worked out (delta points as they come; cumulative ones minus the
 * last seen, with a restart of the counter — a new start time or a smaller value — taken as a reset),
 * so time-series queries only add up rows.
 */
export function createMetricStore(opts: {
  dataDir: string;
  limits?: Partial<MetricLimits>;
}): SqliteMetricStore {
  const limits = { ...DEFAULT_METRIC_LIMITS, ...opts.limits };
  const path = metricsPath(opts.dataDir);
  const db = openMetricDatabase(path);
  const series = loadSeries(db);
  const seriesFor = createSeriesResolver(db, limits, series);
  const windows = createRollupWindows(db);
  // A store written by a collector before roll-ups (schema 1) gets them built from its points; any
  // store gets the windows a collector that stopped without writing them left out.
  inTransaction(db, windows.rebuild);
  const writePoint = createPointWriter(db, windows, series.previous);
  const reader = createSqliteMetricReader(db, windows.unwrittenFromUs);
  return {
    db,
    path,
    location: path,
    async ingest(points) {
      return ingestPoints(db, windows, points, seriesFor, writePoint);
    },
    seriesOf: reader.seriesOf,
    names: reader.names,
    unwrittenFromUs: windows.unwrittenFromUs,
    totals: reader.totals,
    async applyRetention(retention) {
      // Windows are read back from their rows after this: write what only memory holds.
      inTransaction(db, windows.writeOpen);
      windows.clear();
      const { deleted, gone } = deleteOldMetricPoints(db, retention);
      forgetSeries(series, gone);
      return deleted;
    },
    async close() {
      inTransaction(db, windows.writeOpen);
      db.close();
    },
  };
}

/** Opens `metrics.sqlite`, refusing a schema newer than this collector's, and brings it up to date. */
function openMetricDatabase(path: string): DatabaseSync {
  const db = openDatabase(path);
  const { user_version: version } = db.prepare('PRAGMA user_version').get() as { user_version: number };
  if (version > SCHEMA_VERSION)
    throw new Error(`${path} has metrics schema ${version}; this collector knows up to ${SCHEMA_VERSION}`);
  db.exec(SCHEMA);
  db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
  return db;
}

/** What the store keeps in memory of its series: ids by key, counts per name (for the limits). */
interface SeriesState {
  readonly ids: Map<string, number>;
  readonly perName: Map<string, number>;
  /** Per series id, the last cumulative point seen since this collector started. */
  readonly previous: Map<number, CumulativeState>;
}

function loadSeries(db: DatabaseSync): SeriesState {
  const ids = new Map<string, number>();
  const perName = new Map<string, number>();
  for (const row of db.prepare('SELECT id, key, name FROM metric_series').all() as {
    id: number;
    key: string;
    name: string;
  }[]) {
    ids.set(row.key, row.id);
    perName.set(row.name, (perName.get(row.name) ?? 0) + 1);
  }
  return { ids, perName, previous: new Map() };
}

/** Series that retention deleted are forgotten, so a point of theirs makes them anew. */
function forgetSeries(series: SeriesState, gone: readonly { id: number; key: string; name: string }[]): void {
  for (const s of gone) {
    series.ids.delete(s.key);
    series.previous.delete(s.id);
    series.perName.set(s.name, (series.perName.get(s.name) ?? 1) - 1);
  }
}

/** A point's series id, its row inserted when new; or why the series limits refuse it. */
function createSeriesResolver(
  db: DatabaseSync,
  limits: MetricLimits,
  series: SeriesState,
): (p: MetricPoint) => number | string {
  const insertSeries = db.prepare(
    `INSERT INTO metric_series (key, name, kind, unit, description, temporality, monotonic, service, attributes, resource, last_us)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
  );
  const identityOf = seriesIdentities();
  return (p) => {
    const service = typeof p.resource['service.name'] === 'string' ? p.resource['service.name'] : '';
    const { key, attributes, resource } = identityOf(p);
    const known = series.ids.get(key);
    if (known !== undefined) return known;
    const perName = series.perName.get(p.name) ?? 0;
    const refused = seriesLimitReason(limits, p.name, perName, series.ids.size);
    if (refused) return refused;
    const row = insertSeries.get(
      key,
      p.name,
      p.kind,
      p.unit,
      p.description,
      p.temporality,
      p.monotonic ? 1 : 0,
      service,
      attributes,
      resource,
      0,
    ) as { id: number };
    series.ids.set(key, row.id);
    series.perName.set(p.name, perName + 1);
    return row.id;
  };
}

/** Stores one point of a known series with its increase, and rolls it up; or why it is refused. */
function createPointWriter(
  db: DatabaseSync,
  windows: RollupWindows,
  previous: Map<number, CumulativeState>,
): (p: MetricPoint, seriesId: number) => string | undefined {
  // A series' newest point comes from its points (one index seek), read once per series and run:
  // keeping metric_series.last_us current cost one UPDATE per series per export.
  const lastUsOf = db.prepare('SELECT max(time_us) AS last_us FROM metric_points WHERE series_id = ?');
  const insertPoint = db.prepare(
    'INSERT OR IGNORE INTO metric_points (series_id, time_us, value, delta, count, min, max, buckets) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  return (p, seriesId) => {
    let prev = previous.get(seriesId);
    if (!prev && isCumulative(p)) {
      const { last_us: lastUs } = lastUsOf.get(seriesId) as { last_us: number | null };
      // First point since this collector started: a counter that started after the last stored
      // point counts from zero; otherwise it is only a baseline (its increase was counted before).
      if (lastUs !== null && lastUs > 0 && microseconds(p.startTimeUnixNano) < lastUs) {
        const baseline = storedPointOf(p, undefined);
        if (typeof baseline !== 'string') prev = baseline.state;
      }
    }
    const stored = storedPointOf(p, prev);
    if (typeof stored === 'string') return stored;
    const { point, state } = stored;
    if (state) previous.set(seriesId, state);
    const buckets = point.buckets ? JSON.stringify(point.buckets) : null;
    const { timeUs, value, delta, count, min, max } = point;
    const inserted = insertPoint.run(seriesId, timeUs, value, delta, count, min, max, buckets);
    // An exporter's retry of a stored point is kept once, so it is rolled up once.
    if (inserted.changes) windows.add(seriesId, point);
    return undefined;
  };
}

/** One export in one transaction: each point's series, then the point; a refusal counts, not throws. */
function ingestPoints(
  db: DatabaseSync,
  windows: RollupWindows,
  points: readonly MetricPoint[],
  seriesFor: (p: MetricPoint) => number | string,
  writePoint: (p: MetricPoint, seriesId: number) => string | undefined,
): MetricIngestResult {
  let stored = 0;
  let rejected = 0;
  let rejectReason: string | undefined;
  try {
    inTransaction(db, () => {
      windows.bound();
      for (const p of points) {
        const series = seriesFor(p);
        const problem = typeof series === 'string' ? series : writePoint(p, series);
        if (problem === undefined) stored++;
        else {
          rejected++;
          rejectReason ??= problem;
        }
      }
    });
  } catch (error) {
    // Rolled back: the windows held here hold points that are not stored; work them out again.
    try {
      inTransaction(db, windows.rebuild);
    } catch {
      // The store itself is failing (the first error says why); the next open rebuilds them.
      windows.clear();
    }
    throw error;
  }
  return rejectReason === undefined ? { stored, rejected } : { stored, rejected, rejectReason };
}
