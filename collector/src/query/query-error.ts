import type { QueryErrorBody } from '../wire-types.js';

/** A query that cannot be parsed or run; carries the 0-based offset it points at. */
export class QueryError extends Error {
  override name = 'QueryError';
  readonly position: number;
  readonly expected: string[];
  readonly kind: QueryErrorBody['error'];
  // Plain fields, not parameter properties: the query threads load this file with Node's type
  // stripping when running from src/ (tests), which has no parameter properties.
  constructor(
    message: string,
    position: number,
    expected: string[] = [],
    kind: QueryErrorBody['error'] = 'QuerySyntaxError',
  ) {
    super(message);
    this.position = position;
    this.expected = expected;
    this.kind = kind;
  }

  /** The HTTP 400 body, with the 1-based line and column of the position in `query`. */
  toBody(query: string): QueryErrorBody {
    const before = query.slice(0, this.position);
    const line = before.split('\n').length;
    const column = this.position - (before.lastIndexOf('\n') + 1) + 1;
    const body: QueryErrorBody = {
      error: this.kind,
      message: this.message,
      position: this.position,
      line,
      column,
    };
    if (this.expected.length) body.expected = this.expected;
    return body;
  }
}

/** A query the language refused or stopped: the 400 body (404 for an unknown metric name). */
export class QueryFailure extends Error {
  override name = 'QueryFailure';
  readonly body: QueryErrorBody;
  readonly status: number;
  constructor(body: QueryErrorBody, status = 400) {
    super(body.message);
    this.body = body;
    this.status = status;
  }
}
