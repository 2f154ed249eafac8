import type {
  AttributeValue,
  Attributes,
  LogRecord,
  SpanEventRecord,
  SpanLinkRecord,
  SpanRecord,
} from '../wire-types.js';
import { OtlpDecodeError, rethrowAt } from './otlp-decode-error.js';
import { bytesToHex } from './protobuf-reader.js';
import {
  type DecodedLogs,
  type DecodedMetrics,
  type DecodedTraces,
  KIND_NAMES,
  STATUS_NAMES,
  checkDepth,
  setKey,
  validId,
} from './records.js';

// OTLP/JSON, with the quirks seen in the wild: ids in hex (spec) or base64 (proto3 default), int64
// as strings or numbers, enums as numbers or names (`SPAN_KIND_SERVER`, `STATUS_CODE_ERROR`).
// Field paths for error messages are added on the way out (rethrowAt), never built on success.

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const EMPTY: unknown[] = [];

export function list(v: unknown, field: string): unknown[] {
  if (v === undefined || v === null) return EMPTY;
  if (!Array.isArray(v)) throw new OtlpDecodeError('must be an array', field);
  return v;
}

export function obj(v: unknown, field: string): Obj {
  if (v === undefined || v === null) return {};
  if (!isObj(v)) throw new OtlpDecodeError('must be an object', field);
  return v;
}

export function str(v: unknown, field: string): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  throw new OtlpDecodeError('must be a string', field);
}

const INT_RE = /^-?\d+$/;

/** int64/uint64/fixed64: a decimal string or a number. */
export function int64(v: unknown, field: string): number {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && INT_RE.test(v)) return Number(v);
  if (v === undefined || v === null) return 0;
  throw new OtlpDecodeError('must be an integer (number or decimal string)', field);
}

/** Exact end − start for nanosecond timestamps given as strings (numbers past 2^53 are rounded). */
function nanoDiff(endV: unknown, startV: unknown, end: number, start: number): number {
  if (typeof endV === 'string' && typeof startV === 'string' && end - start < 2 ** 53) {
    // Same-length decimal strings differ only in their tail: subtract the tails exactly.
    if (endV.length === startV.length && endV.length > 15) {
      const cut = endV.length - 15;
      if (endV.slice(0, cut) === startV.slice(0, cut)) {
        const d = Number(endV.slice(cut)) - Number(startV.slice(cut));
        return d > 0 ? d : 0;
      }
    }
    const d = Number(BigInt(endV) - BigInt(startV));
    return d > 0 ? d : 0;
  }
  return end > start ? end - start : 0;
}

function enumValue<T extends string>(v: unknown, names: readonly T[], prefix: string, field: string): T {
  if (v === undefined || v === null) return names[0]!;
  if (typeof v === 'number' && Number.isInteger(v)) return names[v] ?? names[0]!;
  if (typeof v === 'string') {
    const bare = v.startsWith(prefix) ? v.slice(prefix.length) : v;
    if ((names as readonly string[]).includes(bare)) return bare as T;
    if (INT_RE.test(v)) return names[Number(v)] ?? names[0]!;
  }
  throw new OtlpDecodeError(`must be one of ${names.map((n) => prefix + n).join(', ')} or its number`, field);
}

const HEX_RE = /^[0-9a-fA-F]*$/;
const LOWER_HEX_RE = /^[0-9a-f]*$/;
const B64_RE = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Hex (any case) or base64 id → lowercase hex; '' when absent. */
function id(v: unknown, bytes: number, field: string): string {
  const s = str(v, field);
  if (!s) return '';
  if (s.length === bytes * 2) {
    if (LOWER_HEX_RE.test(s)) return s;
    if (HEX_RE.test(s)) return s.toLowerCase();
  }
  if (B64_RE.test(s)) {
    const raw = Buffer.from(s, 'base64');
    if (raw.length === bytes) return bytesToHex(raw);
  }
  throw new OtlpDecodeError(`must be ${bytes} bytes as hex or base64`, field);
}

function optionalId(v: unknown, bytes: number, field: string): string | undefined {
  const s = id(v, bytes, field);
  return s && !/^0+$/.test(s) ? s : undefined;
}

function anyValue(v: unknown, depth: number): AttributeValue {
  if (v === undefined || v === null) return null;
  if (!isObj(v)) throw new OtlpDecodeError('must be an AnyValue object');
  if (typeof v.stringValue === 'string') return v.stringValue;
  if ('stringValue' in v) return str(v.stringValue, 'stringValue');
  if ('boolValue' in v) {
    if (typeof v.boolValue !== 'boolean') throw new OtlpDecodeError('must be a boolean', 'boolValue');
    return v.boolValue;
  }
  if ('intValue' in v) return int64(v.intValue, 'intValue');
  if ('doubleValue' in v) {
    const d = v.doubleValue;
    if (typeof d === 'number') return d;
    // proto3 JSON spells non-finite doubles as strings.
    if (d === 'NaN' || d === 'Infinity' || d === '-Infinity') return d;
    if (typeof d === 'string' && d.trim() !== '' && !Number.isNaN(Number(d))) return Number(d);
    throw new OtlpDecodeError('must be a number', 'doubleValue');
  }
  if ('arrayValue' in v) {
    checkDepth(depth + 1);
    const values = list(obj(v.arrayValue, 'arrayValue').values, 'arrayValue.values');
    const out: AttributeValue[] = new Array<AttributeValue>(values.length);
    for (let i = 0; i < values.length; i++) {
      try {
        out[i] = anyValue(values[i], depth + 1);
      } catch (error) {
        rethrowAt(rethrowAtSafe(error, i, 'values'), 'arrayValue');
      }
    }
    return out;
  }
  if ('kvlistValue' in v) {
    checkDepth(depth + 1);
    const values = list(obj(v.kvlistValue, 'kvlistValue').values, 'kvlistValue.values');
    try {
      return keyValues(values, depth + 1);
    } catch (error) {
      return rethrowAt(rethrowAtSafe(error, 'values'), 'kvlistValue');
    }
  }
  if ('bytesValue' in v) return str(v.bytesValue, 'bytesValue');
  return null;
}

/** Adds segments (innermost last) to an OtlpDecodeError and returns it for the next rethrow. */
function rethrowAtSafe(error: unknown, ...segments: (string | number)[]): unknown {
  if (error instanceof OtlpDecodeError) for (let i = segments.length - 1; i >= 0; i--) error.at(segments[i]!);
  return error;
}

function keyValues(arr: unknown[], depth = 0): Attributes {
  const out: Attributes = {};
  for (let i = 0; i < arr.length; i++) {
    const kv = arr[i];
    try {
      if (!isObj(kv)) throw new OtlpDecodeError('must be a KeyValue object');
      const key = typeof kv.key === 'string' ? kv.key : str(kv.key, 'key');
      let value: AttributeValue;
      try {
        value = anyValue(kv.value, depth);
      } catch (error) {
        rethrowAt(error, 'value');
      }
      setKey(out, key, value);
    } catch (error) {
      rethrowAt(error, i);
    }
  }
  return out;
}

export function attributesOf(o: Obj): Attributes {
  const a = o.attributes;
  if (a === undefined || a === null) return {};
  try {
    return keyValues(list(a, 'attributes'));
  } catch (error) {
    return rethrowAt(error, 'attributes');
  }
}

function scopeOf(v: unknown): { name: string; version?: string } {
  try {
    const o = obj(v, 'scope');
    const s: { name: string; version?: string } = { name: str(o.name, 'name') };
    const version = str(o.version, 'version');
    if (version) s.version = version;
    return s;
  } catch (error) {
    return rethrowAt(error, 'scope');
  }
}

export function parse(body: string | Uint8Array): Obj {
  let root: unknown;
  try {
    // A view of the bytes, not Buffer.from(body): that copies them first.
    const text =
      typeof body === 'string'
        ? body
        : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
    root = JSON.parse(text);
  } catch (error) {
    throw new OtlpDecodeError(`body is not valid JSON: ${(error as Error).message}`);
  }
  if (!isObj(root)) throw new OtlpDecodeError('body must be a JSON object');
  return root;
}

/** Walks resource → scope → items for traces, logs and metrics. */
export function eachScoped(
  root: Obj,
  resourceKey: string,
  scopeKey: string,
  itemKey: string,
  onItem: (item: Obj, env: Pick<SpanRecord, 'resource' | 'scope'>) => void,
): void {
  const resources = list(root[resourceKey], resourceKey);
  for (let i = 0; i < resources.length; i++) {
    try {
      const r = obj(resources[i], '');
      const res = obj(r.resource, 'resource');
      let resource: { attributes: Attributes };
      try {
        resource = { attributes: attributesOf(res) };
      } catch (error) {
        rethrowAt(error, 'resource');
      }
      const scopes = list(r[scopeKey], scopeKey);
      for (let j = 0; j < scopes.length; j++) {
        try {
          const s = obj(scopes[j], '');
          const env = { resource, scope: scopeOf(s.scope) };
          const items = list(s[itemKey], itemKey);
          for (let k = 0; k < items.length; k++) {
            const item = items[k];
            try {
              if (!isObj(item)) throw new OtlpDecodeError('must be an object');
              onItem(item, env);
            } catch (error) {
              rethrowAt(rethrowAtSafe(error, k), itemKey);
            }
          }
        } catch (error) {
          rethrowAt(rethrowAtSafe(error, j), scopeKey);
        }
      }
    } catch (error) {
      rethrowAt(rethrowAtSafe(error, i), resourceKey);
    }
  }
}

/** Decodes an OTLP/JSON ExportTraceServiceRequest (text or bytes). Throws OtlpDecodeError. */
export function decodeTraceRequestJson(body: string | Uint8Array): DecodedTraces {
  const spans: SpanRecord[] = [];
  let rejected = 0;
  eachScoped(parse(body), 'resourceSpans', 'scopeSpans', 'spans', (o, env) => {
    const startV = o.startTimeUnixNano;
    const endV = o.endTimeUnixNano;
    const start = int64(startV, 'startTimeUnixNano');
    const end = int64(endV, 'endTimeUnixNano');
    const status = obj(o.status, 'status');
    let statusCode: SpanRecord['status']['code'];
    let message: string;
    try {
      statusCode = enumValue(status.code, STATUS_NAMES, 'STATUS_CODE_', 'code');
      message = str(status.message, 'message');
    } catch (error) {
      rethrowAt(error, 'status');
    }
    const s: SpanRecord = {
      resource: env.resource,
      scope: env.scope,
      traceId: id(o.traceId, 16, 'traceId'),
      spanId: id(o.spanId, 8, 'spanId'),
      name: str(o.name, 'name'),
      kind: enumValue(o.kind, KIND_NAMES, 'SPAN_KIND_', 'kind'),
      startTimeUnixNano: start,
      endTimeUnixNano: end,
      durationNano: nanoDiff(endV, startV, end, start),
      attributes: attributesOf(o),
      status: { code: statusCode },
      events: o.events === undefined ? [] : itemsOf(o.events, 'events', eventOf),
      links: o.links === undefined ? [] : itemsOf(o.links, 'links', linkOf),
    };
    const parent = optionalId(o.parentSpanId, 8, 'parentSpanId');
    if (parent) s.parentSpanId = parent;
    const traceState = str(o.traceState, 'traceState');
    if (traceState) s.traceState = traceState;
    if (o.flags !== undefined) s.flags = int64(o.flags, 'flags');
    if (message) s.status.message = message;
    if (validId(s.traceId, 32) && validId(s.spanId, 16)) spans.push(s);
    else rejected++;
  });
  return rejected
    ? {
        spans,
        rejected,
        rejectReason: `${rejected} span(s) without a valid 16-byte traceId and 8-byte spanId`,
      }
    : { spans, rejected };
}

function itemsOf<T>(v: unknown, field: string, each: (o: Obj) => T): T[] {
  const arr = list(v, field);
  const out: T[] = [];
  for (let i = 0; i < arr.length; i++) {
    try {
      const o = arr[i];
      if (!isObj(o)) throw new OtlpDecodeError('must be an object');
      out.push(each(o));
    } catch (error) {
      rethrowAt(rethrowAtSafe(error, i), field);
    }
  }
  return out;
}

function eventOf(o: Obj): SpanEventRecord {
  return {
    name: str(o.name, 'name'),
    timeUnixNano: int64(o.timeUnixNano, 'timeUnixNano'),
    attributes: attributesOf(o),
  };
}

function linkOf(o: Obj): SpanLinkRecord {
  const l: SpanLinkRecord = {
    traceId: id(o.traceId, 16, 'traceId'),
    spanId: id(o.spanId, 8, 'spanId'),
    attributes: attributesOf(o),
  };
  const ts = str(o.traceState, 'traceState');
  if (ts) l.traceState = ts;
  return l;
}

const SEVERITY_PREFIX = 'SEVERITY_NUMBER_';
// prettier-ignore
const SEVERITY_NAMES = [
  'UNSPECIFIED', 'TRACE', 'TRACE2', 'TRACE3', 'TRACE4', 'DEBUG', 'DEBUG2', 'DEBUG3', 'DEBUG4',
  'INFO', 'INFO2', 'INFO3', 'INFO4', 'WARN', 'WARN2', 'WARN3', 'WARN4', 'ERROR', 'ERROR2', 'ERROR3',
  'ERROR4', 'FATAL', 'FATAL2', 'FATAL3', 'FATAL4',
] as const;

/** Decodes an OTLP/JSON ExportLogsServiceRequest. Throws OtlpDecodeError. */
export function decodeLogsRequestJson(body: string | Uint8Array): DecodedLogs {
  const logs: LogRecord[] = [];
  eachScoped(parse(body), 'resourceLogs', 'scopeLogs', 'logRecords', (o, env) => {
    const sev = enumValue(o.severityNumber, SEVERITY_NAMES, SEVERITY_PREFIX, 'severityNumber');
    let bodyValue: AttributeValue;
    try {
      bodyValue = anyValue(o.body, 0);
    } catch (error) {
      rethrowAt(error, 'body');
    }
    const l: LogRecord = {
      resource: env.resource,
      scope: env.scope,
      timeUnixNano: int64(o.timeUnixNano, 'timeUnixNano'),
      observedTimeUnixNano: int64(o.observedTimeUnixNano, 'observedTimeUnixNano'),
      severityNumber: SEVERITY_NAMES.indexOf(sev),
      body: bodyValue,
      attributes: attributesOf(o),
    };
    const text = str(o.severityText, 'severityText');
    if (text) l.severityText = text;
    const traceId = optionalId(o.traceId, 16, 'traceId');
    if (traceId) l.traceId = traceId;
    const spanId = optionalId(o.spanId, 8, 'spanId');
    if (spanId) l.spanId = spanId;
    if (o.flags !== undefined) l.flags = int64(o.flags, 'flags');
    const eventName = str(o.eventName, 'eventName');
    if (eventName) l.eventName = eventName;
    logs.push(l);
  });
  return { logs, rejected: 0 };
}

const METRIC_DATA_KEYS = ['gauge', 'sum', 'histogram', 'exponentialHistogram', 'summary'];

/** Decodes an OTLP/JSON ExportMetricsServiceRequest far enough to validate and count data points. */
export function decodeMetricsRequestJson(body: string | Uint8Array): DecodedMetrics {
  const metricNames: string[] = [];
  let dataPoints = 0;
  eachScoped(parse(body), 'resourceMetrics', 'scopeMetrics', 'metrics', (o) => {
    metricNames.push(str(o.name, 'name'));
    for (const key of METRIC_DATA_KEYS) {
      if (o[key] !== undefined) {
        try {
          dataPoints += list(obj(o[key], key).dataPoints, 'dataPoints').length;
        } catch (error) {
          rethrowAt(error, key);
        }
      }
    }
  });
  return { metricNames, dataPoints };
}
