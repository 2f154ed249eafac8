import type {
  AttributeValue,
  Attributes,
  LogRecord,
  SpanEventRecord,
  SpanLinkRecord,
  SpanRecord,
} from '../wire-types.js';
import { ProtobufReader } from './protobuf-reader.js';
import {
  type DecodedLogs,
  type DecodedMetrics,
  type DecodedTraces,
  checkDepth,
  kindName,
  setKey,
  statusName,
  validId,
} from './records.js';

// Field numbers and wire types from opentelemetry-proto (trace/v1, logs/v1, metrics/v1, common/v1,
// resource/v1, collector/*/v1). A tag is (field << 3) | wireType.
const LEN = 2;
const VARINT = 0;
const I64 = 1;
const I32 = 5;
const t = (field: number, wire: number): number => (field << 3) | wire;

interface Envelope {
  resource: { attributes: Attributes };
  scope: { name: string; version?: string };
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function anyValue(r: ProtobufReader, depth: number): AttributeValue {
  checkDepth(depth);
  let value: AttributeValue = null;
  while (!r.done) {
    const tag = r.tag();
    switch (tag) {
      case t(1, LEN):
        value = r.string();
        break;
      case t(2, VARINT):
        value = r.varint() !== 0;
        break;
      case t(3, VARINT):
        value = r.int64();
        break;
      case t(4, I64):
        value = r.double();
        break;
      case t(5, LEN): {
        const arr: AttributeValue[] = [];
        const a = r.sub();
        while (!a.done) {
          const at = a.tag();
          if (at === t(1, LEN)) arr.push(anyValue(a.sub(), depth + 1));
          else a.skip(at & 7);
        }
        value = arr;
        break;
      }
      case t(6, LEN): {
        const obj: Attributes = {};
        const kv = r.sub();
        while (!kv.done) {
          const kt = kv.tag();
          if (kt === t(1, LEN)) keyValue(kv, obj, depth + 1);
          else kv.skip(kt & 7);
        }
        value = obj;
        break;
      }
      case t(7, LEN):
        value = r.base64();
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return value;
}

/**
 * Reads the KeyValue message that follows in `r` into `into`. The message (and its AnyValue) is
 * read through `r` itself, narrowed to the message's bytes: no reader object per attribute.
 */
export function keyValue(r: ProtobufReader, into: Attributes, depth: number): void {
  const outer = r.enter();
  let key = '';
  let value: AttributeValue = null;
  while (!r.done) {
    const tag = r.tag();
    if (tag === t(1, LEN)) key = r.string();
    else if (tag === t(2, LEN)) {
      const inner = r.enter();
      value = anyValue(r, depth);
      r.leave(inner);
    } else r.skip(tag & 7);
  }
  r.leave(outer);
  setKey(into, key, value);
}

function resource(r: ProtobufReader): { attributes: Attributes } {
  const attributes: Attributes = {};
  while (!r.done) {
    const tag = r.tag();
    if (tag === t(1, LEN)) keyValue(r, attributes, 0);
    else r.skip(tag & 7);
  }
  return { attributes };
}

function scope(r: ProtobufReader): { name: string; version?: string } {
  const s: { name: string; version?: string } = { name: '' };
  while (!r.done) {
    const tag = r.tag();
    if (tag === t(1, LEN)) s.name = r.string();
    else if (tag === t(2, LEN)) {
      const v = r.string();
      if (v) s.version = v;
    } else r.skip(tag & 7);
  }
  return s;
}

/** Walks Resource* → Scope* → item envelopes shared by traces, logs and metrics. */
export function eachScoped(
  bytes: Uint8Array,
  itemField: number,
  onItem: (r: ProtobufReader, env: Envelope) => void,
): void {
  const root = new ProtobufReader(toBuffer(bytes));
  while (!root.done) {
    const tag = root.tag();
    if (tag !== t(1, LEN)) {
      root.skip(tag & 7);
      continue;
    }
    const rs = root.sub();
    let res: { attributes: Attributes } = { attributes: {} };
    const scopes: ProtobufReader[] = [];
    while (!rs.done) {
      const tg = rs.tag();
      if (tg === t(1, LEN)) res = resource(rs.sub());
      else if (tg === t(2, LEN)) scopes.push(rs.sub());
      else rs.skip(tg & 7);
    }
    for (const ss of scopes) {
      let sc: { name: string; version?: string } = { name: '' };
      const items: ProtobufReader[] = [];
      while (!ss.done) {
        const tg = ss.tag();
        if (tg === t(1, LEN)) sc = scope(ss.sub());
        else if (tg === t(itemField, LEN)) items.push(ss.sub());
        else ss.skip(tg & 7);
      }
      const env = { resource: res, scope: sc };
      for (const item of items) onItem(item, env);
    }
  }
}

function event(r: ProtobufReader): SpanEventRecord {
  const e: SpanEventRecord = { name: '', timeUnixNano: 0, attributes: {} };
  while (!r.done) {
    const tag = r.tag();
    if (tag === t(1, I64)) e.timeUnixNano = r.fixed64();
    else if (tag === t(2, LEN)) e.name = r.string();
    else if (tag === t(3, LEN)) keyValue(r, e.attributes, 0);
    else r.skip(tag & 7);
  }
  return e;
}

function link(r: ProtobufReader): SpanLinkRecord {
  const l: SpanLinkRecord = { traceId: '', spanId: '', attributes: {} };
  while (!r.done) {
    const tag = r.tag();
    if (tag === t(1, LEN)) l.traceId = r.hex();
    else if (tag === t(2, LEN)) l.spanId = r.hex();
    else if (tag === t(3, LEN)) {
      const ts = r.string();
      if (ts) l.traceState = ts;
    } else if (tag === t(4, LEN)) keyValue(r, l.attributes, 0);
    else r.skip(tag & 7);
  }
  return l;
}

const TWO_32 = 4294967296;

/** Decodes a protobuf ExportTraceServiceRequest into span records. Throws OtlpDecodeError. */
export function decodeTraceRequest(bytes: Uint8Array): DecodedTraces {
  const spans: SpanRecord[] = [];
  let rejected = 0;
  const start = new Uint32Array(2);
  const end = new Uint32Array(2);
  eachScoped(bytes, 2, (r, env) => {
    const s: SpanRecord = {
      resource: env.resource,
      scope: env.scope,
      traceId: '',
      spanId: '',
      name: '',
      kind: 'UNSPECIFIED',
      startTimeUnixNano: 0,
      endTimeUnixNano: 0,
      durationNano: 0,
      attributes: {},
      status: { code: 'UNSET' },
      events: [],
      links: [],
    };
    start[0] = start[1] = end[0] = end[1] = 0;
    while (!r.done) {
      const tag = r.tag();
      switch (tag) {
        case t(1, LEN):
          s.traceId = r.hex();
          break;
        case t(2, LEN):
          s.spanId = r.hex();
          break;
        case t(3, LEN): {
          const ts = r.string();
          if (ts) s.traceState = ts;
          break;
        }
        case t(4, LEN): {
          const p = r.hex();
          if (p && !/^0+$/.test(p)) s.parentSpanId = p;
          break;
        }
        case t(5, LEN):
          s.name = r.string();
          break;
        case t(6, VARINT):
          s.kind = kindName(r.varint());
          break;
        case t(7, I64):
          s.startTimeUnixNano = r.fixed64(start);
          break;
        case t(8, I64):
          s.endTimeUnixNano = r.fixed64(end);
          break;
        case t(9, LEN):
          keyValue(r, s.attributes, 0);
          break;
        case t(11, LEN):
          s.events.push(event(r.sub()));
          break;
        case t(13, LEN):
          s.links.push(link(r.sub()));
          break;
        case t(15, LEN): {
          const st = r.sub();
          while (!st.done) {
            const tg = st.tag();
            if (tg === t(2, LEN)) {
              const m = st.string();
              if (m) s.status.message = m;
            } else if (tg === t(3, VARINT)) s.status.code = statusName(st.varint());
            else st.skip(tg & 7);
          }
          break;
        }
        case t(16, I32):
          s.flags = r.fixed32();
          break;
        default:
          r.skip(tag & 7);
      }
    }
    // Exact difference from the 32-bit halves: the epoch-ns numbers themselves lose precision.
    const d = (end[0]! - start[0]!) * TWO_32 + (end[1]! - start[1]!);
    s.durationNano = d > 0 ? d : 0;
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

/** Decodes a protobuf ExportLogsServiceRequest into log records. Throws OtlpDecodeError. */
export function decodeLogsRequest(bytes: Uint8Array): DecodedLogs {
  const logs: LogRecord[] = [];
  eachScoped(bytes, 2, (r, env) => {
    const l: LogRecord = {
      resource: env.resource,
      scope: env.scope,
      timeUnixNano: 0,
      observedTimeUnixNano: 0,
      severityNumber: 0,
      body: null,
      attributes: {},
    };
    while (!r.done) {
      const tag = r.tag();
      switch (tag) {
        case t(1, I64):
          l.timeUnixNano = r.fixed64();
          break;
        case t(2, VARINT):
          l.severityNumber = r.varint();
          break;
        case t(3, LEN): {
          const s = r.string();
          if (s) l.severityText = s;
          break;
        }
        case t(5, LEN):
          l.body = anyValue(r.sub(), 0);
          break;
        case t(6, LEN):
          keyValue(r, l.attributes, 0);
          break;
        case t(8, I32):
          l.flags = r.fixed32();
          break;
        case t(9, LEN): {
          const id = r.hex();
          if (id && !/^0+$/.test(id)) l.traceId = id;
          break;
        }
        case t(10, LEN): {
          const id = r.hex();
          if (id && !/^0+$/.test(id)) l.spanId = id;
          break;
        }
        case t(11, I64):
          l.observedTimeUnixNano = r.fixed64();
          break;
        case t(12, LEN): {
          const n = r.string();
          if (n) l.eventName = n;
          break;
        }
        default:
          r.skip(tag & 7);
      }
    }
    logs.push(l);
  });
  return { logs, rejected: 0 };
}

// Metric data kinds (gauge 5, sum 7, histogram 9, exponential histogram 10, summary 11): each has
// `repeated data_points = 1`.
const DATA_FIELDS = new Set([5, 7, 9, 10, 11]);

/** Decodes a protobuf ExportMetricsServiceRequest far enough to validate and count data points. */
export function decodeMetricsRequest(bytes: Uint8Array): DecodedMetrics {
  const metricNames: string[] = [];
  let dataPoints = 0;
  eachScoped(bytes, 2, (r) => {
    while (!r.done) {
      const tag = r.tag();
      if (tag === t(1, LEN)) metricNames.push(r.string());
      else if ((tag & 7) === LEN && DATA_FIELDS.has(tag >>> 3)) {
        const d = r.sub();
        while (!d.done) {
          const dt = d.tag();
          if (dt === t(1, LEN)) dataPoints++;
          d.skip(dt & 7);
        }
      } else r.skip(tag & 7);
    }
  });
  return { metricNames, dataPoints };
}
