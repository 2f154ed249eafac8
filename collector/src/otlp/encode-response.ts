// Responses of the OTLP/HTTP receiver, in the request's encoding: Export*ServiceResponse on success
// (with partial_success when something was rejected) and google.rpc.Status on failure.

export type Signal = 'traces' | 'logs' | 'metrics';

const REJECTED_KEY: Record<Signal, string> = {
  traces: 'rejectedSpans',
  logs: 'rejectedLogRecords',
  metrics: 'rejectedDataPoints',
};

function varint(out: number[], v: number): void {
  while (v > 0x7f) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
}

function lengthDelimited(out: number[], field: number, bytes: Uint8Array | number[]): void {
  varint(out, (field << 3) | 2);
  varint(out, bytes.length);
  for (const b of bytes) out.push(b);
}

/** Export{Trace,Logs,Metrics}ServiceResponse as protobuf bytes. */
export function exportResponseProtobuf(rejected: number, errorMessage?: string): Uint8Array {
  if (!rejected && !errorMessage) return new Uint8Array(0);
  const partial: number[] = [];
  if (rejected) {
    varint(partial, (1 << 3) | 0);
    varint(partial, rejected);
  }
  if (errorMessage) lengthDelimited(partial, 2, Buffer.from(errorMessage, 'utf8'));
  const out: number[] = [];
  lengthDelimited(out, 1, partial);
  return Uint8Array.from(out);
}

/** Export{Trace,Logs,Metrics}ServiceResponse as OTLP/JSON. */
export function exportResponseJson(signal: Signal, rejected: number, errorMessage?: string): string {
  if (!rejected && !errorMessage) return '{}';
  return JSON.stringify({
    partialSuccess: { [REJECTED_KEY[signal]]: String(rejected), errorMessage: errorMessage ?? '' },
  });
}

/** google.rpc.Status { code = 1, message = 2 } as protobuf bytes. */
export function statusProtobuf(grpcCode: number, message: string): Uint8Array {
  const out: number[] = [];
  varint(out, (1 << 3) | 0);
  varint(out, grpcCode);
  lengthDelimited(out, 2, Buffer.from(message, 'utf8'));
  return Uint8Array.from(out);
}

/** The gRPC code that matches an HTTP status, for google.rpc.Status bodies. */
export function grpcCodeFor(httpStatus: number): number {
  switch (httpStatus) {
    case 400:
      return 3; // INVALID_ARGUMENT
    case 404:
      return 5; // NOT_FOUND
    case 413:
      return 11; // OUT_OF_RANGE
    case 415:
      return 3;
    case 429:
      return 8; // RESOURCE_EXHAUSTED
    case 503:
      return 14; // UNAVAILABLE
    default:
      return httpStatus >= 500 ? 13 : 2; // INTERNAL : UNKNOWN
  }
}
