import { type IncomingMessage, type Server, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpError } from './http-error.js';
import { type ReadBodyOptions, readBody, readJson } from './read-body.js';
import { sendJson } from './send-json.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A real server whose route reads the body with `read` and answers what it got, or the HttpError. */
async function serve(read: (req: IncomingMessage) => Promise<unknown>): Promise<string> {
  server = createServer((req, res) => {
    read(req).then(
      (body) => sendJson(res, 200, { body: Buffer.isBuffer(body) ? body.toString('base64') : body }),
      (error: unknown) =>
        error instanceof HttpError
          ? sendJson(res, error.status, { error: error.message, code: error.code })
          : sendJson(res, 599, { error: String(error) }),
    );
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function post(url: string, body: Buffer | string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', body, headers });
  return {
    status: res.status,
    json: (await res.json()) as { body?: unknown; error?: string; code?: string },
  };
}

const rawBody = (max: number, options?: ReadBodyOptions) => (req: IncomingMessage) =>
  readBody(req, max, options);

describe('readBody', () => {
  it('returns the bytes as sent, up to the limit exactly', async () => {
    const url = await serve(rawBody(1024));
    const bytes = Buffer.alloc(1024, 7);
    const { status, json } = await post(url, bytes);
    expect(status).toBe(200);
    expect(Buffer.from(json.body as string, 'base64').equals(bytes)).toBe(true);
  });

  it('refuses a declared Content-Length over the limit with a 413 naming the limit', async () => {
    const url = await serve(rawBody(1000));
    const { status, json } = await post(url, Buffer.alloc(1001));
    expect(status).toBe(413);
    expect(json).toEqual({ error: 'request body exceeds 1000 bytes', code: 'body_too_large' });
  });

  it('counts a chunked body as it arrives and answers 413 while the client is still sending', async () => {
    const url = await serve(rawBody(64 * 1024));
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(url, { method: 'POST' }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', reject);
      // 1 MiB in 16 KiB chunks, no Content-Length: only counting can stop it.
      let sent = 0;
      const more = (): void => {
        while (sent < 64 && req.write(Buffer.alloc(16 * 1024))) sent++;
        if (sent < 64) req.once('drain', more);
        else req.end();
      };
      more();
    });
    expect(status).toBe(413);
  });

  it('leaves a compressed body as sent unless asked to decompress it', async () => {
    const url = await serve(rawBody(1024));
    const gz = gzipSync('{"a":1}');
    const { json } = await post(url, gz, { 'content-encoding': 'gzip' });
    expect(Buffer.from(json.body as string, 'base64').equals(gz)).toBe(true);
  });

  it('decompresses gzip and br, and counts the limit after decompression (a gzip bomb is a 413)', async () => {
    const url = await serve(rawBody(10_000, { decompress: true }));
    const ok = await post(url, brotliCompressSync('hello'), { 'content-encoding': 'br' });
    expect(Buffer.from(ok.json.body as string, 'base64').toString()).toBe('hello');
    const bomb = gzipSync(Buffer.alloc(5_000_000)); // about 5 KB on the wire
    expect(bomb.length).toBeLessThan(10_000);
    const refused = await post(url, bomb, { 'content-encoding': 'gzip' });
    expect(refused.status).toBe(413);
    expect(refused.json.error).toBe('request body exceeds 10000 bytes (after decompression)');
  });

  it('answers 400 for bytes that are not the declared encoding, 415 for an unknown encoding', async () => {
    const url = await serve(rawBody(10_000, { decompress: true }));
    const bad = await post(url, 'not gzip at all', { 'content-encoding': 'gzip' });
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe('bad_compression');
    expect(bad.json.error).toMatch(/^body is not valid gzip data: /);
    const unknown = await post(url, 'x', { 'content-encoding': 'zstd' });
    expect(unknown.status).toBe(415);
    expect(unknown.json).toEqual({
      error: "Content-Encoding 'zstd' is not supported (use gzip, deflate, br or none)",
      code: 'unsupported_encoding',
    });
  });

  it('fails with a 400 when the client goes away mid-body', async () => {
    let seen: unknown;
    const failed = new Promise<void>((resolve) => {
      void serve((req) =>
        readBody(req, 1_000_000).catch((error: unknown) => {
          seen = error;
          resolve();
          throw error;
        }),
      ).then((url) => {
        const req = request(url, { method: 'POST', headers: { 'content-length': '1000' } });
        req.on('error', () => undefined); // destroyed on purpose
        req.write(Buffer.alloc(100), () => setTimeout(() => req.destroy(), 50));
      });
    });
    await failed;
    expect(seen).toBeInstanceOf(HttpError);
    expect((seen as HttpError).status).toBe(400);
    expect((seen as HttpError).code).toBe('aborted');
  });
});

describe('readJson', () => {
  const json = (req: IncomingMessage) => readJson(req, 1024);

  it('parses a JSON body and returns undefined for an empty or blank one', async () => {
    const url = await serve(json);
    expect((await post(url, '{"prompt":"hi"}')).json.body).toEqual({ prompt: 'hi' });
    expect((await post(url, '  \n')).json).toEqual({});
  });

  it('answers 400 bad_json with the reason for malformed JSON', async () => {
    const url = await serve(json);
    const { status, json: answer } = await post(url, '{"prompt":');
    expect(status).toBe(400);
    expect(answer.code).toBe('bad_json');
    expect(answer.error).toMatch(/^body is not valid JSON: .+/);
  });

  it('answers 413 for an oversized JSON body before parsing it', async () => {
    const url = await serve(json);
    const { status, json: answer } = await post(url, JSON.stringify({ text: 'x'.repeat(2000) }));
    expect(status).toBe(413);
    expect(answer.error).toBe('request body exceeds 1024 bytes');
  });
});

describe('HttpError', () => {
  it('derives the code and exposure from the status, and keeps a status only in 400–599', () => {
    const notFound = new HttpError(404, 'no such trace');
    expect([notFound.status, notFound.code, notFound.expose, notFound.name]).toEqual([
      404,
      'not_found',
      true,
      'HttpError',
    ]);
    const odd = new HttpError(200, 'not an error status');
    expect([odd.status, odd.code, odd.expose]).toEqual([500, 'internal_error', false]);
    const shown = new HttpError(503, 'shutting down', {
      code: 'shutting_down',
      expose: true,
      headers: { 'retry-after': '5' },
    });
    expect([shown.code, shown.expose, shown.headers]).toEqual([
      'shutting_down',
      true,
      { 'retry-after': '5' },
    ]);
  });
});
