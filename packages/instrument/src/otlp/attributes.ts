/**
 * Attributes as OTLP `KeyValue`s (opentelemetry/proto common/v1/common.proto: KeyValue key (1),
 * value (2); AnyValue below), byte for byte as `@opentelemetry/otlp-transformer` 0.219 writes them.
 * A string, boolean or number value has its lengths known before its content (exact for ASCII
 * strings, the usual case), so nothing is moved into place afterwards; and a KeyValue that repeats
 * from span to span is copied from a cache rather than encoded again.
 */
import type { Attributes } from '@opentelemetry/api';
import { int64Size, putAsciiField, putVarint32, varintSize, type ProtobufWriter } from './protobuf-writer.js';

const hasOwn = Object.prototype.hasOwnProperty;

/** Each own enumerable property of `attributes` as a KeyValue, each after the tag byte `tag`. */
export function writeAttributes(w: ProtobufWriter, attributes: Attributes, tag: number): void {
  for (const key in attributes) {
    if (hasOwn.call(attributes, key)) writeKeyValue(w, tag, key, attributes[key]);
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
function writeKeyValue(w: ProtobufWriter, tag: number, key: string, value: unknown): void {
  const cached = keyValueCache.get(key);
  if (cached !== undefined && cached.value === value) {
    if (cached.score < CACHE_MAX_SCORE) cached.score++;
    w.writeTagged(tag, cached.bytes);
    return;
  }
  const start = w.pos;
  if (writeKeyValueFast(w, tag, key, value)) {
    remember(w, cached, key, value, start + 1);
  } else {
    w.pos = start;
    writeKeyValueSlow(w, tag, key, value);
  }
}

/** Caches the KeyValue just written from `from` on, if it fits and its key's entry allows. */
function remember(
  w: ProtobufWriter,
  cached: CachedKeyValue | undefined,
  key: string,
  value: unknown,
  from: number,
): void {
  const length = w.pos - from;
  if (length > CACHE_MAX_BYTES) return;
  if (cached === undefined) {
    if (keyValueCache.size < CACHE_MAX_KEYS)
      keyValueCache.set(key, { value, bytes: w.copyOut(from), score: 0 });
  } else if (cached.score > 0) {
    cached.score--;
    cached.value = value;
    cached.bytes = w.copyOut(from);
  }
}

/**
 * {@link writeKeyValue} for string, boolean and number values, whose AnyValue size is known from
 * the string lengths, so every length is written before its content. Returns false, with garbage
 * written, for any other value or a non-ASCII key or string (whose UTF-8 length differs).
 */
function writeKeyValueFast(w: ProtobufWriter, tag: number, key: string, value: unknown): boolean {
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
  const b = w.reserve(size + 6 + 2 * (keyLength + stringLength));
  let p = w.pos;
  b[p++] = tag;
  p = putVarint32(b, p, size);
  p = putAsciiField(b, p, 0x0a, key);
  if (p < 0) return false;
  b[p++] = 0x12;
  p = putVarint32(b, p, valueSize);
  if (typeof value === 'string') {
    p = putAsciiField(b, p, 0x0a, value);
    if (p < 0) return false;
    w.pos = p;
  } else {
    w.pos = p;
    writeScalar(w, value);
  }
  return true;
}

/** {@link writeKeyValue} for any value, with lengths patched in after the content. */
function writeKeyValueSlow(w: ProtobufWriter, tag: number, key: string, value: unknown): void {
  const start = w.beginMessage(tag, 1);
  w.writeStringField(0x0a, key);
  const valueStart = w.beginMessage(0x12, 1);
  writeAnyValue(w, value);
  w.endMessage(valueStart, 1);
  w.endMessage(start, 1);
}

/** A boolean's or number's AnyValue content: bool_value (2), int_value (3) or double_value (4). */
function writeScalar(w: ProtobufWriter, value: unknown): void {
  if (typeof value === 'boolean') w.writeBoolField(0x10, value);
  else if (isInt64(value as number)) w.writeVarintField(0x18, value as number);
  else w.writeDoubleField(0x21, value as number);
}

/**
 * AnyValue's content: string_value (1), bool_value (2), int_value (3), double_value (4), array_value
 * (5), kvlist_value (6), bytes_value (7); nothing for null, undefined and other types. The checks
 * run in upstream's order (a Uint8Array is bytes, any other typed array a kvlist of its indices).
 */
function writeAnyValue(w: ProtobufWriter, value: unknown): void {
  if (typeof value === 'string') w.writeStringField(0x0a, value);
  else if (typeof value === 'boolean' || typeof value === 'number') writeScalar(w, value);
  else if (value instanceof Uint8Array) w.writeBytesField(0x3a, value);
  else if (Array.isArray(value)) writeArrayValue(w, value as unknown[]);
  else if (typeof value === 'object' && value !== null)
    writeKeyValueList(w, value as Record<string, unknown>);
}

/** AnyValue.array_value (5): ArrayValue.values (1), each an AnyValue. */
function writeArrayValue(w: ProtobufWriter, values: readonly unknown[]): void {
  const start = w.beginMessage(0x2a, 1);
  for (const item of values) {
    const itemStart = w.beginMessage(0x0a, 1);
    writeAnyValue(w, item);
    w.endMessage(itemStart, 1);
  }
  w.endMessage(start, 1);
}

/** AnyValue.kvlist_value (6): KeyValueList.values (1), each own enumerable property a KeyValue. */
function writeKeyValueList(w: ProtobufWriter, obj: Record<string, unknown>): void {
  const start = w.beginMessage(0x32, 1);
  for (const key in obj) {
    if (hasOwn.call(obj, key)) writeKeyValueSlow(w, 0x0a, key, obj[key]);
  }
  w.endMessage(start, 1);
}

// int_value is used for integers in the int64 range (as upstream: not just safe integers)
const MIN_INT64 = -(2 ** 63);
const MAX_INT64 = 2 ** 63;

function isInt64(value: number): boolean {
  return Number.isInteger(value) && value >= MIN_INT64 && value < MAX_INT64;
}
