import {
  attributesOf,
  eachScoped as eachScopedJson,
  int64,
  list,
  obj,
  parse,
  str,
} from '../otlp/decode-json.js';
import { eachScoped, keyValue } from '../otlp/decode-protobuf.js';
import { OtlpDecodeError, rethrowAt } from '../otlp/otlp-decode-error.js';
import { type ProtobufReader } from '../otlp/protobuf-reader.js';
import type { Attributes } from '../wire-types.js';
import {
  type DecodedMetricPoints,
  type ExpBuckets,
  type MetricKind,
  type MetricPoint,
  type Temporality,
  invalidReason,
} from './metric-point.js';

// opentelemetry-proto metrics/v1: Metric name 1, description 2, unit 3, gauge 5, sum 7, histogram 9,
// exponential_histogram 10, summary 11. Each data kind: data_points 1, aggregation_temporality 2,
// is_monotonic 3 (sum).
const LEN = 2;
const VARINT = 0;
const I64 = 1;
const t = (field: number, wire: number): number => (field << 3) | wire;
const KIND_BY_FIELD: Record<number, MetricKind> = {
  5: 'gauge',
  7: 'sum',
  9: 'histogram',
  10: 'exponential_histogram',
  11: 'summary',
};
const TEMPORALITY: readonly Temporality[] = ['unspecified', 'delta', 'cumulative'];
const TWO_64 = 2 ** 64;

/** Keeps the valid points and counts the rest, remembering the first reason. */
function collector(): { add(p: MetricPoint): void; result(): DecodedMetricPoints } {
  const points: MetricPoint[] = [];
  let rejected = 0;
  let rejectReason: string | undefined;
  return {
    add(p) {
      const reason = invalidReason(p);
      if (reason === undefined) points.push(p);
      else {
        rejected++;
        rejectReason ??= reason;
      }
    },
    result: () => (rejectReason === undefined ? { points, rejected } : { points, rejected, rejectReason }),
  };
}

function zigzag(n: number): number {
  return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
}

/** sfixed64 (as_int): the reader returns it unsigned. */
function sfixed64(r: ProtobufReader): number {
  const v = r.fixed64();
  return v >= 2 ** 63 ? v - TWO_64 : v;
}

/** A repeated fixed64/double, packed (LEN) or not (one I64 per element). */
function repeated8(r: ProtobufReader, tag: number, out: number[], read: (x: ProtobufReader) => number): void {
  if ((tag & 7) === LEN) {
    const p = r.sub();
    while (!p.done) out.push(read(p));
  } else out.push(read(r));
}

function expBuckets(r: ProtobufReader): ExpBuckets {
  const b: ExpBuckets = { offset: 0, counts: [] };
  while (!r.done) {
    const tag = r.tag();
    if (tag === t(1, VARINT)) b.offset = zigzag(r.varint());
    else if (tag === t(2, LEN)) {
      const p = r.sub();
      while (!p.done) b.counts.push(p.varint());
    } else if (tag === t(2, VARINT)) b.counts.push(r.varint());
    else r.skip(tag & 7);
  }
  return b;
}

/** One data point message of any kind into `p` (the fields differ by kind; see metrics.proto). */
function dataPoint(r: ProtobufReader, kind: MetricKind, p: MetricPoint): void {
  const attrsField = kind === 'histogram' ? 9 : kind === 'exponential_histogram' ? 1 : 7;
  while (!r.done) {
    const tag = r.tag();
    const field = tag >>> 3;
    if (field === attrsField && (tag & 7) === LEN) {
      keyValue(r, p.attributes, 0);
      continue;
    }
    if (tag === t(2, I64)) p.startTimeUnixNano = r.fixed64();
    else if (tag === t(3, I64)) p.timeUnixNano = r.fixed64();
    else if (kind === 'gauge' || kind === 'sum') {
      if (tag === t(4, I64)) p.value = r.double();
      else if (tag === t(6, I64)) p.value = sfixed64(r);
      else r.skip(tag & 7);
    } else if (tag === t(4, I64)) p.count = r.fixed64();
    else if (tag === t(5, I64)) p.sum = r.double();
    else if (kind === 'histogram') {
      if (field === 6) repeated8(r, tag, (p.bucketCounts ??= []), (x) => x.fixed64());
      else if (field === 7) repeated8(r, tag, (p.bounds ??= []), (x) => x.double());
      else if (tag === t(11, I64)) p.min = r.double();
      else if (tag === t(12, I64)) p.max = r.double();
      else r.skip(tag & 7);
    } else if (kind === 'exponential_histogram') {
      if (tag === t(6, VARINT)) p.scale = zigzag(r.varint());
      else if (tag === t(7, I64)) p.zeroCount = r.fixed64();
      else if (tag === t(8, LEN)) p.positive = expBuckets(r.sub());
      else if (tag === t(9, LEN)) p.negative = expBuckets(r.sub());
      else if (tag === t(12, I64)) p.min = r.double();
      else if (tag === t(13, I64)) p.max = r.double();
      else r.skip(tag & 7);
    } else r.skip(tag & 7);
  }
  if (kind === 'exponential_histogram') p.scale ??= 0;
}

/** Decodes a protobuf ExportMetricsServiceRequest into data points. Throws OtlpDecodeError. */
export function decodeMetricPoints(bytes: Uint8Array): DecodedMetricPoints {
  const out = collector();
  eachScoped(bytes, 2, (r, env) => {
    let name = '';
    let description = '';
    let unit = '';
    const data: { kind: MetricKind; r: ProtobufReader }[] = [];
    while (!r.done) {
      const tag = r.tag();
      if (tag === t(1, LEN)) name = r.string();
      else if (tag === t(2, LEN)) description = r.string();
      else if (tag === t(3, LEN)) unit = r.string();
      else if ((tag & 7) === LEN && KIND_BY_FIELD[tag >>> 3])
        data.push({ kind: KIND_BY_FIELD[tag >>> 3]!, r: r.sub() });
      else r.skip(tag & 7);
    }
    for (const { kind, r: d } of data) {
      let temporality: Temporality = 'unspecified';
      let monotonic = false;
      const points: ProtobufReader[] = [];
      while (!d.done) {
        const tag = d.tag();
        if (tag === t(1, LEN)) points.push(d.sub());
        else if (tag === t(2, VARINT)) temporality = TEMPORALITY[d.varint()] ?? 'unspecified';
        else if (tag === t(3, VARINT)) monotonic = d.varint() !== 0;
        else d.skip(tag & 7);
      }
      for (const pr of points) {
        const p: MetricPoint = {
          name,
          description,
          unit,
          kind,
          temporality: kind === 'gauge' ? 'unspecified' : temporality,
          monotonic,
          resource: env.resource.attributes,
          scope: env.scope.name,
          attributes: {},
          startTimeUnixNano: 0,
          timeUnixNano: 0,
        };
        dataPoint(pr, kind, p);
        out.add(p);
      }
    }
  });
  return out.result();
}

const JSON_KINDS: readonly [string, MetricKind][] = [
  ['gauge', 'gauge'],
  ['sum', 'sum'],
  ['histogram', 'histogram'],
  ['exponentialHistogram', 'exponential_histogram'],
  ['summary', 'summary'],
];

/** proto3 JSON doubles: numbers, or the strings "NaN", "Infinity", "-Infinity" (kept, then refused). */
function double(v: unknown, field: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    const n = Number(v);
    if (!Number.isNaN(n) || v === 'NaN') return n;
  }
  throw new OtlpDecodeError('must be a number', field);
}

function temporalityOf(v: unknown): Temporality {
  if (v === 1 || v === 'AGGREGATION_TEMPORALITY_DELTA') return 'delta';
  if (v === 2 || v === 'AGGREGATION_TEMPORALITY_CUMULATIVE') return 'cumulative';
  return 'unspecified';
}

function expBucketsJson(v: unknown, field: string): ExpBuckets | undefined {
  if (v === undefined || v === null) return undefined;
  const o = obj(v, field);
  return {
    offset: typeof o.offset === 'number' ? o.offset : 0,
    counts: list(o.bucketCounts, 'bucketCounts').map((c, i) => int64(c, `bucketCounts.${i}`)),
  };
}

/** Decodes an OTLP/JSON ExportMetricsServiceRequest into data points. Throws OtlpDecodeError. */
export function decodeMetricPointsJson(body: string | Uint8Array): DecodedMetricPoints {
  const out = collector();
  eachScopedJson(parse(body), 'resourceMetrics', 'scopeMetrics', 'metrics', (o, env) => {
    const name = str(o.name, 'name');
    const description = str(o.description, 'description');
    const unit = str(o.unit, 'unit');
    for (const [key, kind] of JSON_KINDS) {
      if (o[key] === undefined || o[key] === null) continue;
      try {
        const d = obj(o[key], key);
        const temporality = kind === 'gauge' ? 'unspecified' : temporalityOf(d.aggregationTemporality);
        const points = list(d.dataPoints, 'dataPoints');
        for (let i = 0; i < points.length; i++) {
          try {
            const dp = obj(points[i], '');
            const attributes: Attributes = attributesOf(dp);
            const p: MetricPoint = {
              name,
              description,
              unit,
              kind,
              temporality,
              monotonic: d.isMonotonic === true,
              resource: env.resource.attributes,
              scope: env.scope.name,
              attributes,
              startTimeUnixNano: int64(dp.startTimeUnixNano, 'startTimeUnixNano'),
              timeUnixNano: int64(dp.timeUnixNano, 'timeUnixNano'),
            };
            if (kind === 'gauge' || kind === 'sum')
              p.value = dp.asInt !== undefined ? int64(dp.asInt, 'asInt') : double(dp.asDouble, 'asDouble');
            else {
              p.count = int64(dp.count, 'count');
              const sum = double(dp.sum, 'sum');
              const min = double(dp.min, 'min');
              const max = double(dp.max, 'max');
              if (sum !== undefined) p.sum = sum;
              if (min !== undefined) p.min = min;
              if (max !== undefined) p.max = max;
              if (kind === 'histogram') {
                p.bucketCounts = list(dp.bucketCounts, 'bucketCounts').map((c, j) =>
                  int64(c, `bucketCounts.${j}`),
                );
                p.bounds = list(dp.explicitBounds, 'explicitBounds').map((b, j) =>
                  double(b, `explicitBounds.${j}`)!,
                );
              } else if (kind === 'exponential_histogram') {
                p.scale = typeof dp.scale === 'number' ? dp.scale : 0;
                p.zeroCount = int64(dp.zeroCount, 'zeroCount');
                const pos = expBucketsJson(dp.positive, 'positive');
                const neg = expBucketsJson(dp.negative, 'negative');
                if (pos) p.positive = pos;
                if (neg) p.negative = neg;
              }
            }
            out.add(p);
          } catch (error) {
            rethrowAt(error, i);
          }
        }
      } catch (error) {
        rethrowAt(error, key);
      }
    }
  });
  return out.result();
}
