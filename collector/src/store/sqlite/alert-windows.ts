// The SQLite store's alert windows (store.ts AlertWindowBackend): a table in alert-windows.sqlite in
// the data dir, one row per rule and group, written by the main thread (a few rows a second at
// most) on a connection of its own, so it never waits on the writer thread's transactions.
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { AlertWindowBackend } from '../store.js';

export const ALERT_WINDOWS_FILE = 'alert-windows.sqlite';

export function openSqliteAlertWindows(dataDir: string): AlertWindowBackend & { close(): void } {
  const db = new DatabaseSync(join(dataDir, ALERT_WINDOWS_FILE));
  db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 1000;
    CREATE TABLE IF NOT EXISTS alert_windows (rule TEXT NOT NULL, grp TEXT NOT NULL, json TEXT NOT NULL,
      PRIMARY KEY (rule, grp)) WITHOUT ROWID`);
  const all = db.prepare('SELECT rule, grp, json FROM alert_windows ORDER BY rule, grp');
  const put = db.prepare('INSERT OR REPLACE INTO alert_windows (rule, grp, json) VALUES (?, ?, ?)');
  const drop = db.prepare('DELETE FROM alert_windows WHERE rule = ? AND grp = ?');
  return {
    read: async () =>
      (all.all() as { rule: string; grp: string; json: string }[]).map((r) => ({
        rule: r.rule,
        group: r.grp,
        json: r.json,
      })),
    async write(windows) {
      db.exec('BEGIN');
      try {
        for (const w of windows) {
          if (w.json === null) drop.run(w.rule, w.group);
          else put.run(w.rule, w.group, w.json);
        }
        db.exec('COMMIT');
      } catch (error) {
        db.exec('ROLLBACK');
        throw error;
      }
    },
    close: () => db.close(),
  };
}
