// Span and log records → ClickHouse rows (JSONEachRow objects), and the one quoting of values
// spliced into ClickHouse SQL (18.16 has no server-side query parameters: `{name:Type}` arrived in
// 19.x, so values are rendered as literals, here and nowhere else).
import { sessionIdOf } from '../../trace-model/genai.js';
import type { Attributes, LogRecord, SpanRecord } from '../../wire-types.js';
import { HOT_ATTRIBUTES } from '../schema.js';
import { type HotValue, hotValues, nsToUs } from '../span-rows.js';

/** Epoch ns → the UTC day (YYYY-MM-DD) of the partition. */
export const dayOf = (ns: number): string => new Date(Math.floor(ns / 1e6)).toISOString().slice(0, 10);

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

function keyValues(attrs: Attributes): { keys: string[]; values: string[] } {
  const keys: string[] = [];
  const values: string[] = [];
  for (const k in attrs) {
    keys.push(k);
    values.push(JSON.stringify(attrs[k]));
  }
  return { keys, values };
}

/**
 * An epoch-ns number as the exact decimal integer of its double (a JSON number this large is
 * rounded by ClickHouse's parser; SQLite's µs columns are floor(ns / 1000) of the same double).
 */
const int = (n: number): string => (Number.isFinite(n) ? BigInt(Math.trunc(n)).toString() : '0');

const hot: HotValue[] = [];

/** One `spans` row. Ids and names as stored in SQLite; absent strings are ''. */
export function spanRow(s: SpanRecord): Record<string, unknown> {
  const svc = s.resource.attributes['service.name'];
  const odd = hotValues(s.attributes, hot);
  const attrs = keyValues(s.attributes);
  const res = keyValues(s.resource.attributes);
  const row: Record<string, unknown> = {
    date: dayOf(s.startTimeUnixNano),
    start_ns: int(s.startTimeUnixNano),
    end_ns: int(s.startTimeUnixNano + s.durationNano),
    // µs exactly as the SQLite store computes them, so time filters, bins and @timestamp agree.
    start_us: nsToUs(s.startTimeUnixNano),
    end_us: nsToUs(s.startTimeUnixNano + s.durationNano),
    duration_ns: int(s.durationNano),
    trace_id: s.traceId,
    span_id: s.spanId,
    parent_span_id: s.parentSpanId ?? '',
    service: typeof svc === 'string' ? svc : '',
    session_id: sessionIdOf(s.attributes, s.resource.attributes) ?? '',
    name: s.name,
    kind: s.kind,
    status: s.status.code,
    hot_odd: odd ?? 0,
    attr_keys: attrs.keys,
    attr_values: attrs.values,
    res_keys: res.keys,
    res_values: res.values,
    doc: JSON.stringify(s),
  };
  HOT_ATTRIBUTES.forEach((h, i) => (row[h.column] = hot[i] ?? null));
  return row;
}

/** One `logs` row. */
export function logRow(l: LogRecord): Record<string, unknown> {
  const ns = l.timeUnixNano || l.observedTimeUnixNano;
  return {
    date: dayOf(ns),
    time_ns: int(ns),
    time_us: nsToUs(ns),
    trace_id: l.traceId ?? '',
    span_id: l.spanId ?? '',
    severity: l.severityNumber,
    doc: JSON.stringify(l),
  };
}
