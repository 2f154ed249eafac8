/** Options of {@link HttpError}. */
export interface HttpErrorOptions {
  /** A stable machine-readable code, e.g. `bad_json`. Default: derived from the status. */
  code?: string;
  /** Whether the message is shown to the client. Default: true below 500, false from 500. */
  expose?: boolean;
  /** The underlying error. */
  cause?: unknown;
  /** Extra response headers, e.g. `Allow` for a 405 or `Retry-After` for a 503. */
  headers?: Readonly<Record<string, string>>;
}

/**
 * An HTTP error: a status (400–599; anything else is a 500), the message, a stable code and the
 * headers its response carries. 4xx messages are written for the client (`expose`); a 5xx's detail
 * belongs in the log unless `expose: true` says it was written for the client too.
 */
export class HttpError extends Error {
  override readonly name: string = 'HttpError';
  readonly status: number;
  readonly code: string;
  readonly expose: boolean;
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: number, message: string, options: HttpErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = Number.isInteger(status) && status >= 400 && status <= 599 ? status : 500;
    this.code = options.code ?? codeFor(this.status);
    this.expose = options.expose ?? this.status < 500;
    this.headers = options.headers ?? {};
  }
}

const CODES: Readonly<Record<number, string>> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable_entity',
  429: 'too_many_requests',
  503: 'service_unavailable',
};

function codeFor(status: number): string {
  return CODES[status] ?? (status < 500 ? 'client_error' : 'internal_error');
}
