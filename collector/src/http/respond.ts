// Small pieces every route shares: writing an answer, reading a JSON body, reading parameters.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError, readJson as readJsonBody, sendJson as sendJsonBody } from '@agentrt/kit';

const MAX_API_BODY_BYTES = 1024 * 1024;
const JSON_UTF8 = 'application/json; charset=utf-8';

export function send(res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** A 200 JSON body produced elsewhere (a query thread) as bytes. */
export function sendBytes(res: ServerResponse, json: Uint8Array): void {
  send(res, 200, JSON_UTF8, Buffer.from(json.buffer, json.byteOffset, json.length));
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  sendJsonBody(res, status, value, { 'content-type': JSON_UTF8 });
}

/** The media type of a request, lower case without parameters ('' when there is none). */
export function mediaType(req: IncomingMessage): string {
  return String(req.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
}

/** A JSON object body (at most 1 MiB); 415 for another media type, 400 for bad JSON. */
export async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  if (mediaType(req) !== 'application/json') {
    throw new HttpError(415, 'send the request body as application/json', { code: 'unsupported_media_type' });
  }
  const parsed = await readJsonBody(req, MAX_API_BODY_BYTES, { decompress: true });
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new HttpError(400, 'body must be a JSON object', { code: 'bad_json' });
  }
  return parsed as Record<string, unknown>;
}

/** A number from a JSON body (numbers only) or a query string (numeric text); 400 names the field. */
export function optionalNumber(value: unknown, name: string, where: 'body' | 'query'): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const n = typeof value === 'string' && where === 'query' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n)) {
    throw new HttpError(400, `${name} must be a number`, { code: 'bad_request' });
  }
  return n;
}

/** `?limit=`: a whole number from 1 to `max`, `fallback` when absent. */
export function limitParam(params: URLSearchParams, fallback: number, max: number): number {
  const n = optionalNumber(params.get('limit'), 'limit', 'query') ?? fallback;
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new HttpError(400, `limit must be a whole number from 1 to ${max}`, { code: 'bad_request' });
  }
  return n;
}

/** A %-encoded path segment; malformed encoding is the client's error (400), not ours. */
export function decodePathSegment(segment: string, name: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, `${name} in the path is not valid %-encoded UTF-8`, { code: 'bad_request' });
  }
}
