/**
 * The collector's one HTTP error: a status, a stable code and a message. 4xx messages are shown to
 * the client as they are (`expose`); 5xx details go to the log and the client gets a generic line,
 * unless the message was written for the client (`expose: true`: shutting down, store unavailable).
 */
export class HttpError extends Error {
  override name = 'HttpError';
  readonly expose: boolean;
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options: { cause?: unknown; headers?: Record<string, string>; expose?: boolean } = {},
  ) {
    super(message, { cause: options.cause });
    this.expose = options.expose ?? status < 500;
    this.headers = options.headers ?? {};
  }
  readonly headers: Record<string, string>;
}
