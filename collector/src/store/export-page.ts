// What an export page is, shared by the HTTP streamer (http/export.ts) and the stores that read
// pages: SQLite's on its query threads (read-ops.ts), which load no HTTP code, and ClickHouse's.
import { logsToOtlpJson, spansToOtlpJson } from '../otlp/encode-json.js';
import type { LogRecord, SpanRecord } from '../wire-types.js';

/** What to export: one trace, or a time window (epoch µs, end exclusive). */
export type ExportSelection = { traceId: string } | { startUs: number; endUs: number };

/**
 * Where a page starts: after this (time µs, id) key; [-Infinity, 0] for the first page. The id is
 * the store's tiebreaker: SQLite's row id, ClickHouse's span id (or a log record's hash).
 */
export type ExportKey = [number, number | string];

/**
 * How a page is written: one OTLP/JSON request (a line `traces import` or any OTLP receiver takes),
 * or the stored records themselves, one JSON object a line (GET /api/sessions/{id}/spans).
 */
export type ExportShape = 'otlp' | 'records';

/** Records per export line at most. */
export const EXPORT_CHUNK_RECORDS = 1000;
/** An export line ends once its records' JSON passes this many characters (1 MiB). */
export const EXPORT_CHUNK_CHARS = 1 << 20;

/** One page: its line(s) (newline included) and the key of its last record. */
export interface ExportPage {
  line: Uint8Array;
  last: ExportKey;
}

/**
 * Reads the page of `table` after `after` for the selection, or undefined when no records are
 * left. The SQLite store builds pages on its query threads (read-ops.ts `exportPage`), the
 * ClickHouse store from one keyset SELECT each (clickhouse-reads.ts), on its query threads too.
 */
export type ExportPageReader = (
  table: 'spans' | 'logs',
  sel: ExportSelection,
  after: ExportKey,
  shape?: ExportShape,
) => Promise<ExportPage | undefined>;

/**
 * One page from the rows a store read after the key, in (time, id) order: as many as fit in
 * EXPORT_CHUNK_CHARS of JSON (big records, prompts and tool output, make shorter lines), written
 * in `shape` (without the final newline), and the key of its last record; undefined for none.
 * Records go out as stored (no parse) in the `records` shape.
 */
export function exportPageOf(
  table: 'spans' | 'logs',
  rows: Iterable<{ t: number; id: number | string; doc: string }>,
  shape: ExportShape = 'otlp',
): { text: string; last: ExportKey } | undefined {
  const docs: string[] = [];
  let last: ExportKey | undefined;
  let chars = 0;
  for (const r of rows) {
    docs.push(r.doc);
    last = [r.t, r.id];
    chars += r.doc.length;
    if (chars >= EXPORT_CHUNK_CHARS) break;
  }
  if (!last) return undefined;
  if (shape === 'records') return { text: docs.join('\n'), last };
  const records = docs.map((d) => JSON.parse(d) as SpanRecord & LogRecord);
  const body = table === 'spans' ? spansToOtlpJson(records) : logsToOtlpJson(records);
  return { text: JSON.stringify(body), last };
}

const pageEncoder = new TextEncoder();
const pageDecoder = new TextDecoder();

/** A page as a query thread sends it: `{"last":[t,id]}\n`, then its line (newline included). */
export function exportPageBytes(page: { text: string; last: ExportKey } | undefined): Uint8Array | undefined {
  return page && pageEncoder.encode(`${JSON.stringify({ last: page.last })}\n${page.text}\n`);
}

/** The page a query thread sent (exportPageBytes), or undefined for none. */
export function exportPageFromBytes(bytes: Uint8Array | undefined): ExportPage | undefined {
  if (!bytes) return undefined;
  const cut = bytes.indexOf(10);
  const { last } = JSON.parse(pageDecoder.decode(bytes.subarray(0, cut))) as { last: ExportKey };
  return { last, line: bytes.subarray(cut + 1) };
}
