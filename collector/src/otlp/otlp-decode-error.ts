/**
 * Raised for undecodable OTLP data (bad protobuf, bad JSON, wrong shape): answered with 400. JSON
 * errors carry the path of the offending field (`resourceSpans[0].scopeSpans[1].spans[3].traceId`),
 * built only when an error happens so the hot path allocates nothing for it.
 */
export class OtlpDecodeError extends Error {
  override name = 'OtlpDecodeError';
  /** Path segments, outermost first: field names and array indexes. */
  readonly path: (string | number)[] = [];
  readonly detail: string;

  constructor(detail: string, field?: string) {
    super(detail);
    this.detail = detail;
    if (field) this.at(field);
  }

  /** Adds an outer path segment and rewrites the message as `<path> <detail>`. */
  at(segment: string | number): this {
    this.path.unshift(segment);
    const text = this.path.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
    this.message = /^(must|is) /.test(this.detail) ? `${text} ${this.detail}` : `${text}: ${this.detail}`;
    return this;
  }
}

/** Re-throws `error` with `segment` prepended when it is an OtlpDecodeError. */
export function rethrowAt(error: unknown, segment: string | number): never {
  if (error instanceof OtlpDecodeError) throw error.at(segment);
  throw error;
}
