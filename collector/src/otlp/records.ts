import type {
  AttributeValue,
  Attributes,
  LogRecord,
  SpanKindName,
  SpanRecord,
  StatusCodeName,
} from '../wire-types.js';
import { OtlpDecodeError } from './otlp-decode-error.js';

/** What a decoded ExportTraceServiceRequest yields: one record per valid span. */
export interface DecodedTraces {
  spans: SpanRecord[];
  /** Spans dropped because they were invalid (bad ids); reported as partial success. */
  rejected: number;
  rejectReason?: string;
}

/** What a decoded ExportLogsServiceRequest yields. */
export interface DecodedLogs {
  logs: LogRecord[];
  rejected: number;
  rejectReason?: string;
}

/** What a decoded ExportMetricsServiceRequest yields: metrics are counted, not stored. */
export interface DecodedMetrics {
  metricNames: string[];
  dataPoints: number;
}

/** AnyValue nesting deeper than this is refused (400): it is hostile, not telemetry. */
export const MAX_VALUE_DEPTH = 64;

export const KIND_NAMES: readonly SpanKindName[] = [
  'UNSPECIFIED',
  'INTERNAL',
  'SERVER',
  'CLIENT',
  'PRODUCER',
  'CONSUMER',
];
export const STATUS_NAMES: readonly StatusCodeName[] = ['UNSET', 'OK', 'ERROR'];

export function kindName(n: number): SpanKindName {
  return KIND_NAMES[n] ?? 'UNSPECIFIED';
}

export function statusName(n: number): StatusCodeName {
  return STATUS_NAMES[n] ?? 'UNSET';
}

/**
 * Sets `obj[key] = value` as an own property even for `__proto__`, so attribute names coming off
 * the wire can never change an object's prototype.
 */
export function setKey(obj: Attributes, key: string, value: AttributeValue): void {
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}

export function checkDepth(depth: number): void {
  if (depth > MAX_VALUE_DEPTH) {
    throw new OtlpDecodeError(`attribute value nested deeper than ${MAX_VALUE_DEPTH} levels`);
  }
}

/** A 32-hex trace id that is not all zeros, or a 16-hex span id. */
export function validId(id: string, hexLength: number): boolean {
  return id.length === hexLength && !/^0+$/.test(id);
}
