import { type Span, SpanStatusCode } from '@opentelemetry/api';

/** What {@link endServerSpan} reads of an HTTP response (a `ServerResponse` has both). */
export interface ServerResponseState {
  readonly statusCode: number;
  readonly writableFinished: boolean;
}

/**
 * Ends an HTTP SERVER span the way every agentrt server span ends, whoever made it (the
 * instrument's HTTP server instrumentation, or @agentrt/server's middleware without one): the
 * response status code; ERROR for a 5xx; and when the connection closed before the response was
 * sent (the client went away, or the server destroyed the socket), `error.type=connection_closed`
 * with an ERROR status, so one query finds dropped requests in both. `statusSet`: the caller has
 * already set the status (the handler threw), which stays.
 */
export function endServerSpan(span: Span, response: ServerResponseState, statusSet = false): void {
  const status = response.statusCode;
  span.setAttribute('http.response.status_code', status);
  if (statusSet) {
    // the caller's status stands
  } else if (status >= 500) {
    span.setStatus({ code: SpanStatusCode.ERROR });
  } else if (!response.writableFinished) {
    span.setAttribute('error.type', 'connection_closed');
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'connection closed before the response was sent' });
  }
  span.end();
}
