import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';

/**
 * Answers `value` as JSON with its length, in one write. `headers` are added to (or replace)
 * `content-type: application/json`, e.g. a charset or `x-amzn-errortype`.
 */
export function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: OutgoingHttpHeaders = {},
): void {
  const text = JSON.stringify(value);
  res.writeHead(status, {
    'content-type': 'application/json',
    ...headers,
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
