// Span and log records → ClickHouse rows (TabSeparated lines), and the one quoting of values
// spliced into ClickHouse SQL (18.16 has no server-side query parameters: `{name:Type}` arrived in
// 19.x, so values are rendered as literals, here and nowhere else).
import { sessionIdOf } from '../../trace-model/genai.js';
import type { AttributeValue, Attributes, LogRecord, SpanRecord } from '../../wire-types.js';
import { HOT_ATTRIBUTES } from '../../query/fields.js';
import { type HotValue, createDocWriter, hotValues, nsToUs } from '../sqlite/span-rows.js';

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
 * An epoch-ns number as the exact decimal integer of its double (a JSON number this large is
 * rounded by ClickHouse's parser; SQLite's µs columns are floor(ns / 1000) of the same double).
 */
const int = (n: number): string =>
  Number.isSafeInteger(n) ? String(n) : Number.isFinite(n) ? BigInt(Math.trunc(n)).toString() : '0';

/** The last day computed: most records of a batch fall on the same UTC day. */
let lastDay = { n: NaN, text: '' };
/** Epoch ns → the partition's Date as text, cached per day. */
function dateOf(ns: number): string {
  const n = Math.floor(ns / 86_400_000_000_000);
  if (n !== lastDay.n) lastDay = { n, text: dayOf(ns) };
  return lastDay.text;
}

/** The `spans` columns a span line holds, in its order. */
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

/** A string JSON.stringify writes as `"…"` unescaped, and quoteString then leaves alone. */
// eslint-disable-next-line no-control-regex
const NEEDS_ESCAPING = /["\\'\u0000-\u001f\ud800-\udfff]/;

/** An attribute value as a quoted array element: its JSON text (quoteString of JSON.stringify). */
function quotedValue(v: AttributeValue): string {
  if (typeof v === 'string') return NEEDS_ESCAPING.test(v) ? quoteString(JSON.stringify(v)) : `'"${v}"'`;
  if (typeof v === 'number') return Number.isFinite(v) ? `'${v}'` : "'null'";
  if (typeof v === 'boolean') return v ? "'true'" : "'false'";
  return quoteString(JSON.stringify(v) ?? 'null');
}

/** Keys quoted so far (a collector sees few distinct keys; past the bound they are quoted anew). */
const quotedKeys = new Map<string, string>();
const MAX_QUOTED_KEYS = 10_000;

function quotedKey(k: string): string {
  let q = quotedKeys.get(k);
  if (q === undefined) {
    q = quoteString(k);
    if (quotedKeys.size < MAX_QUOTED_KEYS) quotedKeys.set(k, q);
  }
  return q;
}

/**
 * Attribute keys and values (values as JSON text) as two TabSeparated array fields, tab-joined. An
 * array field is read as a literal (`['a','b']`), whose quoted strings escape control characters,
 * so the field holds no raw tab or newline.
 */
function keyValues(attrs: Attributes): string {
  let keys = '';
  let values = '';
  for (const k in attrs) {
    keys += `${keys ? ',' : ''}${quotedKey(k)}`;
    values += `${values ? ',' : ''}${quotedValue(attrs[k]!)}`;
  }
  return `[${keys}]\t[${values}]`;
}

/**
 * Spans → the bodies of TabSeparated INSERTs into `spans` (SPAN_COLUMNS), one per `maxRows` spans,
 * written as UTF-8 straight into one buffer each. A line goes in as its parts (short columns,
 * attribute arrays, resource arrays, document) with the tabs between them as bytes: no line string
 * is built only to be copied again. A request's spans share their resource object: its columns
 * (service, key/value arrays) are made once per resource, and so is the document's resource JSON
 * (createDocWriter). Ids and names as stored in SQLite; absent strings are ''.
 */
export function createSpanEncoder(): (spans: readonly SpanRecord[], maxRows: number) => Buffer[] {
  const docJson = createDocWriter(true);
  const hot: HotValue[] = [];
  let resource: SpanRecord['resource'] | undefined;
  let service = '';
  let resourceArrays = '';
  let buf = Buffer.alloc(0);
  let end = 0;

  /** Writes `text` at the end, growing the buffer when it might not fit (3 bytes per UTF-16 unit at most). */
  function put(text: string): void {
    if (buf.length - end < text.length * 3 + 1) {
      const bigger = Buffer.allocUnsafe(Math.max(buf.length * 2, end + text.length * 3 + 1));
      buf.copy(bigger, 0, 0, end);
      buf = bigger;
    }
    end += buf.write(text, end);
  }

  function writeLine(s: SpanRecord): void {
    if (s.resource !== resource) {
      resource = s.resource;
      const svc = s.resource.attributes['service.name'];
      service = tsvString(typeof svc === 'string' ? svc : '');
      resourceArrays = keyValues(s.resource.attributes);
    }
    const odd = hotValues(s.attributes, hot);
    const stop = s.startTimeUnixNano + s.durationNano;
    let head = `${dateOf(s.startTimeUnixNano)}\t${int(s.startTimeUnixNano)}\t${int(stop)}\t${
      // µs exactly as the SQLite store computes them, so time filters, bins and @timestamp agree.
      nsToUs(s.startTimeUnixNano)
      // Ids (hex, checked by the decoders) and enum names need no escaping, as in the document.
    }\t${nsToUs(stop)}\t${int(s.durationNano)}\t${s.traceId}\t${s.spanId}\t${s.parentSpanId ?? ''}\t${service}\t${tsvString(
      sessionIdOf(s.attributes, s.resource.attributes) ?? '',
    )}\t${tsvString(s.name)}\t${s.kind}\t${s.status.code}`;
    for (let i = 0; i < HOT_ATTRIBUTES.length; i++) head += `\t${tsvNullable(hot[i])}`;
    put(`${head}\t${odd ?? 0}\t`);
    put(keyValues(s.attributes));
    buf[end++] = TAB;
    put(resourceArrays);
    buf[end++] = TAB;
    put(tsvString(docJson(s)));
    buf[end++] = NEWLINE;
  }

  return (spans, maxRows) => {
    const bodies: Buffer[] = [];
    for (let from = 0; from < spans.length; from += maxRows) {
      const to = Math.min(spans.length, from + maxRows);
      // Sized for lines of ~1 KiB of ASCII, grown by put() when they are bigger (or not ASCII).
      buf = Buffer.allocUnsafe((to - from) * 1280 + 4096);
      end = 0;
      for (let i = from; i < to; i++) writeLine(spans[i]!);
      bodies.push(buf.subarray(0, end));
    }
    // The last body is the caller's now.
    buf = Buffer.alloc(0);
    return bodies;
  };
}

const TAB = 9;
const NEWLINE = 10;

/** The `logs` columns logLine writes, in its order. */
export const LOG_COLUMNS = ['date', 'time_ns', 'time_us', 'trace_id', 'span_id', 'severity', 'doc'] as const;

/** One `logs` row as a TabSeparated line (LOG_COLUMNS). */
export function logLine(l: LogRecord): string {
  const ns = l.timeUnixNano || l.observedTimeUnixNano;
  return `${dateOf(ns)}\t${int(ns)}\t${nsToUs(ns)}\t${tsvString(l.traceId ?? '')}\t${tsvString(
    l.spanId ?? '',
  )}\t${Math.trunc(l.severityNumber) || 0}\t${tsvString(JSON.stringify(l))}\n`;
}
