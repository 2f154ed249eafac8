// The ClickHouse store's alert windows (store.ts AlertWindowBackend): each save is a row per rule
// and group in alert_windows (schema.ts, version 4), a tombstone for a group that is gone; a read
// takes the newest row of each (argMax, whatever merges have done yet). Every collector on the
// database reads the windows any of them saved; a group fed by two collectors at once keeps the
// last one's window.
import type { AlertWindowBackend } from '../store.js';
import { tsvString } from './rows.js';

const COLUMNS = ['rule', 'grp', 'json', 'deleted', 'saved_us'] as const;

export function clickHouseAlertWindows(ch: {
  table: (name: string) => string;
  select<T>(sql: string): Promise<T[]>;
  insert(table: string, columns: readonly string[], lines: string[]): Promise<void>;
}): AlertWindowBackend {
  // Each save after the last (the version merges and reads keep), even within one microsecond.
  let lastUs = 0;
  return {
    async read() {
      const rows = await ch.select<{ rule: string; grp: string; json: string }>(
        `SELECT rule, grp, argMax(json, saved_us) AS json FROM ${ch.table('alert_windows')}
         GROUP BY rule, grp HAVING argMax(deleted, saved_us) = 0 ORDER BY rule, grp`,
      );
      return rows.map((r) => ({ rule: r.rule, group: r.grp, json: r.json }));
    },
    async write(windows) {
      if (!windows.length) return;
      lastUs = Math.max(lastUs + 1, Date.now() * 1000);
      const lines = windows.map(
        (w) =>
          `${tsvString(w.rule)}\t${tsvString(w.group)}\t${tsvString(w.json ?? '')}\t${w.json === null ? 1 : 0}\t${lastUs}\n`,
      );
      await ch.insert('alert_windows', COLUMNS, lines);
    },
  };
}
