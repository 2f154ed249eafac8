// What a query thread (SQLite's or ClickHouse's) sends back: its answer as JSON bytes, within the
// pool's limit on their size.
import { QueryError } from './query-error.js';

const encoder = new TextEncoder();

/**
 * An answer as JSON bytes (a read that built its own bytes, an export page, as they are); a
 * QueryError naming what to narrow when they pass `maxResultBytes`.
 */
export function resultBytes(response: unknown, maxResultBytes: number, kind: 'query' | 'read'): Uint8Array {
  const json = response instanceof Uint8Array ? response : encoder.encode(JSON.stringify(response ?? null));
  if (json.length > maxResultBytes) {
    throw new QueryError(
      kind === 'read'
        ? `the answer is ${json.length} bytes, more than ${maxResultBytes}; narrow it (a smaller limit, a time range)`
        : `the result is ${json.length} bytes, more than ${maxResultBytes}; select fewer fields (not @message) or a smaller limit`,
      0,
      [],
      'QueryError',
    );
  }
  return json;
}
