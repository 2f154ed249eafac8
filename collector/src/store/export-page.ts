// What an export page is, shared by the HTTP streamer (http/export.ts) and the stores that read
// pages: SQLite's on its query threads (read-ops.ts), which load no HTTP code, and ClickHouse's.

/** What to export: one trace, or a time window (epoch µs, end exclusive). */
export type ExportSelection = { traceId: string } | { startUs: number; endUs: number };

/**
 * Where a page starts: after this (time µs, id) key; [-Infinity, 0] for the first page. The id is
 * the store's tiebreaker: SQLite's row id, ClickHouse's span id (or a log record's hash).
 */
export type ExportKey = [number, number | string];

/** Records per export line at most. */
export const EXPORT_CHUNK_RECORDS = 1000;
/** An export line ends once its records' JSON passes this many characters (1 MiB). */
export const EXPORT_CHUNK_CHARS = 1 << 20;

/** One page: its OTLP/JSON line (newline included) and the key of its last record. */
export interface ExportPage {
  line: Uint8Array;
  last: ExportKey;
}

/**
 * Reads the page of `table` after `after` for the selection, or undefined when no records are
 * left. The SQLite store builds pages on its query threads (read-ops.ts `exportPage`), the
 * ClickHouse store from one keyset SELECT each (clickhouse-store.ts).
 */
export type ExportPageReader = (
  table: 'spans' | 'logs',
  sel: ExportSelection,
  after: ExportKey,
) => Promise<ExportPage | undefined>;
