// Request bodies in `application/vnd.kubernetes.protobuf`, as kubectl sends built-in kinds (and
// does not fall back to JSON after a 415): the magic `k8s\0`, then a runtime.Unknown whose
// typeMeta names the kind and whose raw bytes are the object's message. The object is decoded
// into the JSON form the API takes (protobuf-schema.ts has the messages). A field this decoder does
// not know is refused with 415 naming it unless it holds its zero value (Go's protobuf marshalling
// writes every non-pointer field, set or not). Answers stay JSON: kubectl also accepts it.
import { KubeError } from './objects.js';
import { type Field, type FieldType, KINDS, MESSAGES } from './protobuf-schema.js';

export const PROTOBUF = 'application/vnd.kubernetes.protobuf';
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

interface WireField {
  number: number;
  wire: number;
  /** Varint fields. */
  int?: bigint;
  /** Length-delimited fields. */
  bytes?: Buffer;
}

function unsupported(message: string): KubeError {
  return new KubeError('UnsupportedMediaType', `${PROTOBUF} body: ${message}; send application/json`);
}

function varint(buf: Buffer, at: number): [bigint, number] {
  let value = 0n;
  for (let shift = 0n, i = at; i < buf.length && shift < 70n; i++, shift += 7n) {
    const byte = buf[i] as number;
    value |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [value, i + 1];
  }
  throw unsupported('a varint runs past the end of its message');
}

/** The message's fields in wire order. */
function wireFields(buf: Buffer): WireField[] {
  const out: WireField[] = [];
  for (let at = 0; at < buf.length;) {
    const [key, next] = varint(buf, at);
    const number = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      const [int, after] = varint(buf, next);
      out.push({ number, wire, int });
      at = after;
    } else if (wire === 2) {
      const [length, start] = varint(buf, next);
      const end = start + Number(length);
      if (end > buf.length) throw unsupported(`field ${number} runs past the end of its message`);
      out.push({ number, wire, bytes: buf.subarray(start, end) });
      at = end;
    } else if (wire === 1 || wire === 5) {
      out.push({ number, wire });
      at = next + (wire === 1 ? 8 : 4);
    } else throw unsupported(`field ${number} has wire type ${wire}, which no Kubernetes message uses`);
  }
  return out;
}

/** A field decodes to its zero value: Go writes those for every non-pointer field it has. */
function isZero(field: WireField): boolean {
  if (field.wire === 0) return field.int === 0n;
  if (field.wire !== 2 || !field.bytes) return false;
  if (field.bytes.length === 0) return true;
  try {
    return wireFields(field.bytes).every(isZero);
  } catch {
    return false;
  }
}

/** int32/int64 as Go writes them: two's complement in 64 bits. */
function toNumber(int: bigint): number {
  return Number(BigInt.asIntN(64, int));
}

function timeOf(bytes: Buffer): string | null {
  const parts = decodeMessage('Time', bytes, 'Time');
  const seconds = (parts.seconds as number | undefined) ?? 0;
  if (seconds === 0 && !parts.nanos) return null;
  return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function intOrString(bytes: Buffer): number | string {
  const fields = wireFields(bytes);
  const type = toNumber(fields.find((f) => f.number === 1)?.int ?? 0n);
  if (type === 1) return fields.find((f) => f.number === 3)?.bytes?.toString('utf8') ?? '';
  return toNumber(fields.find((f) => f.number === 2)?.int ?? 0n);
}

function scalar(type: FieldType, field: WireField, path: string): unknown {
  if (typeof type === 'object') return decodeMessage(type.message, field.bytes ?? Buffer.alloc(0), path);
  if (type === 'int' || type === 'bool') {
    if (field.int === undefined) throw unsupported(`${path} is not a varint`);
    return type === 'bool' ? field.int !== 0n : toNumber(field.int);
  }
  const bytes = field.bytes;
  if (!bytes) throw unsupported(`${path} is not length-delimited`);
  if (type === 'string') return bytes.toString('utf8');
  if (type === 'bytes') return bytes.toString('base64');
  if (type === 'time') return timeOf(bytes);
  if (type === 'intstr') return intOrString(bytes);
  return (
    wireFields(bytes)
      .find((f) => f.number === 1)
      ?.bytes?.toString('utf8') ?? ''
  ); // quantity
}

function mapEntry(field: Field, wire: WireField, path: string): [string, unknown] {
  const parts = wireFields(wire.bytes ?? Buffer.alloc(0));
  const key = parts.find((p) => p.number === 1)?.bytes?.toString('utf8') ?? '';
  const value = parts.find((p) => p.number === 2) ?? { number: 2, wire: 2, bytes: Buffer.alloc(0) };
  return [key, scalar(field.map as FieldType, value, `${path}[${key}]`)];
}

const zeroScalar = (value: unknown) => value === '' || value === 0 || value === false;

/** Decodes message `name` from `bytes` into its JSON object. */
function decodeMessage(name: string, bytes: Buffer, path: string): Record<string, unknown> {
  const known = MESSAGES[name];
  if (!known) throw unsupported(`message ${name} (at ${path}) is not decoded by the test API server`);
  const out: Record<string, unknown> = {};
  for (const wire of wireFields(bytes)) {
    const field = known.get(wire.number);
    if (!field) {
      if (isZero(wire)) continue;
      throw unsupported(`field ${wire.number} of ${name} (at ${path}) is not decoded by the test API server`);
    }
    const at = `${path}.${field.json}`;
    if (field.map) {
      const map = (out[field.json] ??= {}) as Record<string, unknown>;
      const [key, value] = mapEntry(field, wire, at);
      map[key] = value;
    } else if (field.repeated) ((out[field.json] ??= []) as unknown[]).push(scalar(field.type, wire, at));
    else out[field.json] = scalar(field.type, wire, at);
  }
  for (const [, field] of known)
    if (!field.keepZero && !field.repeated && zeroScalar(out[field.json])) delete out[field.json];
  return out;
}

/**
 * The object a protobuf request body holds, as JSON (apiVersion and kind from its envelope). A
 * body without the magic, a kind not decoded here, or a malformed message: 415 saying which.
 */
export function decodeProtobuf(body: Buffer): Record<string, unknown> {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC))
    throw unsupported('it does not start with the k8s\\0 magic');
  const unknown = wireFields(body.subarray(MAGIC.length));
  const typeMeta = decodeMessage(
    'TypeMeta',
    unknown.find((f) => f.number === 1)?.bytes ?? Buffer.alloc(0),
    '',
  );
  const raw = unknown.find((f) => f.number === 2)?.bytes ?? Buffer.alloc(0);
  const encoding = unknown.find((f) => f.number === 3)?.bytes?.toString('utf8');
  if (encoding) throw unsupported(`contentEncoding ${encoding} is not supported`);
  const apiVersion = String(typeMeta.apiVersion ?? '');
  const kind = String(typeMeta.kind ?? '');
  const message = KINDS[`${apiVersion}/${kind}`];
  if (!message) throw unsupported(`kind ${apiVersion}/${kind} is not decoded by the test API server`);
  return { kind, apiVersion, ...decodeMessage(message, raw, kind) };
}
