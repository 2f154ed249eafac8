/**
 * OTLP `ExportTraceServiceRequest` protobuf encoder, written straight from `ReadableSpan`s into one
 * reused buffer. Its output is byte for byte that of `ProtobufTraceSerializer.serializeRequest` from
 * `@opentelemetry/otlp-transformer` 0.219 (same fields, same order, same grouping by resource and
 * then instrumentation scope, both by identity), at a fraction of its cost on the app's main thread:
 * one pass (upstream sizes everything first, then writes it); an attribute's lengths known before
 * its content (exact for ASCII strings, the usual case), so nothing is moved into place afterwards;
 * and attributes that repeat from span to span copied from a cache rather than encoded again.
 *
 * Field numbers are from opentelemetry/proto (trace/v1/trace.proto, common/v1/common.proto,
 * resource/v1/resource.proto); a tag byte is `field << 3 | wireType`.
 */
import type { Attributes, HrTime, Link, SpanContext, SpanStatus } from '@opentelemetry/api';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-base';

type Resource = ReadableSpan['resource'];
/** The scope as upstream reads it: `attributes` and `droppedAttributesCount` are not in the type yet. */
interface Scope {
  readonly name: string;
  readonly version?: string;
  readonly schemaUrl?: string;
  readonly attributes?: Attributes;
  readonly droppedAttributesCount?: number;
}

/** The buffer's first size; one grown past KEEP_SIZE by a big batch is dropped after it. */
const INITIAL_SIZE = 256 * 1024;
const KEEP_SIZE = 4 * 1024 * 1024;
/** Strings at least this long are written by Buffer#write, shorter ones by a loop. */
const NATIVE_WRITE_MIN = 16;

let buf = Buffer.alloc(0); // allocated by the first call
let pos = 0;

/**
 * Encodes `spans` as an OTLP `ExportTraceServiceRequest`. The result is a fresh copy: the transport
 * keeps it for retries while later batches reuse the encoder's buffer.
 */
export function serializeTraceRequest(spans: readonly ReadableSpan[]): Uint8Array {
  pos = 0;
  try {
    for (const [resource, scopes] of groupSpans(spans)) writeResourceSpans(resource, scopes);
    const out = Buffer.allocUnsafe(pos);
    buf.copy(out, 0, 0, pos);
    return out;
  } finally {
    if (buf.length > KEEP_SIZE) buf = Buffer.alloc(0);
  }
}

/** Spans by resource, then by scope (both by identity, in first-seen order, as upstream). */
function groupSpans(spans: readonly ReadableSpan[]): Map<Resource, Map<Scope, ReadableSpan[]>> {
  const resources = new Map<Resource, Map<Scope, ReadableSpan[]>>();
  let lastResource: Resource | undefined;
  let lastScope: Scope | undefined;
  let lastList: ReadableSpan[] = [];
  for (const span of spans) {
    const resource = span.resource;
    const scope = span.instrumentationScope;
    if (resource === lastResource && scope === lastScope) {
      lastList.push(span);
      continue;
    }
    let scopes = resources.get(resource);
    if (!scopes) resources.set(resource, (scopes = new Map()));
    let list = scopes.get(scope);
    if (!list) scopes.set(scope, (list = []));
    list.push(span);
    lastResource = resource;
    lastScope = scope;
    lastList = list;
  }
  return resources;
}

// ---- messages ------------------------------------------------------------------------------------

/** ExportTraceServiceRequest.resource_spans (1): resource (1), scope_spans (2), schema_url (3). */
function writeResourceSpans(resource: Resource, scopes: Map<Scope, ReadableSpan[]>): void {
  const start = beginMessage(0x0a, 3);
  // resource (1): attributes (1), dropped_attributes_count (2) always written as 0
  const resourceStart = beginMessage(0x0a, 2);
  const attributes = resource.attributes;
  if (attributes) writeAttributes(attributes, 0x0a);
  ensure(2);
  buf[pos++] = 0x10;
  buf[pos++] = 0;
  endLength(resourceStart, 2);
  for (const [scope, spans] of scopes) writeScopeSpans(scope, spans);
  if (resource.schemaUrl) {
    ensure(1);
    buf[pos++] = 0x1a;
    writeString(resource.schemaUrl);
  }
  endLength(start, 3);
}

/** ResourceSpans.scope_spans (2): scope (1), spans (2), schema_url (3). */
function writeScopeSpans(scope: Scope, spans: readonly ReadableSpan[]): void {
  const start = beginMessage(0x12, 3);
  // scope (1): name (1), version (2), attributes (3), dropped_attributes_count (4)
  const scopeStart = beginMessage(0x0a, 1);
  ensure(1);
  buf[pos++] = 0x0a;
  writeString(scope.name);
  if (scope.version) {
    ensure(1);
    buf[pos++] = 0x12;
    writeString(scope.version);
  }
  if (scope.attributes) writeAttributes(scope.attributes, 0x1a);
  if (scope.droppedAttributesCount) {
    writeVarintField(0x20, scope.droppedAttributesCount);
  }
  endLength(scopeStart, 1);
  for (let i = 0; i < spans.length; i++) writeSpan(spans[i]!);
  if (scope.schemaUrl) {
    ensure(1);
    buf[pos++] = 0x1a;
    writeString(scope.schemaUrl);
  }
  endLength(start, 3);
}

/** The W3C trace flags in the low byte, plus the OTLP HAS_IS_REMOTE (0x100) and IS_REMOTE (0x200) bits. */
function spanFlags(traceFlags: number, isRemote: boolean | undefined): number {
  return (traceFlags & 0xff) | 0x100 | (isRemote ? 0x200 : 0);
}

/**
 * ScopeSpans.spans (2): trace_id (1), span_id (2), trace_state (3), parent_span_id (4), name (5),
 * kind (6), start/end_time_unix_nano (7, 8), attributes (9), dropped_attributes_count (10), events
 * (11), dropped_events_count (12), links (13), dropped_links_count (14), status (15), flags (16).
 */
function writeSpan(span: ReadableSpan): void {
  const ctx = span.spanContext();
  const start = beginMessage(0x12, 2);
  writeSpanContext(ctx);
  const parent = span.parentSpanContext;
  const parentSpanId = parent?.spanId;
  if (parentSpanId) {
    ensure(2);
    buf[pos++] = 0x22;
    writeHexId(parentSpanId);
  }
  ensure(1);
  buf[pos++] = 0x2a;
  writeString(span.name);
  ensure(32);
  // SpanKind is offset by 1: the proto's 0 is UNSPECIFIED
  const kind = span.kind == null ? 0 : span.kind + 1;
  if (kind !== 0) {
    buf[pos++] = 0x30;
    writeVarint(kind);
  }
  buf[pos++] = 0x39;
  writeHrTime(span.startTime);
  buf[pos++] = 0x41;
  writeHrTime(span.endTime);
  if (span.attributes) writeAttributes(span.attributes, 0x4a);
  writeVarintField(0x50, span.droppedAttributesCount);
  const events = span.events;
  for (let i = 0; i < events.length; i++) writeEvent(events[i]!);
  writeVarintField(0x60, span.droppedEventsCount);
  const links = span.links;
  for (let i = 0; i < links.length; i++) writeLink(links[i]!);
  writeVarintField(0x70, span.droppedLinksCount);
  writeStatus(span.status);
  ensure(6);
  buf[pos++] = 0x85; // field 16, wire type 5: a two-byte tag
  buf[pos++] = 0x01;
  writeFixed32(spanFlags(ctx.traceFlags, parent?.isRemote));
  endLength(start, 2);
}

/** trace_id (1), span_id (2) and trace_state (3): the first fields of both Span and Span.Link. */
function writeSpanContext(context: SpanContext): void {
  ensure(1);
  buf[pos++] = 0x0a;
  writeHexId(context.traceId);
  ensure(1);
  buf[pos++] = 0x12;
  writeHexId(context.spanId);
  const traceState = context.traceState?.serialize();
  if (traceState) {
    ensure(1);
    buf[pos++] = 0x1a;
    writeString(traceState);
  }
}

/** Span.events (11): time_unix_nano (1), name (2), attributes (3), dropped_attributes_count (4). */
function writeEvent(event: TimedEvent): void {
  const reserve = event.attributes ? 2 : 1; // a message with attributes is likely past 127 bytes
  const start = beginMessage(0x5a, reserve);
  ensure(10);
  buf[pos++] = 0x09;
  writeHrTime(event.time);
  buf[pos++] = 0x12;
  writeString(event.name);
  if (event.attributes) writeAttributes(event.attributes, 0x1a);
  writeVarintField(0x20, event.droppedAttributesCount || 0);
  endLength(start, reserve);
}

/**
 * Span.links (13): trace_id (1), span_id (2), trace_state (3), attributes (4),
 * dropped_attributes_count (5), flags (6).
 */
function writeLink(link: Link): void {
  const context = link.context;
  const start = beginMessage(0x6a, 1);
  writeSpanContext(context);
  if (link.attributes) writeAttributes(link.attributes, 0x22);
  writeVarintField(0x28, link.droppedAttributesCount || 0);
  ensure(5);
  buf[pos++] = 0x35;
  writeFixed32(spanFlags(context.traceFlags, context.isRemote));
  endLength(start, 1);
}

/** Span.status (15): message (2), code (3). */
function writeStatus(status: SpanStatus): void {
  const start = beginMessage(0x7a, 1);
  if (status.message) {
    ensure(1);
    buf[pos++] = 0x12;
    writeString(status.message);
  }
  writeVarintField(0x18, status.code);
  endLength(start, 1);
}

// ---- attributes ----------------------------------------------------------------------------------

const hasOwn = Object.prototype.hasOwnProperty;

/** Each own enumerable property of `attributes` as a KeyValue, each after the tag byte `tag`. */
function writeAttributes(attributes: Attributes, tag: number): void {
  for (const key in attributes) {
    if (hasOwn.call(attributes, key)) writeKeyValue(tag, key, attributes[key]);
  }
}

/**
 * Encoded KeyValues by key, for the value each last had: most attributes of a service's spans repeat
 * (method, route, addresses, status code), and copying their bytes beats encoding them again. An
 * entry is replaced by a new value only while it earns its keep (`score` counts hits, and each
 * replacement costs one), so a key whose value changes every time (an id) is encoded as usual.
 */
interface CachedKeyValue {
  value: unknown;
  /** The KeyValue message, length-prefixed, without the tag (which depends on where it goes). */
  bytes: Uint8Array;
  score: number;
}
const keyValueCache = new Map<string, CachedKeyValue>();
const CACHE_MAX_KEYS = 1024;
const CACHE_MAX_BYTES = 256;
const CACHE_MAX_SCORE = 16;

/** One KeyValue (key (1), value (2)) after the tag byte `tag`: copied, fast-encoded, or encoded. */
function writeKeyValue(tag: number, key: string, value: unknown): void {
  const cached = keyValueCache.get(key);
  if (cached !== undefined && cached.value === value) {
    if (cached.score < CACHE_MAX_SCORE) cached.score++;
    const bytes = cached.bytes;
    ensure(bytes.length + 1);
    buf[pos++] = tag;
    buf.set(bytes, pos);
    pos += bytes.length;
    return;
  }
  const start = pos;
  if (writeKeyValueFast(tag, key, value)) {
    remember(cached, key, value, start + 1);
  } else {
    pos = start;
    writeKeyValueSlow(tag, key, value);
  }
}

/** Caches the KeyValue just written from `from` on, if it fits and its key's entry allows. */
function remember(cached: CachedKeyValue | undefined, key: string, value: unknown, from: number): void {
  const length = pos - from;
  if (length > CACHE_MAX_BYTES) return;
  if (cached === undefined) {
    if (keyValueCache.size < CACHE_MAX_KEYS)
      keyValueCache.set(key, { value, bytes: copyOut(from), score: 0 });
  } else if (cached.score > 0) {
    cached.score--;
    cached.value = value;
    cached.bytes = copyOut(from);
  }
}

/** A copy of the bytes written from `from` on. */
function copyOut(from: number): Uint8Array {
  const bytes = new Uint8Array(pos - from);
  buf.copy(bytes, 0, from, pos);
  return bytes;
}

/**
 * {@link writeKeyValue} for string, boolean and number values, whose AnyValue size is known from
 * the string lengths, so every length is written before its content. Returns false, with garbage
 * written, for any other value or a non-ASCII key or string (whose UTF-8 length differs).
 */
function writeKeyValueFast(tag: number, key: string, value: unknown): boolean {
  const keyLength = key.length;
  let valueSize: number; // the AnyValue's length
  let stringLength = 0;
  if (typeof value === 'string') {
    stringLength = value.length;
    valueSize = 1 + varintSize(stringLength) + stringLength;
  } else if (typeof value === 'boolean') {
    valueSize = 2;
  } else if (typeof value === 'number') {
    valueSize = isInt64(value) ? 1 + int64Size(value) : 9;
  } else {
    return false;
  }
  const size = 2 + varintSize(keyLength) + keyLength + varintSize(valueSize) + valueSize;
  ensure(size + 6 + 2 * (keyLength + stringLength));
  const b = buf;
  let p = pos;
  b[p++] = tag;
  p = putVarint32(b, p, size);
  b[p++] = 0x0a;
  p = putVarint32(b, p, keyLength);
  if (!putAscii(b, p, key)) return false;
  p += keyLength;
  b[p++] = 0x12;
  p = putVarint32(b, p, valueSize);
  if (typeof value === 'string') {
    b[p++] = 0x0a;
    p = putVarint32(b, p, stringLength);
    if (!putAscii(b, p, value)) return false;
    pos = p + stringLength;
  } else if (typeof value === 'boolean') {
    b[p++] = 0x10;
    b[p++] = value ? 1 : 0;
    pos = p;
  } else {
    pos = p;
    writeNumber(value as number);
  }
  return true;
}

/** {@link writeKeyValue} for any value, with lengths patched in after the content. */
function writeKeyValueSlow(tag: number, key: string, value: unknown): void {
  const start = beginMessage(tag, 1);
  ensure(1);
  buf[pos++] = 0x0a;
  writeString(key);
  const valueStart = beginMessage(0x12, 1);
  writeAnyValue(value);
  endLength(valueStart, 1);
  endLength(start, 1);
}

/**
 * AnyValue's content: string_value (1), bool_value (2), int_value (3), double_value (4), array_value
 * (5), kvlist_value (6), bytes_value (7); nothing for null, undefined and other types. The checks
 * run in upstream's order (a Uint8Array is bytes, any other typed array a kvlist of its indices).
 */
function writeAnyValue(value: unknown): void {
  if (typeof value === 'string') {
    ensure(1);
    buf[pos++] = 0x0a;
    writeString(value);
  } else if (typeof value === 'boolean') {
    ensure(2);
    buf[pos++] = 0x10;
    buf[pos++] = value ? 1 : 0;
  } else if (typeof value === 'number') {
    writeNumber(value);
  } else if (value instanceof Uint8Array) {
    ensure(11 + value.length);
    buf[pos++] = 0x3a;
    writeVarint(value.length);
    buf.set(value, pos);
    pos += value.length;
  } else if (Array.isArray(value)) {
    const start = beginMessage(0x2a, 1);
    // ArrayValue.values (1)
    for (const item of value as unknown[]) {
      const itemStart = beginMessage(0x0a, 1);
      writeAnyValue(item);
      endLength(itemStart, 1);
    }
    endLength(start, 1);
  } else if (typeof value === 'object' && value !== null) {
    const start = beginMessage(0x32, 1);
    // KeyValueList.values (1)
    const obj = value as Record<string, unknown>;
    for (const key in obj) {
      if (hasOwn.call(obj, key)) writeKeyValueSlow(0x0a, key, obj[key]);
    }
    endLength(start, 1);
  }
}

// int_value is used for integers in the int64 range (as upstream: not just safe integers)
const MIN_INT64 = -(2 ** 63);
const MAX_INT64 = 2 ** 63;

function isInt64(value: number): boolean {
  return Number.isInteger(value) && value >= MIN_INT64 && value < MAX_INT64;
}

/** AnyValue.int_value (3) or double_value (4), tag included. */
function writeNumber(value: number): void {
  ensure(11);
  if (isInt64(value)) {
    buf[pos++] = 0x18;
    writeVarint(value);
  } else {
    buf[pos++] = 0x21;
    buf.writeDoubleLE(value, pos);
    pos += 8;
  }
}

// ---- primitives ----------------------------------------------------------------------------------

/** Makes room for `n` more bytes at `pos`. */
function ensure(n: number): void {
  if (pos + n > buf.length) grow(pos + n);
}

function grow(needed: number): void {
  let size = Math.max(buf.length * 2, INITIAL_SIZE);
  while (size < needed) size *= 2;
  const next = Buffer.allocUnsafeSlow(size);
  buf.copy(next, 0, 0, pos);
  buf = next;
}

/**
 * Writes the tag byte of a length-delimited field and reserves `reserve` bytes for the length of the
 * message that follows; {@link endLength} writes it there, moving the message when its length takes
 * another number of bytes.
 */
function beginMessage(tag: number, reserve: number): number {
  ensure(1 + reserve);
  buf[pos++] = tag;
  const start = pos;
  pos += reserve;
  return start;
}

function endLength(start: number, reserve: number): void {
  const length = pos - start - reserve;
  const size = varintSize(length);
  if (size !== reserve) {
    ensure(size - reserve);
    buf.copy(buf, start + size, start + reserve, pos);
    pos += size - reserve;
  }
  putVarint32(buf, start, length);
}

/** The encoded size of a varint below 2^32. */
function varintSize(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5;
}

/** The encoded size of `value` (an integer in the int64 range) as {@link writeVarint} writes it. */
function int64Size(value: number): number {
  if (value >= 0 && value <= 0xffffffff) return varintSize(value);
  if (value < 0) return 10;
  let size = 5;
  for (let v = Math.floor(value / 2 ** 35); v > 0; v = Math.floor(v / 128)) size++;
  return size;
}

/** Writes `v` (an integer in [0, 2^32)) as a varint at `p`; returns the position after it. */
function putVarint32(b: Buffer, p: number, v: number): number {
  while (v > 0x7f) {
    b[p++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  b[p++] = v;
  return p;
}

/**
 * Writes `value` as a varint the way upstream's ProtobufWriter does: numbers in [0, 2^32) by their
 * integer part, others as 64-bit two's complement (so negatives take 10 bytes, and undefined or NaN
 * a single 0).
 */
function writeVarint(value: number): void {
  if (value >= 0 && value <= 0xffffffff) {
    pos = putVarint32(buf, pos, value >>> 0);
    return;
  }
  let low: number;
  let high: number;
  if (value >= 0) {
    low = value >>> 0;
    high = (value / 0x100000000) >>> 0;
  } else {
    const abs = Math.abs(value);
    low = ~(abs >>> 0) >>> 0;
    high = ~((abs / 0x100000000) >>> 0) >>> 0;
    low = (low + 1) >>> 0;
    if (low === 0) high = (high + 1) >>> 0;
  }
  const b = buf;
  while (high > 0 || low > 0x7f) {
    b[pos++] = (low & 0x7f) | 0x80;
    low = ((low >>> 7) | (high << 25)) >>> 0;
    high >>>= 7;
  }
  b[pos++] = low & 0x7f;
}

/** A varint field: its tag byte, then `value` as {@link writeVarint} writes it. */
function writeVarintField(tag: number, value: number): void {
  ensure(11);
  buf[pos++] = tag;
  writeVarint(value);
}

function writeFixed32(value: number): void {
  const b = buf;
  b[pos++] = value & 0xff;
  b[pos++] = (value >>> 8) & 0xff;
  b[pos++] = (value >>> 16) & 0xff;
  b[pos++] = (value >>> 24) & 0xff;
}

/**
 * An HrTime as fixed64 nanoseconds, computed as upstream does: seconds split at bit 16 so every
 * product stays below 2^53.
 */
function writeHrTime(time: HrTime): void {
  const seconds = time[0];
  const nanos = time[1];
  const fromLow = (seconds & 0xffff) * 1e9;
  const fromHigh = ((seconds / 0x10000) >>> 0) * 1e9;
  const low = (fromLow >>> 0) + (((fromHigh & 0xffff) * 0x10000) >>> 0) + nanos;
  const high =
    (Math.floor(fromLow / 0x100000000) + ((fromHigh / 0x10000) >>> 0) + Math.floor(low / 0x100000000)) >>> 0;
  writeFixed32(low >>> 0);
  writeFixed32(high);
}

/** A digit's value as upstream's hexToBinary reads it (anything that is not 0-9 or a-f as A-F). */
function hexValue(c: number): number {
  return c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c - 55;
}

/** {@link hexValue} of the chars below 256, looked up rather than branched on (digits come at random). */
const HEX_VALUES = Int32Array.from({ length: 256 }, (_, c) => hexValue(c));

/** A hex id as bytes, length-prefixed (an odd last digit is dropped, as upstream). */
function writeHexId(hex: string): void {
  const n = hex.length >>> 1;
  ensure(n + 6);
  const b = buf;
  const values = HEX_VALUES;
  let p = putVarint32(b, pos, n);
  for (let i = 0; i < 2 * n; i += 2) {
    const hi = hex.charCodeAt(i);
    const lo = hex.charCodeAt(i + 1);
    b[p++] = ((hi < 256 ? values[hi]! : hi - 55) << 4) | (lo < 256 ? values[lo]! : lo - 55);
  }
  pos = p;
}

/**
 * Copies `s` to `p` if it is all ASCII and returns whether it was; room for 3 bytes a char must be
 * there. On false, what was written is garbage for the caller to overwrite. A UTF-8 write takes as
 * many bytes as chars only for ASCII: any other char takes more bytes than UTF-16 units.
 */
function putAscii(b: Buffer, p: number, s: string): boolean {
  const n = s.length;
  if (n >= NATIVE_WRITE_MIN) return b.write(s, p) === n;
  let bits = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    bits |= c;
    b[p + i] = c;
  }
  return bits < 0x80;
}

/** A length-prefixed UTF-8 string (lone surrogates as U+FFFD, as TextEncoder writes them). */
function writeString(s: string): void {
  const n = s.length;
  ensure(3 * n + 5);
  const start = putVarint32(buf, pos, n);
  if (putAscii(buf, start, s)) {
    pos = start + n;
    return;
  }
  const length = Buffer.byteLength(s, 'utf8');
  const p = putVarint32(buf, pos, length);
  buf.write(s, p, 'utf8');
  pos = p + length;
}
