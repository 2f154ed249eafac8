// Span and log records → ClickHouse rows (TabSeparated lines), and the one quoting of values
// spliced into ClickHouse SQL (18.16 has no server-side query parameters: `{name:Type}` arrived in
// 19.x, so values are rendered as literals, here and nowhere else).
import { sessionIdOf } from '../../trace-model/genai.js';
import type { Attributes, LogRecord, SpanRecord } from '../../wire-types.js';
import { HOT_ATTRIBUTES } from '../schema.js';
import { type HotValue, hotValues, nsToUs } from '../span-rows.js';

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

/**
 * Attribute keys and values (values as JSON text) as two TabSeparated array fields. An array field
 * is read as a literal (`['a','b']`), whose quoted strings escape control characters, so the
 * field holds no raw tab or newline.
 */
function keyValues(attrs: Attributes): [string, string] {
  let keys = '';
  let values = '';
  for (const k in attrs) {
    keys += `${keys ? ',' : ''}${quoteString(k)}`;
    values += `${values ? ',' : ''}${quoteString(JSON.stringify(attrs[k]) ?? 'null')}`;
  }
  return [`[${keys}]`, `[${values}]`];
}

/**
 * An epoch-ns number as the exact decimal integer of its double (a JSON number this large is
 * rounded by ClickHouse's parser; SQLite's µs columns are floor(ns / 1000) of the same double).
 */
const int = (n: number): string => (Number.isFinite(n) ? BigInt(Math.trunc(n)).toString() : '0');

/** The last day computed: most records of a batch fall on the same UTC day. */
let lastDay = { n: NaN, text: '' };
/** Epoch ns → the partition's Date as text, cached per day. */
function dateOf(ns: number): string {
  const n = Math.floor(ns / 86_400_000_000_000);
  if (n !== lastDay.n) lastDay = { n, text: dayOf(ns) };
  return lastDay.text;
}

const hot: HotValue[] = [];

/** The `spans` columns spanLine writes, in its order. */
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

/**
 * One `spans` row as a TabSeparated line (SPAN_COLUMNS): built as one string, which costs the
 * collector about half of building an object per row for JSONEachRow, and ClickHouse less to
 * parse. Ids and names as stored in SQLite; absent strings are ''.
 */
export function spanLine(s: SpanRecord): string {
  const svc = s.resource.attributes['service.name'];
  const odd = hotValues(s.attributes, hot);
  const [attrKeys, attrValues] = keyValues(s.attributes);
  const [resKeys, resValues] = keyValues(s.resource.attributes);
  const end = s.startTimeUnixNano + s.durationNano;
  let line = `${dateOf(s.startTimeUnixNano)}\t${int(s.startTimeUnixNano)}\t${int(end)}\t${
    // µs exactly as the SQLite store computes them, so time filters, bins and @timestamp agree.
    nsToUs(s.startTimeUnixNano)
  }\t${nsToUs(end)}\t${int(s.durationNano)}\t${tsvString(s.traceId)}\t${tsvString(s.spanId)}\t${tsvString(
    s.parentSpanId ?? '',
  )}\t${tsvString(typeof svc === 'string' ? svc : '')}\t${tsvString(
    sessionIdOf(s.attributes, s.resource.attributes) ?? '',
  )}\t${tsvString(s.name)}\t${tsvString(s.kind)}\t${tsvString(s.status.code)}`;
  for (let i = 0; i < HOT_ATTRIBUTES.length; i++) line += `\t${tsvNullable(hot[i])}`;
  return `${line}\t${odd ?? 0}\t${attrKeys}\t${attrValues}\t${resKeys}\t${resValues}\t${tsvString(JSON.stringify(s))}\n`;
}

/** The `logs` columns logLine writes, in its order. */
export const LOG_COLUMNS = ['date', 'time_ns', 'time_us', 'trace_id', 'span_id', 'severity', 'doc'] as const;

/** One `logs` row as a TabSeparated line (LOG_COLUMNS). */
export function logLine(l: LogRecord): string {
  const ns = l.timeUnixNano || l.observedTimeUnixNano;
  return `${dateOf(ns)}\t${int(ns)}\t${nsToUs(ns)}\t${tsvString(l.traceId ?? '')}\t${tsvString(
    l.spanId ?? '',
  )}\t${Math.trunc(l.severityNumber) || 0}\t${tsvString(JSON.stringify(l))}\n`;
}
