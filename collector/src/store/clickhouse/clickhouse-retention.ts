// Retention on ClickHouse: whole daily partitions of the span and log tables (and the tables their
// views fill) are dropped, by age and then by size.
import type { RetentionOptions } from '../read-options.js';
import { literal } from './rows.js';
import { type SchemaTarget, localName } from './schema-ddl.js';
import { DAILY_TABLES } from './schema.js';

/**
 * Drops whole daily partitions: by age (days entirely older than the cutoff), then by size
 * (oldest days first while the tables are bigger than maxBytes; the newest day is kept). Returns
 * the span and log rows dropped.
 */
export async function dropOldDays(
  ch: {
    select<T>(sql: string): Promise<T[]>;
    command(sql: string): Promise<void>;
  },
  target: SchemaTarget,
  opts: RetentionOptions,
  nowMs = Date.now(),
): Promise<number> {
  const parts = await ch.select<{ partition: string; rows: number; bytes: number; table: string }>(
    `SELECT partition, table, sum(rows) AS rows, sum(bytes_on_disk) AS bytes FROM system.parts WHERE active AND database = ${literal(target.database)} AND table IN (${DAILY_TABLES.map((t) => literal(target.cluster ? `${t}_local` : t)).join(', ')}) GROUP BY partition, table`,
  );
  const days = new Map<string, { rows: number; bytes: number }>();
  for (const p of parts) {
    const day = p.partition.replace(/^'|'$/g, '');
    const d = days.get(day) ?? { rows: 0, bytes: 0 };
    if (/^(spans|logs)(_local)?$/.test(p.table)) d.rows += Number(p.rows);
    d.bytes += Number(p.bytes);
    days.set(day, d);
  }
  const ordered = [...days.keys()].sort();
  const drop = new Set<string>();
  if (opts.maxAgeMs !== undefined && opts.maxAgeMs > 0) {
    const cutoff = new Date(nowMs - opts.maxAgeMs).toISOString().slice(0, 10);
    for (const d of ordered) if (d < cutoff) drop.add(d);
  }
  if (opts.maxBytes !== undefined && opts.maxBytes > 0) {
    let total = ordered.filter((d) => !drop.has(d)).reduce((n, d) => n + days.get(d)!.bytes, 0);
    for (const d of ordered.slice(0, -1)) {
      if (total <= opts.maxBytes) break;
      if (drop.has(d)) continue;
      drop.add(d);
      total -= days.get(d)!.bytes;
    }
  }
  let deleted = 0;
  for (const d of drop) {
    for (const t of DAILY_TABLES) {
      await ch.command(
        `ALTER TABLE ${localName(target, t)}${target.cluster ? ` ON CLUSTER ${target.cluster}` : ''} DROP PARTITION ${literal(d)}`,
      );
    }
    deleted += days.get(d)!.rows;
  }
  return deleted;
}
