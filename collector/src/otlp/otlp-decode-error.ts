/** Raised for undecodable OTLP data (bad protobuf, bad JSON, wrong shape): answered with 400. */
export class OtlpDecodeError extends Error {
  override name = 'OtlpDecodeError';
}
