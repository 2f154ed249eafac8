// The SQLite metric store's roll-up windows (metric_rollups, see rollups.ts): the newest window of
// each series and width kept in memory while points come in, written when the series moves on, and
// worked out again from the points at open and after a failed ingest.
import type { DatabaseSync } from 'node:sqlite';
import type { StoredBuckets, StoredPoint } from './increase.js';
import {
  type BucketTriple,
  ROLLUP_WIDTHS_US,
  bucketsOf,
  decodeTriples,
  encodeTriples,
  mergeBuckets,
} from './rollups.js';

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

/** The roll-up windows of the metric store on `db`; every write runs inside the caller's transaction. */
export function createRollupWindows(db: DatabaseSync) {
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

  const unwrittenFromUs = (): number | undefined => {
    let from: number | undefined;
    for (const w of openWindows.values())
      if (w.dirty && (from === undefined || w.bucketUs < from)) from = w.bucketUs;
    return from;
  };

  return {
    /** Adds a stored point to its windows. */
    add: addToRollups,
    writeOpen: writeOpenWindows,
    rebuild: rebuildOpenWindows,
    unwrittenFromUs,
    /** Forgets the windows held in memory (read back from their rows as points come). */
    clear: (): void => openWindows.clear(),
    /** Writes and forgets the windows held when there are too many. */
    bound(): void {
      if (openWindows.size <= MAX_OPEN_WINDOWS) return;
      writeOpenWindows();
      openWindows.clear();
    },
  };
}

export type RollupWindows = ReturnType<typeof createRollupWindows>;
