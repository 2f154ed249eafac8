// Span and log records → the column values the store inserts. This runs on the thread that decoded
// the records (the main thread), and the batch crosses to the writer thread (span-writer.ts): the
// short values as a flat array (a cheap structured clone), the span documents — most of the bytes —
// as UTF-8 in one buffer that is transferred, not copied, and bound as they are (no string is
// rebuilt on the writer thread).
import type { SQLInputValue } from 'node:sqlite';
import { lookupKey } from '../../query/fields.js';
import { sessionIdOf } from '../../trace-model/genai.js';
import type { Attributes, LogRecord, SpanRecord } from '../../wire-types.js';
import { HOT_ATTRIBUTES } from '../../query/fields.js';

/** The spans columns a row fills in `EncodedBatch.spans`, in insert order; `doc` comes apart. */
export const SPAN_INSERT_COLUMNS = [
  'trace_id',
  'span_id',
  'parent_span_id',
  'start_us',
  'end_us',
  'duration_ns',
  'service',
  'session_id',
  'name',
  'status',
  'kind',
  ...HOT_ATTRIBUTES.map((h) => h.column),
  'hot_odd',
] as const;
export const SPAN_COLUMNS = SPAN_INSERT_COLUMNS.length;
/** Offsets of the columns the writer reads back for its bookkeeping. */
export const COL = { traceId: 0, endUs: 4, service: 6, session: 7 } as const;
/** The logs columns a row fills, in insert order. */
export const LOG_INSERT_COLUMNS = ['trace_id', 'span_id', 'time_us', 'severity', 'doc'] as const;
export const LOG_COLUMNS = LOG_INSERT_COLUMNS.length;

/** One batch as the writer takes it. */
export interface EncodedBatch {
  /** SPAN_COLUMNS values per span, in SPAN_INSERT_COLUMNS order. */
  spans: SQLInputValue[];
  /** The spans' JSON documents in UTF-8, back to back: span i's ends at `docEnds[i]`. */
  docs: Uint8Array<ArrayBuffer>;
  docEnds: Uint32Array<ArrayBuffer>;
  /** LOG_COLUMNS values per log record. */
  logs: SQLInputValue[];
  /** Attribute keys (`attributes.…`, `resource.attributes.…`) first seen in this batch. */
  keys: string[];
}

/** Epoch ns → µs, the unit of the time columns. */
export const nsToUs = (ns: number): number => Math.floor(ns / 1000);

/** A number as JSON.stringify writes it. */
const num = (n: number): string => (Number.isFinite(n) ? String(n) : 'null');

export type HotValue = string | number | null;

/** The dotted prefixes of each HOT_ATTRIBUTES key (`gen_ai.request`, `gen_ai`), where a kvlist may hold it. */
const HOT_PREFIXES = HOT_ATTRIBUTES.map(({ key }) =>
  [...key.matchAll(/\./g)].map((m) => key.slice(0, m.index)),
);

/**
 * Fills `out` with the HOT_ATTRIBUTES column values of a span (looked up exactly as the query
 * language does) and returns the `hot_odd` flag: 1 when a value has a type its column cannot hold.
 */
export function hotValues(attributes: Attributes, out: HotValue[]): 1 | null {
  let odd: 1 | null = null;
  for (let i = 0; i < HOT_ATTRIBUTES.length; i++) {
    const h = HOT_ATTRIBUTES[i]!;
    // Most spans have the key itself or nothing under it: lookupKey only when a prefix holds a value.
    const v = Object.hasOwn(attributes, h.key)
      ? attributes[h.key]
      : HOT_PREFIXES[i]!.some((p) => Object.hasOwn(attributes, p))
        ? lookupKey(attributes, h.key)
        : undefined;
    if (v === undefined || v === null) out[i] = null;
    else if (h.kind === 'text' ? typeof v === 'string' : typeof v === 'number' && Number.isFinite(v))
      out[i] = v as string | number;
    else {
      out[i] = null;
      odd = 1;
    }
  }
  return odd;
}

/**
 * A number as JSON writes it, except that an integer past 2^53 (an epoch-ns time) is written as the
 * exact decimal of its double: what BigInt writes, about 2.5× faster than the shortest form String()
 * looks for, and read back as the same double.
 */
const jsonNumber = (n: number): string =>
  Number.isInteger(n) && !Number.isSafeInteger(n) ? BigInt(n).toString() : num(n);

/**
 * Writes a span's stored JSON document, field by field: ids and enum names need no escaping,
 * numbers are finite, and the resource/scope JSON shared by a request's spans (the same objects) is
 * serialized once. The document parses to the same object as JSON.stringify(span). Both stores
 * keep this document; `exactTimes` writes its ns times with jsonNumber (the same values: ClickHouse's
 * documents, which are only ever parsed, whereas SQLite's SQL reads fields of the text).
 */
export function createDocWriter(exactTimes = false): (s: SpanRecord) => string {
  const time = exactTimes ? jsonNumber : num;
  let cachedResource: object | undefined;
  let cachedResourceJson = '';
  let cachedScope: object | undefined;
  let cachedScopeJson = '';
  return (s) => {
    if (s.resource !== cachedResource) {
      cachedResource = s.resource;
      cachedResourceJson = JSON.stringify(s.resource);
    }
    if (s.scope !== cachedScope) {
      cachedScope = s.scope;
      cachedScopeJson = JSON.stringify(s.scope);
    }
    let doc = `{"resource":${cachedResourceJson},"scope":${cachedScopeJson},"traceId":"${s.traceId}","spanId":"${s.spanId}"`;
    if (s.parentSpanId !== undefined) doc += `,"parentSpanId":"${s.parentSpanId}"`;
    if (s.traceState !== undefined) doc += `,"traceState":${JSON.stringify(s.traceState)}`;
    if (s.flags !== undefined) doc += `,"flags":${num(s.flags)}`;
    doc += `,"name":${JSON.stringify(s.name)},"kind":"${s.kind}","startTimeUnixNano":${time(s.startTimeUnixNano)},"endTimeUnixNano":${time(s.endTimeUnixNano)},"durationNano":${time(s.durationNano)},"attributes":${JSON.stringify(s.attributes)},"status":{"code":"${s.status.code}"`;
    if (s.status.message !== undefined) doc += `,"message":${JSON.stringify(s.status.message)}`;
    return `${doc}},"events":${s.events.length ? JSON.stringify(s.events) : '[]'},"links":${s.links.length ? JSON.stringify(s.links) : '[]'}}`;
  };
}

const RESOURCE_PREFIX = 'resource.attributes.';
const ATTRIBUTE_PREFIX = 'attributes.';

/**
 * Encodes records into column values, and tracks the attribute keys seen so far (autocompletion):
 * a key new to it goes into the batch once. `knownKeys` are the keys already stored; past
 * `maxKeys` no more are remembered (hostile senders).
 */
export function createRowEncoder(knownKeys: Iterable<string>, maxKeys: number) {
  const keys = new Set<string>(knownKeys);
  // Raw keys per prefix, so the hot path checks a Set without building strings.
  const seen = new Map<string, Set<string>>([
    [ATTRIBUTE_PREFIX, new Set()],
    [RESOURCE_PREFIX, new Set()],
  ]);
  for (const key of keys) {
    const prefix = key.startsWith(RESOURCE_PREFIX) ? RESOURCE_PREFIX : ATTRIBUTE_PREFIX;
    seen.get(prefix)!.add(key.slice(prefix.length));
  }

  function rememberKeys(prefix: string, attrs: object, out: string[]): void {
    const set = seen.get(prefix)!;
    for (const k in attrs) {
      if (set.has(k)) continue;
      if (keys.size >= maxKeys) return;
      set.add(k);
      keys.add(prefix + k);
      out.push(prefix + k);
    }
  }

  const docJson = createDocWriter();
  const hot: HotValue[] = [];
  const utf8 = new TextEncoder();

  function encode(spans: readonly SpanRecord[], logs: readonly LogRecord[] = []): EncodedBatch {
    // Filled in order from empty, so V8 keeps it a packed array: a holey one (new Array(n)) is
    // cloned to the writer thread element by element as a sparse object, several times slower.
    const out: SQLInputValue[] = [];
    const newKeys: string[] = [];
    let lastResource: object | undefined;
    let o = 0;
    // Sized for documents of ~1 KiB of ASCII; grown when they are bigger (or not ASCII).
    let docs = new Uint8Array(spans.length * 1536 + 4096);
    const docEnds = new Uint32Array(spans.length);
    let end = 0;
    for (let i = 0; i < spans.length; i++) {
      const s = spans[i]!;
      const svc = s.resource.attributes['service.name'];
      const odd = hotValues(s.attributes, hot);
      out[o] = s.traceId;
      out[o + 1] = s.spanId;
      out[o + 2] = s.parentSpanId ?? null;
      out[o + 3] = nsToUs(s.startTimeUnixNano);
      out[o + 4] = nsToUs(s.startTimeUnixNano + s.durationNano);
      out[o + 5] = s.durationNano;
      out[o + 6] = typeof svc === 'string' ? svc : null;
      out[o + 7] = sessionIdOf(s.attributes, s.resource.attributes) ?? null;
      out[o + 8] = s.name;
      out[o + 9] = s.status.code;
      out[o + 10] = s.kind;
      for (let k = 0; k < HOT_ATTRIBUTES.length; k++) out[o + 11 + k] = hot[k]!;
      out[o + 11 + HOT_ATTRIBUTES.length] = odd;
      o += SPAN_COLUMNS;
      const doc = docJson(s);
      let r = utf8.encodeInto(doc, docs.subarray(end));
      if (r.read < doc.length) {
        // Did not fit: at most 3 bytes per UTF-16 unit.
        const bigger = new Uint8Array(Math.max(docs.length * 2, end + doc.length * 3));
        bigger.set(docs.subarray(0, end));
        docs = bigger;
        r = utf8.encodeInto(doc, docs.subarray(end));
      }
      end += r.written;
      docEnds[i] = end;
      if (keys.size < maxKeys) {
        rememberKeys(ATTRIBUTE_PREFIX, s.attributes, newKeys);
        if (s.resource !== lastResource) {
          lastResource = s.resource;
          rememberKeys(RESOURCE_PREFIX, s.resource.attributes, newKeys);
        }
      }
    }
    const logRows: SQLInputValue[] = [];
    for (const l of logs) {
      logRows.push(
        l.traceId ?? null,
        l.spanId ?? null,
        nsToUs(l.timeUnixNano || l.observedTimeUnixNano),
        l.severityNumber,
        JSON.stringify(l),
      );
    }
    return { spans: out, docs, docEnds, logs: logRows, keys: newKeys };
  }

  return {
    encode,
    /** A batch that was not stored: its new keys count as unseen again. */
    forget(batch: EncodedBatch): void {
      for (const key of batch.keys) {
        keys.delete(key);
        const prefix = key.startsWith(RESOURCE_PREFIX) ? RESOURCE_PREFIX : ATTRIBUTE_PREFIX;
        seen.get(prefix)!.delete(key.slice(prefix.length));
      }
    },
    /** Every attribute key seen (stored or on its way), with its prefix. */
    keys: (): ReadonlySet<string> => keys,
  };
}
