// Retention of the SQLite metric store: points older than the age limit, then the oldest tenth at a
// time while the file is over its size budget, and the roll-up rows and series left without points.
import type { DatabaseSync } from 'node:sqlite';

/**
 * Deletes what retention reaches (inside no transaction: each DELETE commits on its own); returns
 * the points deleted and the series gone with them.
 */
export function deleteOldMetricPoints(
  db: DatabaseSync,
  { maxAgeMs, maxBytes }: { maxAgeMs: number; maxBytes: number },
): { deleted: number; gone: { id: number; key: string; name: string }[] } {
  let gone: { id: number; key: string; name: string }[] = [];
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
    deleted += Number(db.prepare('DELETE FROM metric_points WHERE time_us <= ?').run(row.time_us).changes);
  }
  if (deleted) {
    // Windows wholly before the oldest point left; a window the cut goes through stays, and the
    // query reads raw points up to its end (it starts roll-ups after the oldest point).
    const oldest = db.prepare('SELECT min(time_us) AS t FROM metric_points').get() as {
      t: number | null;
    };
    if (oldest.t === null) db.exec('DELETE FROM metric_rollups');
    else db.prepare('DELETE FROM metric_rollups WHERE bucket_us + width_us <= ?').run(oldest.t);
    gone = db
      .prepare(
        'DELETE FROM metric_series WHERE id NOT IN (SELECT DISTINCT series_id FROM metric_points) RETURNING id, key, name',
      )
      .all() as { id: number; key: string; name: string }[];
    if (gone.length)
      db.exec('DELETE FROM metric_rollups WHERE series_id NOT IN (SELECT id FROM metric_series)');
  }
  return { deleted, gone };
}
