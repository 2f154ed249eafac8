// One export page (http/export.ts) of the ClickHouse store: the records after the key, in (time,
// id) order, from one keyset SELECT, cut as every store cuts them (exportPageOf).
import {
  EXPORT_CHUNK_RECORDS,
  type ExportKey,
  type ExportSelection,
  type ExportShape,
  exportPageBytes,
  exportPageOf,
} from '../export-page.js';
import type { ClickHouseReadContext } from './clickhouse-read-context.js';
import { spansStartingInSql } from './clickhouse-sql.js';
import { LAST_US, daysSql, literal } from './rows.js';

/**
 * Spans by their start µs and span id (a time range reads only the hours from the key on, as the
 * spans table is ordered by hour; a trace reads trace_spans), log records by time and a hash of
 * the record (they have no id).
 */
export async function exportPage(
  ctx: ClickHouseReadContext,
  table: 'spans' | 'logs',
  selection: ExportSelection,
  after: ExportKey,
  shape?: ExportShape,
): Promise<Uint8Array | undefined> {
  // a range's end past 2100 (the API's default is the end of JS time) is ClickHouse's DateTime's
  const sel =
    'traceId' in selection ? selection : { ...selection, endUs: Math.min(selection.endUs, LAST_US) };
  const sql = table === 'spans' ? spansPageSql(ctx, sel, after) : logsPageSql(ctx, sel, after);
  const rows = await ctx.select<{ t: string | number; k: string; doc: string }>(sql);
  // A span its exporter sent again (a retry ClickHouse had already stored) is a second row with
  // the same key, next to the first in key order: exported once (a page's keyset starts past it).
  const unique =
    table === 'spans'
      ? rows.filter((r, i) => i === 0 || r.k !== rows[i - 1]!.k || r.t !== rows[i - 1]!.t)
      : rows;
  const page = exportPageOf(
    table,
    unique.map((r) => ({ t: Number(r.t), id: r.k, doc: r.doc })),
    shape,
  );
  return exportPageBytes(page);
}

function spansPageSql({ T }: ClickHouseReadContext, sel: ExportSelection, [t0, k0]: ExportKey): string {
  const first = t0 === -Infinity;
  const key = first ? '' : ` AND (t > ${literal(t0)} OR (t = ${literal(t0)} AND k > ${literal(String(k0))}))`;
  if ('traceId' in sel)
    return `SELECT intDiv(start_ns, 1000) AS t, span_id AS k, doc FROM ${T('trace_spans')} WHERE trace_id = ${literal(sel.traceId)}${key} ORDER BY t, k LIMIT ${EXPORT_CHUNK_RECORDS}`;
  const range = spansStartingInSql([
    BigInt(first ? sel.startUs : Math.max(sel.startUs, t0)),
    BigInt(sel.endUs),
  ]);
  return `SELECT start_us AS t, span_id AS k, doc FROM ${T('spans')} WHERE ${range}${key} ORDER BY t, k LIMIT ${EXPORT_CHUNK_RECORDS}`;
}

function logsPageSql({ T }: ClickHouseReadContext, sel: ExportSelection, [t0, k0]: ExportKey): string {
  const key =
    t0 === -Infinity
      ? ''
      : ` AND (time_us > ${literal(t0)} OR (time_us = ${literal(t0)} AND cityHash64(doc) > toUInt64(${literal(String(k0))})))`;
  const where =
    'traceId' in sel
      ? `trace_id = ${literal(sel.traceId)}`
      : `${daysSql(sel.startUs, sel.endUs)} AND time_us >= ${literal(sel.startUs)} AND time_us < ${literal(sel.endUs)}`;
  return `SELECT time_us AS t, toString(cityHash64(doc)) AS k, doc FROM ${T('logs')} WHERE ${where}${key} ORDER BY t, cityHash64(doc) LIMIT ${EXPORT_CHUNK_RECORDS}`;
}
