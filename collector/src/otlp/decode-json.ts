import type {
  AttributeValue,
  Attributes,
  LogRecord,
  SpanEventRecord,
  SpanLinkRecord,
  SpanRecord,
} from '../wire-types.js';
import { OtlpDecodeError } from './otlp-decode-error.js';
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

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function list(v: unknown, path: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new OtlpDecodeError(`${path} must be an array`);
  return v;
}

function obj(v: unknown, path: string): Obj {
  if (v === undefined || v === null) return {};
  if (!isObj(v)) throw new OtlpDecodeError(`${path} must be an object`);
  return v;
}

function str(v: unknown, path: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new OtlpDecodeError(`${path} must be a string`);
  return v;
}

const INT_RE = /^-?\d+$/;

/** int64/uint64/fixed64: a decimal string or a number. */
function int64(v: unknown, path: string): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && INT_RE.test(v)) return Number(v);
  throw new OtlpDecodeError(`${path} must be an integer (number or decimal string)`);
}

/** Exact end − start for nanosecond timestamps given as strings (numbers past 2^53 are rounded). */
function nanoDiff(endV: unknown, startV: unknown, end: number, start: number): number {
  if (typeof endV === 'string' && typeof startV === 'string') {
    const d = Number(BigInt(endV) - BigInt(startV));
    return d > 0 ? d : 0;
  }
  return end > start ? end - start : 0;
}

function enumValue<T extends string>(v: unknown, names: readonly T[], prefix: string, path: string): T {
  if (v === undefined || v === null) return names[0]!;
  if (typeof v === 'number' && Number.isInteger(v)) return names[v] ?? names[0]!;
  if (typeof v === 'string') {
    const bare = v.startsWith(prefix) ? v.slice(prefix.length) : v;
    if ((names as readonly string[]).includes(bare)) return bare as T;
    if (INT_RE.test(v)) return names[Number(v)] ?? names[0]!;
  }
  throw new OtlpDecodeError(
    `${path} must be one of ${names.map((n) => prefix + n).join(', ')} or its number`,
  );
}

const HEX_RE = /^[0-9a-fA-F]*$/;
const B64_RE = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Hex (any case) or base64 id → lowercase hex; '' when absent. */
function id(v: unknown, bytes: number, path: string): string {
  const s = str(v, path);
  if (!s) return '';
  if (s.length === bytes * 2 && HEX_RE.test(s)) return s.toLowerCase();
  if (B64_RE.test(s)) {
    const raw = Buffer.from(s, 'base64');
    if (raw.length === bytes) return bytesToHex(raw);
  }
  throw new OtlpDecodeError(`${path} must be ${bytes} bytes as hex or base64`);
}

function optionalId(v: unknown, bytes: number, path: string): string | undefined {
  const s = id(v, bytes, path);
  return s && !/^0+$/.test(s) ? s : undefined;
}

function anyValue(v: unknown, path: string, depth: number): AttributeValue {
  checkDepth(depth);
  if (v === undefined || v === null) return null;
  if (!isObj(v)) throw new OtlpDecodeError(`${path} must be an AnyValue object`);
  if ('stringValue' in v) return str(v.stringValue, `${path}.stringValue`);
  if ('boolValue' in v) {
    if (typeof v.boolValue !== 'boolean') throw new OtlpDecodeError(`${path}.boolValue must be a boolean`);
    return v.boolValue;
  }
  if ('intValue' in v) return int64(v.intValue, `${path}.intValue`);
  if ('doubleValue' in v) {
    const d = v.doubleValue;
    if (typeof d === 'number') return d;
    // proto3 JSON spells non-finite doubles as strings.
    if (typeof d === 'string' && !Number.isNaN(Number(d))) return Number(d);
    if (d === 'NaN' || d === 'Infinity' || d === '-Infinity') return d;
    throw new OtlpDecodeError(`${path}.doubleValue must be a number`);
  }
  if ('arrayValue' in v) {
    const values = list(obj(v.arrayValue, `${path}.arrayValue`).values, `${path}.arrayValue.values`);
    return values.map((x, i) => anyValue(x, `${path}.arrayValue.values[${i}]`, depth + 1));
  }
  if ('kvlistValue' in v) {
    const values = list(obj(v.kvlistValue, `${path}.kvlistValue`).values, `${path}.kvlistValue.values`);
    return keyValues(values, `${path}.kvlistValue.values`, depth + 1);
  }
  if ('bytesValue' in v) return str(v.bytesValue, `${path}.bytesValue`);
  return null;
}

function keyValues(kvs: unknown, path: string, depth = 0): Attributes {
  const out: Attributes = {};
  const arr = list(kvs, path);
  for (let i = 0; i < arr.length; i++) {
    const kv = arr[i];
    if (!isObj(kv)) throw new OtlpDecodeError(`${path}[${i}] must be a KeyValue object`);
    setKey(out, str(kv.key, `${path}[${i}].key`), anyValue(kv.value, `${path}[${i}].value`, depth));
  }
  return out;
}

function scopeOf(v: unknown, path: string): { name: string; version?: string } {
  const o = obj(v, path);
  const s: { name: string; version?: string } = { name: str(o.name, `${path}.name`) };
  const version = str(o.version, `${path}.version`);
  if (version) s.version = version;
  return s;
}

function parse(body: string | Uint8Array): Obj {
  let root: unknown;
  try {
    root = JSON.parse(typeof body === 'string' ? body : Buffer.from(body).toString('utf8'));
  } catch (error) {
    throw new OtlpDecodeError(`body is not valid JSON: ${(error as Error).message}`);
  }
  if (!isObj(root)) throw new OtlpDecodeError('body must be a JSON object');
  return root;
}

/** Walks resource → scope → items for traces and logs. */
function eachScoped(
  root: Obj,
  resourceKey: string,
  scopeKey: string,
  itemKey: string,
  onItem: (item: Obj, env: Pick<SpanRecord, 'resource' | 'scope'>, path: string) => void,
): void {
  list(root[resourceKey], resourceKey).forEach((rs, i) => {
    const rp = `${resourceKey}[${i}]`;
    const r = obj(rs, rp);
    const res = obj(r.resource, `${rp}.resource`);
    const resource = { attributes: keyValues(res.attributes, `${rp}.resource.attributes`) };
    list(r[scopeKey], `${rp}.${scopeKey}`).forEach((ss, j) => {
      const sp = `${rp}.${scopeKey}[${j}]`;
      const s = obj(ss, sp);
      const env = { resource, scope: scopeOf(s.scope, `${sp}.scope`) };
      list(s[itemKey], `${sp}.${itemKey}`).forEach((item, k) => {
        const ip = `${sp}.${itemKey}[${k}]`;
        if (!isObj(item)) throw new OtlpDecodeError(`${ip} must be an object`);
        onItem(item, env, ip);
      });
    });
  });
}

/** Decodes an OTLP/JSON ExportTraceServiceRequest (text or bytes). Throws OtlpDecodeError. */
export function decodeTraceRequestJson(body: string | Uint8Array): DecodedTraces {
  const spans: SpanRecord[] = [];
  let rejected = 0;
  eachScoped(parse(body), 'resourceSpans', 'scopeSpans', 'spans', (o, env, p) => {
    const startV = o.startTimeUnixNano;
    const endV = o.endTimeUnixNano;
    const start = int64(startV, `${p}.startTimeUnixNano`);
    const end = int64(endV, `${p}.endTimeUnixNano`);
    const status = obj(o.status, `${p}.status`);
    const s: SpanRecord = {
      resource: env.resource,
      scope: env.scope,
      traceId: id(o.traceId, 16, `${p}.traceId`),
      spanId: id(o.spanId, 8, `${p}.spanId`),
      name: str(o.name, `${p}.name`),
      kind: enumValue(o.kind, KIND_NAMES, 'SPAN_KIND_', `${p}.kind`),
      startTimeUnixNano: start,
      endTimeUnixNano: end,
      durationNano: nanoDiff(endV, startV, end, start),
      attributes: keyValues(o.attributes, `${p}.attributes`),
      status: { code: enumValue(status.code, STATUS_NAMES, 'STATUS_CODE_', `${p}.status.code`) },
      events: list(o.events, `${p}.events`).map((e, i) => eventOf(e, `${p}.events[${i}]`)),
      links: list(o.links, `${p}.links`).map((l, i) => linkOf(l, `${p}.links[${i}]`)),
    };
    const parent = optionalId(o.parentSpanId, 8, `${p}.parentSpanId`);
    if (parent) s.parentSpanId = parent;
    const traceState = str(o.traceState, `${p}.traceState`);
    if (traceState) s.traceState = traceState;
    if (o.flags !== undefined) s.flags = int64(o.flags, `${p}.flags`);
    const message = str(status.message, `${p}.status.message`);
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

function eventOf(v: unknown, path: string): SpanEventRecord {
  const o = obj(v, path);
  return {
    name: str(o.name, `${path}.name`),
    timeUnixNano: int64(o.timeUnixNano, `${path}.timeUnixNano`),
    attributes: keyValues(o.attributes, `${path}.attributes`),
  };
}

function linkOf(v: unknown, path: string): SpanLinkRecord {
  const o = obj(v, path);
  const l: SpanLinkRecord = {
    traceId: id(o.traceId, 16, `${path}.traceId`),
    spanId: id(o.spanId, 8, `${path}.spanId`),
    attributes: keyValues(o.attributes, `${path}.attributes`),
  };
  const ts = str(o.traceState, `${path}.traceState`);
  if (ts) l.traceState = ts;
  return l;
}

const SEVERITY_PREFIX = 'SEVERITY_NUMBER_';
const SEVERITY_NAMES = [
  'UNSPECIFIED',
  'TRACE',
  'TRACE2',
  'TRACE3',
  'TRACE4',
  'DEBUG',
  'DEBUG2',
  'DEBUG3',
  'DEBUG4',
  'INFO',
  'INFO2',
  'INFO3',
  'INFO4',
  'WARN',
  'WARN2',
  'WARN3',
  'WARN4',
  'ERROR',
  'ERROR2',
  'ERROR3',
  'ERROR4',
  'FATAL',
  'FATAL2',
  'FATAL3',
  'FATAL4',
] as const;

/** Decodes an OTLP/JSON ExportLogsServiceRequest. Throws OtlpDecodeError. */
export function decodeLogsRequestJson(body: string | Uint8Array): DecodedLogs {
  const logs: LogRecord[] = [];
  eachScoped(parse(body), 'resourceLogs', 'scopeLogs', 'logRecords', (o, env, p) => {
    const sev = enumValue(o.severityNumber, SEVERITY_NAMES, SEVERITY_PREFIX, `${p}.severityNumber`);
    const l: LogRecord = {
      resource: env.resource,
      scope: env.scope,
      timeUnixNano: int64(o.timeUnixNano, `${p}.timeUnixNano`),
      observedTimeUnixNano: int64(o.observedTimeUnixNano, `${p}.observedTimeUnixNano`),
      severityNumber: SEVERITY_NAMES.indexOf(sev),
      body: anyValue(o.body, `${p}.body`, 0),
      attributes: keyValues(o.attributes, `${p}.attributes`),
    };
    const text = str(o.severityText, `${p}.severityText`);
    if (text) l.severityText = text;
    const traceId = optionalId(o.traceId, 16, `${p}.traceId`);
    if (traceId) l.traceId = traceId;
    const spanId = optionalId(o.spanId, 8, `${p}.spanId`);
    if (spanId) l.spanId = spanId;
    if (o.flags !== undefined) l.flags = int64(o.flags, `${p}.flags`);
    const eventName = str(o.eventName, `${p}.eventName`);
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
  eachScoped(parse(body), 'resourceMetrics', 'scopeMetrics', 'metrics', (o, _env, p) => {
    metricNames.push(str(o.name, `${p}.name`));
    for (const key of METRIC_DATA_KEYS) {
      if (o[key] !== undefined) {
        dataPoints += list(obj(o[key], `${p}.${key}`).dataPoints, `${p}.${key}.dataPoints`).length;
      }
    }
  });
  return { metricNames, dataPoints };
}
