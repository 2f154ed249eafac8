import { type DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { inTransaction, openDatabase } from '../store/sqlite/span-writer.js';
import type { Attributes } from '../wire-types.js';
import {
  type CumulativeState,
  type StoredBuckets,
  type StoredPoint,
  isCumulative,
  microseconds,
  storedPointOf,
} from './increase.js';
import { type MetricKind, type MetricPoint, type Temporality } from './metric-point.js';
import {
  type BucketTriple,
  ROLLUP_WIDTHS_US,
  bucketsOf,
  decodeTriples,
  encodeTriples,
  mergeBuckets,
} from './rollups.js';
import { createSqliteMetricReader } from './sqlite-metric-reader.js';

export type { StoredBuckets };

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

/** One series: a metric name, kind and temporality with one set of attributes from one resource. */
export interface MetricSeries {
  id: number;
  name: string;
  kind: MetricKind;
  unit: string;
  description: string;
  temporality: Temporality;
  monotonic: boolean;
  service: string;
  attributes: Attributes;
  resource: Attributes;
}

/** A metric name as GET /api/metrics lists it. */
export interface MetricName {
  name: string;
  kind: MetricKind;
  unit: string;
  description: string;
  series: number;
  lastMs: number;
}

export interface MetricLimits {
  /** Series per metric name; points of further series are refused (attribute cardinality). */
  maxSeriesPerMetric: number;
  /** Series in all. */
  maxSeries: number;
}

export const DEFAULT_METRIC_LIMITS: MetricLimits = { maxSeriesPerMetric: 10_000, maxSeries: 200_000 };

export interface MetricIngestResult {
  stored: number;
  rejected: number;
  rejectReason?: string;
}

/** What a time-series query asks of a store (metric-query.ts works out the buckets). */
export interface TotalsRequest {
  /** The series (ids from seriesOf). */
  ids: number[];
  /** The points of [startUs, endUs). */
  startUs: number;
  endUs: number;
  /** Time bucket of a point: floor(timeUs / stepUs) − firstIndex. */
  stepUs: number;
  firstIndex: number;
  /** The whole range is one bucket (stepUs is then 2^53). */
  oneBucket: boolean;
  /** Each point's (or roll-up row's) histogram buckets too: a percentile needs them. */
  buckets: boolean;
  /** false: read every raw point, never roll-ups (what tests compare roll-up answers with). */
  rollups?: boolean;
  /**
   * Most bucket values (edges and count of one bucket) the answer may hold; past it the store stops
   * reading and throws metric-query.ts's tooManyBucketValues.
   */
  maxBucketValues?: number;
}

/**
 * The points of one series in one time bucket added up (a store may answer one bucket in several
 * rows: roll-up windows and raw points; the query adds them up).
 */
export interface BucketTotals {
  /** series id */
  s: number;
  /** time bucket */
  b: number;
  /** Σ increase (null: no point has one, as for gauges) */
  d: number | null;
  /** Σ raw values */
  v: number;
  /** Σ histogram count increases */
  c: number | null;
  /** points */
  n: number;
  mn: number | null;
  mx: number | null;
}

/** The answer to a TotalsRequest; `buckets` holds one list per point or roll-up row when asked. */
export interface SeriesTotals {
  rows: BucketTotals[];
  buckets: { s: number; b: number; list: BucketTriple[] }[];
}

/** What a time-series query reads from a store (a query thread has its own, over its connection). */
export interface MetricReader {
  /** Series of one metric name (all of them: bounded by maxSeriesPerMetric). */
  seriesOf(name: string): Promise<MetricSeries[]>;
  /** Every metric name with its kind, unit, description, series count and last point time. */
  names(): Promise<MetricName[]>;
  /** Per series and time bucket, the totals of the points a query reads. */
  totals(request: TotalsRequest): Promise<SeriesTotals>;
}

/**
 * Where metric points are kept: metrics.sqlite beside the span store (createMetricStore), or the
 * ClickHouse store's tables when several collectors share one database (clickhouse-metrics.ts).
 * Async throughout: the ClickHouse one answers over the network. The collector runs its reads on
 * the query threads (Backend.metrics.json); the store's own reads are for tests and benches.
 */
export interface MetricStore extends MetricReader {
  /** Where the points are (a file path, or the ClickHouse database). */
  readonly location: string;
  ingest(points: readonly MetricPoint[]): Promise<MetricIngestResult>;
  /**
   * Deletes points older than maxAgeMs (and over maxBytes, oldest first) and series left without
   * points; returns points deleted.
   */
  applyRetention(opts: { maxAgeMs: number; maxBytes: number }): Promise<number>;
  close(): Promise<void>;
}

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

/** A roll-up row's numbers (the columns of metric_rollups). */
interface RollupTotals {
  delta: number;
  value: number;
  count: number;
  points: number;
  min: number | null;
  max: number | null;
}

/** A roll-up window's running totals while an ingest call adds to it. */
interface Rollup extends RollupTotals {
  buckets: Map<string, BucketTriple> | undefined;
}

/** Attributes as one string, whatever order their keys came in (part of a series' key). */
function canonical(value: Attributes): string {
  return JSON.stringify(value, Object.keys(value).sort());
}

/** A point's series: its key (name, kind, temporality, unit, attributes, resource) and their JSON. */
export interface SeriesIdentity {
  key: string;
  attributes: string;
  resource: string;
}

/**
 * What identifies the series of a point, for every store alike. A resource's canonical JSON is
 * worked out once per decoded resource (every point of it shares the object).
 */
export function seriesIdentities(): (p: MetricPoint) => SeriesIdentity {
  const resourceKeys = new WeakMap<Attributes, string>();
  return (p) => {
    const attributes = canonical(p.attributes);
    let resource = resourceKeys.get(p.resource);
    if (resource === undefined) resourceKeys.set(p.resource, (resource = canonical(p.resource)));
    const key = `${p.name}\u0000${p.kind}\u0000${p.temporality}\u0000${p.unit}\u0000${attributes}\u0000${resource}`;
    return { key, attributes, resource };
  };
}

/** Why a new series of metric `name` is refused (attribute cardinality), or undefined. */
export function seriesLimitReason(
  limits: MetricLimits,
  name: string,
  seriesOfName: number,
  series: number,
): string | undefined {
  if (seriesOfName >= limits.maxSeriesPerMetric)
    return `metric ${JSON.stringify(name)} has ${seriesOfName} series, the limit (attribute values with too many distinct values); points of new series are dropped`;
  if (series >= limits.maxSeries)
    return `the store holds ${series} metric series, the limit; points of new series are dropped`;
  return undefined;
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
  const db = openDatabase(path);
  const { user_version: version } = db.prepare('PRAGMA user_version').get() as { user_version: number };
  if (version > SCHEMA_VERSION)
    throw new Error(`${path} has metrics schema ${version}; this collector knows up to ${SCHEMA_VERSION}`);
  db.exec(SCHEMA);
  db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);

  const seriesIds = new Map<string, number>();
  const seriesPerName = new Map<string, number>();
  for (const row of db.prepare('SELECT id, key, name FROM metric_series').all() as {
    id: number;
    key: string;
    name: string;
  }[]) {
    seriesIds.set(row.key, row.id);
    seriesPerName.set(row.name, (seriesPerName.get(row.name) ?? 0) + 1);
  }
  const previous = new Map<number, CumulativeState>();

  const insertSeries = db.prepare(
    `INSERT INTO metric_series (key, name, kind, unit, description, temporality, monotonic, service, attributes, resource, last_us)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
  );
  // A series' newest point comes from its points (one index seek), read once per series and run:
  // keeping metric_series.last_us current cost one UPDATE per series per export.
  const lastUsOf = db.prepare('SELECT max(time_us) AS last_us FROM metric_points WHERE series_id = ?');
  const identityOf = seriesIdentities();
  const insertPoint = db.prepare(
    'INSERT OR IGNORE INTO metric_points (series_id, time_us, value, delta, count, min, max, buckets) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );

  const seriesFor = (p: MetricPoint): number | string => {
    const service = typeof p.resource['service.name'] === 'string' ? p.resource['service.name'] : '';
    const { key, attributes, resource } = identityOf(p);
    const known = seriesIds.get(key);
    if (known !== undefined) return known;
    const perName = seriesPerName.get(p.name) ?? 0;
    const refused = seriesLimitReason(limits, p.name, perName, seriesIds.size);
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
    seriesIds.set(key, row.id);
    seriesPerName.set(p.name, perName + 1);
    return row.id;
  };

  const selectRollup = db.prepare(
    'SELECT delta, value, count, points, min, max, buckets FROM metric_rollups WHERE series_id = ? AND width_us = ? AND bucket_us = ?',
  );
  const writeRollup = db.prepare(
    `INSERT OR REPLACE INTO metric_rollups (series_id, width_us, bucket_us, delta, value, count, points, min, max, buckets)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const lower = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));
  const upper = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));
  const emptyRollup = (): Rollup => ({
    delta: 0,
    value: 0,
    count: 0,
    points: 0,
    min: null,
    max: null,
    buckets: undefined,
  });
  /** Adds one stored point to a window's totals (the query reads min/max as min ?? value). */
  const addPoint = (r: Rollup, row: StoredPoint, triples: BucketTriple[] | undefined) => {
    r.delta += row.delta ?? 0;
    r.value += row.value;
    r.count += row.count ?? 0;
    r.points += 1;
    r.min = lower(r.min, row.min ?? row.value);
    r.max = upper(r.max, row.max ?? row.value);
    if (triples) mergeBuckets((r.buckets ??= new Map()), triples);
  };

  interface Window {
    seriesId: number;
    widthUs: number;
    bucketUs: number;
    r: Rollup;
    /** Holds points its row does not have yet. */
    dirty: boolean;
  }
  const readWindow = (seriesId: number, widthUs: number, bucketUs: number): Window => {
    const row = selectRollup.get(seriesId, widthUs, bucketUs) as
      (RollupTotals & { buckets: string | null }) | undefined;
    const r = emptyRollup();
    if (row) {
      Object.assign(r, { ...row, buckets: undefined });
      if (row.buckets) mergeBuckets((r.buckets = new Map()), decodeTriples(row.buckets));
    }
    return { seriesId, widthUs, bucketUs, r, dirty: false };
  };
  const writeWindow = (w: Window) => {
    const r = w.r;
    writeRollup.run(
      w.seriesId,
      w.widthUs,
      w.bucketUs,
      r.delta,
      r.value,
      r.count,
      r.points,
      r.min,
      r.max,
      r.buckets ? encodeTriples(r.buckets) : null,
    );
    w.dirty = false;
  };

  /**
   * The newest window of each series and width (key series|width), kept in memory while points come
   * in and written when the series moves on to a later window (points arrive in time order), so an
   * export writes a window row every five minutes or hour per series instead of two per point. The
   * query reads raw points from the oldest unwritten window on (see unwrittenFromUs); a point for an
   * older window is added to its row at once. At open, and after a failed ingest, the windows after
   * each series' last written ones are worked out again from the points.
   */
  const openWindows = new Map<string, Window>();
  const MAX_OPEN_WINDOWS = 100_000;

  const addToRollups = (seriesId: number, row: StoredPoint) => {
    const triples = row.buckets ? bucketsOf(row.buckets) : undefined;
    for (const widthUs of ROLLUP_WIDTHS_US) {
      const bucketUs = Math.floor(row.timeUs / widthUs) * widthUs;
      const key = `${seriesId}|${widthUs}`;
      let w = openWindows.get(key);
      if (w && bucketUs < w.bucketUs) {
        const late = readWindow(seriesId, widthUs, bucketUs);
        addPoint(late.r, row, triples);
        writeWindow(late);
        continue;
      }
      if (!w || w.bucketUs !== bucketUs) {
        if (w?.dirty) writeWindow(w);
        w = readWindow(seriesId, widthUs, bucketUs);
        openWindows.set(key, w);
      }
      addPoint(w.r, row, triples);
      w.dirty = true;
    }
  };

  /** Writes every window holding unwritten points (inside a transaction). */
  const writeOpenWindows = () => {
    for (const w of openWindows.values()) if (w.dirty) writeWindow(w);
  };

  /**
   * Works out again, from the points, each series' windows from its last written one on (that one
   * too: it may have been written before more points came), and writes them (inside a transaction).
   */
  const rebuildOpenWindows = () => {
    openWindows.clear();
    const series = db.prepare('SELECT id FROM metric_series').all() as { id: number }[];
    const lastWritten = db.prepare(
      'SELECT max(bucket_us) AS last FROM metric_rollups WHERE series_id = ? AND width_us = ?',
    );
    const pointsFrom = db.prepare(
      'SELECT time_us, value, delta, count, min, max, buckets FROM metric_points WHERE series_id = ? AND time_us >= ?',
    );
    for (const { id } of series)
      for (const widthUs of ROLLUP_WIDTHS_US) {
        const { last } = lastWritten.get(id, widthUs) as { last: number | null };
        const fresh = new Map<number, Window>();
        for (const p of pointsFrom.iterate(id, last ?? 0) as Iterable<{
          time_us: number;
          value: number;
          delta: number | null;
          count: number | null;
          min: number | null;
          max: number | null;
          buckets: string | null;
        }>) {
          const bucketUs = Math.floor(p.time_us / widthUs) * widthUs;
          let w = fresh.get(bucketUs);
          if (!w)
            fresh.set(bucketUs, (w = { seriesId: id, widthUs, bucketUs, r: emptyRollup(), dirty: true }));
          const buckets = p.buckets ? (JSON.parse(p.buckets) as StoredBuckets) : undefined;
          addPoint(w.r, { ...p, timeUs: p.time_us, buckets }, buckets ? bucketsOf(buckets) : undefined);
        }
        for (const w of fresh.values()) writeWindow(w);
      }
  };

  // A store written by a collector before roll-ups (schema 1) gets them built from its points; any
  // store gets the windows a collector that stopped without writing them left out.
  inTransaction(db, rebuildOpenWindows);

  const ingestOne = (p: MetricPoint, seriesId: number): string | undefined => {
    let prev = previous.get(seriesId);
    if (!prev && isCumulative(p)) {
      const { last_us: lastUs } = lastUsOf.get(seriesId) as { last_us: number | null };
      const startUs = microseconds(p.startTimeUnixNano);
      // First point since this collector started: a counter that started after the last stored
      // point counts from zero; otherwise it is only a baseline (its increase was counted before).
      if (lastUs !== null && lastUs > 0 && startUs < lastUs) {
        const baseline = storedPointOf(p, undefined);
        if (typeof baseline !== 'string') prev = baseline.state;
      }
    }
    const stored = storedPointOf(p, prev);
    if (typeof stored === 'string') return stored;
    const { point, state } = stored;
    if (state) previous.set(seriesId, state);
    const inserted = insertPoint.run(
      seriesId,
      point.timeUs,
      point.value,
      point.delta,
      point.count,
      point.min,
      point.max,
      point.buckets ? JSON.stringify(point.buckets) : null,
    );
    // An exporter's retry of a stored point is kept once, so it is rolled up once.
    if (inserted.changes) addToRollups(seriesId, point);
    return undefined;
  };

  const unwrittenFromUs = (): number | undefined => {
    let from: number | undefined;
    for (const w of openWindows.values())
      if (w.dirty && (from === undefined || w.bucketUs < from)) from = w.bucketUs;
    return from;
  };

  const reader = createSqliteMetricReader(db, unwrittenFromUs);

  return {
    db,
    path,
    location: path,
    async ingest(points) {
      let stored = 0;
      let rejected = 0;
      let rejectReason: string | undefined;
      try {
        inTransaction(db, () => {
          if (openWindows.size > MAX_OPEN_WINDOWS) {
            writeOpenWindows();
            openWindows.clear();
          }
          for (const p of points) {
            const series = seriesFor(p);
            const problem = typeof series === 'string' ? series : ingestOne(p, series);
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
          inTransaction(db, rebuildOpenWindows);
        } catch {
          // The store itself is failing (the first error says why); the next open rebuilds them.
          openWindows.clear();
        }
        throw error;
      }
      return rejectReason === undefined ? { stored, rejected } : { stored, rejected, rejectReason };
    },
    seriesOf: reader.seriesOf,
    names: reader.names,
    unwrittenFromUs,
    totals: reader.totals,
    async applyRetention({ maxAgeMs, maxBytes }) {
      // Windows are read back from their rows after this: write what only memory holds.
      inTransaction(db, writeOpenWindows);
      openWindows.clear();
      const cutoffUs = (Date.now() - maxAgeMs) * 1000;
      let deleted = Number(db.prepare('DELETE FROM metric_points WHERE time_us < ?').run(cutoffUs).changes);
      // Over the size budget: drop the oldest tenth of what is left until under it.
      const size = () => {
        const { page_count: pages, page_size: pageSize } = {
          ...(db.prepare('PRAGMA page_count').get() as { page_count: number }),
          ...(db.prepare('PRAGMA page_size').get() as { page_size: number }),
        };
        const { freelist_count: free } = db.prepare('PRAGMA freelist_count').get() as {
          freelist_count: number;
        };
        return (pages - free) * pageSize;
      };
      for (let i = 0; i < 10 && size() > maxBytes; i++) {
        const row = db
          .prepare(
            'SELECT time_us FROM metric_points ORDER BY time_us LIMIT 1 OFFSET (SELECT count(*) / 10 FROM metric_points)',
          )
          .get() as { time_us: number } | undefined;
        if (!row) break;
        deleted += Number(
          db.prepare('DELETE FROM metric_points WHERE time_us <= ?').run(row.time_us).changes,
        );
      }
      if (deleted) {
        // Windows wholly before the oldest point left; a window the cut goes through stays, and the
        // query reads raw points up to its end (it starts roll-ups after the oldest point).
        const oldest = db.prepare('SELECT min(time_us) AS t FROM metric_points').get() as {
          t: number | null;
        };
        if (oldest.t === null) db.exec('DELETE FROM metric_rollups');
        else db.prepare('DELETE FROM metric_rollups WHERE bucket_us + width_us <= ?').run(oldest.t);
        const gone = db
          .prepare(
            'DELETE FROM metric_series WHERE id NOT IN (SELECT DISTINCT series_id FROM metric_points) RETURNING id, key, name',
          )
          .all() as { id: number; key: string; name: string }[];
        if (gone.length)
          db.exec('DELETE FROM metric_rollups WHERE series_id NOT IN (SELECT id FROM metric_series)');
        for (const s of gone) {
          seriesIds.delete(s.key);
          previous.delete(s.id);
          seriesPerName.set(s.name, (seriesPerName.get(s.name) ?? 1) - 1);
        }
      }
      return deleted;
    },
    async close() {
      inTransaction(db, writeOpenWindows);
      db.close();
    },
  };
}
