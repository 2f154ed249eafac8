import type { QueryErrorBody } from '../wire-types.js';

/** A query that cannot be parsed or run; carries the 0-based offset it points at. */
export class QueryError extends Error {
  override name = 'QueryError';
  constructor(
    message: string,
    readonly position: number,
    readonly expected: string[] = [],
    readonly kind: QueryErrorBody['error'] = 'QuerySyntaxError',
  ) {
    super(message);
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
