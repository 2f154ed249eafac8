// Span and log records → ClickHouse RowBinary rows (the `spans` and `logs` columns, in their order),
// written straight from the decoded OTLP into one growing buffer: no text to escape, no number
// printed and parsed again. A row's bytes are kept apart (rowEnds), so a retried span's row can be
// left out of an INSERT without encoding again (clickhouse-shipper.ts).
import { HOT_ATTRIBUTES } from '../../query/fields.js';
import { sessionIdOf } from '../../trace-model/genai.js';
import type { AttributeValue, Attributes, LogRecord, SpanRecord } from '../../wire-types.js';
import { type HotValue, createDocWriter, hotValues, nsToUs } from '../sqlite/span-rows.js';

const TWO_32 = 2 ** 32;
const DAY_NS = 86_400_000_000_000;

/** Adds the partition days (YYYY-MM-DD) of RowBinary span rows: each opens with its `date` (days since the epoch). */
export function addRowDays(bytes: Buffer, rowEnds: number[], days: Set<string>): void {
  for (let i = 0; i < rowEnds.length; i++)
    days.add(new Date(bytes.readUInt16LE(i ? rowEnds[i - 1]! : 0) * 86_400_000).toISOString().slice(0, 10));
}

/** A growing byte buffer with RowBinary's encodings of the column types the tables use. */
export class RowBinaryWriter {
  buf = Buffer.allocUnsafe(1 << 16);
  end = 0;

  private room(n: number): void {
    if (this.buf.length - this.end >= n) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.end + n));
    this.buf.copy(bigger, 0, 0, this.end);
    this.buf = bigger;
  }

  u8(n: number): void {
    this.room(1);
    this.buf[this.end++] = n;
  }

  /** Date: days since the epoch. */
  date(ns: number): void {
    this.room(2);
    this.end = this.buf.writeUInt16LE(Math.max(0, Math.floor(ns / DAY_NS)), this.end);
  }

  /**
   * A UInt64 or Int64 from an integer-valued double (an epoch ns is one past 2^53: its exact decimal
   * is what the column holds, as the TabSeparated rows wrote it). Negative only for Int64 columns.
   */
  int64(n: number): void {
    this.room(8);
    const v = Number.isFinite(n) ? Math.trunc(n) : 0;
    if (v < 0) {
      this.end = this.buf.writeBigInt64LE(BigInt(v), this.end);
      return;
    }
    const hi = Math.floor(v / TWO_32);
    this.end = this.buf.writeUInt32LE(v - hi * TWO_32, this.end);
    this.end = this.buf.writeUInt32LE(hi, this.end);
  }

  i32(n: number): void {
    this.room(4);
    this.end = this.buf.writeInt32LE(n, this.end);
  }

  f64(n: number): void {
    this.room(8);
    this.end = this.buf.writeDoubleLE(n, this.end);
  }

  /** An unsigned LEB128 length. */
  private varint(n: number): void {
    this.room(5);
    while (n >= 0x80) {
      this.buf[this.end++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    this.buf[this.end++] = n;
  }

  /** A String: its UTF-8 length, then the bytes (written in place, the length fixed up after). */
  str(s: string): void {
    if (s.length < 128 / 3) {
      // At most 127 bytes: a one-byte length.
      this.room(1 + s.length * 3);
      const at = this.end++;
      const n = this.buf.write(s, this.end);
      this.buf[at] = n;
      this.end += n;
      return;
    }
    const n = Buffer.byteLength(s);
    this.varint(n);
    this.room(n);
    this.end += this.buf.write(s, this.end);
  }

  nullableStr(v: HotValue): void {
    if (typeof v !== 'string') return this.u8(1);
    this.u8(0);
    this.str(v);
  }

  nullableF64(v: HotValue): void {
    if (typeof v !== 'number' || !Number.isFinite(v)) return this.u8(1);
    this.u8(0);
    this.f64(v);
  }

  /** Array(String) of keys and Array(String) of the values' JSON text, for an attribute map. */
  keyValues(attrs: Attributes): void {
    const keys = Object.keys(attrs);
    this.varint(keys.length);
    for (const k of keys) this.str(k);
    this.varint(keys.length);
    for (const k of keys) this.str(valueJson(attrs[k]!));
  }

  /** The bytes written since `from`, copied out. */
  copy(from = 0): Buffer {
    return Buffer.from(this.buf.subarray(from, this.end));
  }
}

/** An attribute value as the text `attr_values` holds: its JSON (a number as JS prints it). */
function valueJson(v: AttributeValue): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return JSON.stringify(v) ?? 'null';
}

/** Rows of one table: their bytes, where each row ends, and (spans) each row's trace and span id. */
export interface EncodedRows {
  bytes: Buffer;
  rowEnds: number[];
  keys?: string[];
}

/** Spans → RowBinary rows of `spans` (SPAN_COLUMNS' order), one per span. */
export function createSpanRowEncoder(): (spans: readonly SpanRecord[]) => EncodedRows {
  const docJson = createDocWriter(true);
  const hot: HotValue[] = [];
  const w = new RowBinaryWriter();
  return (spans) => {
    w.end = 0;
    const rowEnds: number[] = [];
    const keys: string[] = [];
    for (const s of spans) {
      const stop = s.startTimeUnixNano + s.durationNano;
      const svc = s.resource.attributes['service.name'];
      const odd = hotValues(s.attributes, hot);
      w.date(s.startTimeUnixNano);
      w.int64(s.startTimeUnixNano);
      w.int64(stop);
      // µs exactly as the SQLite store computes them, so time filters, bins and @timestamp agree.
      w.int64(nsToUs(s.startTimeUnixNano));
      w.int64(nsToUs(stop));
      w.int64(s.durationNano);
      w.str(s.traceId);
      w.str(s.spanId);
      w.str(s.parentSpanId ?? '');
      w.str(typeof svc === 'string' ? svc : '');
      w.str(sessionIdOf(s.attributes, s.resource.attributes) ?? '');
      w.str(s.name);
      w.str(s.kind);
      w.str(s.status.code);
      for (let i = 0; i < HOT_ATTRIBUTES.length; i++) {
        if (HOT_ATTRIBUTES[i]!.kind === 'text') w.nullableStr(hot[i]!);
        else w.nullableF64(hot[i]!);
      }
      w.u8(odd ?? 0);
      w.keyValues(s.attributes);
      w.keyValues(s.resource.attributes);
      w.str(docJson(s));
      rowEnds.push(w.end);
      keys.push(`${s.traceId}/${s.spanId}`);
    }
    return { bytes: w.copy(), rowEnds, keys };
  };
}

/** Log records → RowBinary rows of `logs` (LOG_COLUMNS' order). */
export function createLogRowEncoder(): (logs: readonly LogRecord[]) => EncodedRows {
  const w = new RowBinaryWriter();
  return (logs) => {
    w.end = 0;
    const rowEnds: number[] = [];
    for (const l of logs) {
      const ns = l.timeUnixNano || l.observedTimeUnixNano;
      w.date(ns);
      w.int64(ns);
      w.int64(nsToUs(ns));
      w.str(l.traceId ?? '');
      w.str(l.spanId ?? '');
      w.i32(Math.trunc(l.severityNumber) || 0);
      w.str(JSON.stringify(l));
      rowEnds.push(w.end);
    }
    return { bytes: w.copy(), rowEnds };
  };
}
