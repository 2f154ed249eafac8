// The spans' and logs' columns, TabSeparated fields (the metric tables' rows), and the one quoting of values
// spliced into ClickHouse SQL (18.16 has no server-side query parameters: `{name:Type}` arrived in
// 19.x, so values are rendered as literals, here and nowhere else).
import { HOT_ATTRIBUTES } from '../../query/fields.js';

/**
 * 2100-01-01 in µs: time ranges end there at the latest (a partition's Date ends in 2106, and
 * 18.16's DateTime too).
 */
export const LAST_US = Date.UTC(2100, 0, 1) * 1000;

/** Epoch ns → the UTC day (YYYY-MM-DD) of the partition. */
export const dayOf = (ns: number): string => new Date(Math.floor(ns / 1e6)).toISOString().slice(0, 10);

/** Epoch µs → the UTC day of the partition (from µs: a whole µs times 1000 may round in a double). */
export const dayOfUs = (us: number): string => new Date(Math.floor(us / 1000)).toISOString().slice(0, 10);

/**
 * The partition days a µs range touches, as a condition on `date` (day literals, whatever the
 * server's time zone), the range clipped to 1970 and 2100.
 */
export const daysSql = (fromUs: number, toUs: number): string =>
  `date >= toDate(${literal(dayOfUs(Math.max(0, fromUs)))}) AND date <= toDate(${literal(dayOfUs(Math.min(LAST_US, Math.max(0, toUs))))})`;

/** A ClickHouse string literal: backslash escapes for `\`, `'` and control characters. */
export function quoteString(s: string): string {
  // eslint-disable-next-line no-control-regex
  return `'${s.replace(/[\\'\u0000-\u001f]/g, (c) => (c === '\\' || c === "'" ? `\\${c}` : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`))}'`;
}

/** A value as a ClickHouse literal (finite numbers only; NaN/∞ become NULL). */
export function literal(v: string | number | bigint | boolean | null | undefined): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'string') return quoteString(v);
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'boolean') return v ? '1' : '0';
  return Number.isFinite(v) ? String(v) : 'NULL';
}

/** A string as a TabSeparated field: backslash escapes for `\`, tab, newline, CR and NUL. */
export function tsvString(s: string): string {
  // eslint-disable-next-line no-control-regex
  return /[\\\t\n\r\u0000]/.test(s)
    ? // eslint-disable-next-line no-control-regex
      s.replace(/[\\\t\n\r\u0000]/g, (c) =>
        c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : c === '\r' ? '\\r' : '\\0',
      )
    : s;
}

/** A number or string as a Nullable TabSeparated field (`\N` for null; strings escaped). */
export function tsvNullable(v: string | number | null | undefined): string {
  if (v === null || v === undefined) return '\\N';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '\\N';
  return tsvString(v);
}

/** The `spans` columns a span row holds (row-binary.ts), in its order. */
export const SPAN_COLUMNS = [
  'date',
  'start_ns',
  'end_ns',
  'start_us',
  'end_us',
  'duration_ns',
  'trace_id',
  'span_id',
  'parent_span_id',
  'service',
  'session_id',
  'name',
  'kind',
  'status',
  ...HOT_ATTRIBUTES.map((h) => h.column),
  'hot_odd',
  'attr_keys',
  'attr_values',
  'res_keys',
  'res_values',
  'doc',
] as const;

/** The `logs` columns a log row holds (row-binary.ts), in its order. */
export const LOG_COLUMNS = ['date', 'time_ns', 'time_us', 'trace_id', 'span_id', 'severity', 'doc'] as const;
