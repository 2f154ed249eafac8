import type { IncomingMessage } from 'node:http';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Transform } from 'node:stream';
import { HttpError } from './http-error.js';

function decoderFor(encoding: string): Transform | undefined {
  switch (encoding) {
    case '':
    case 'identity':
      return undefined;
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      throw new HttpError(
        415,
        'unsupported_encoding',
        `Content-Encoding '${encoding}' is not supported (use gzip, deflate, br or none)`,
      );
  }
}

/**
 * Reads a request body, decompressing gzip/deflate/br as it streams and stopping as soon as the
 * *decompressed* size passes `maxBytes` (413) — a gzip bomb never gets inflated in memory.
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const encoding = String(req.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  const decoder = decoderFor(encoding);
  const declared = Number(req.headers['content-length']);
  if (!decoder && Number.isFinite(declared) && declared > maxBytes) {
    return Promise.reject(tooLarge(maxBytes));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const source = decoder ?? req;
    const fail = (error: Error): void => {
      if (settled) return;
      settled = true;
      if (decoder) {
        req.unpipe(decoder);
        decoder.destroy();
      }
      // Stop reading; the response (sent by the caller) closes the connection's leftovers.
      req.resume();
      reject(error);
    };
    source.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) fail(tooLarge(maxBytes));
      else chunks.push(chunk);
    });
    source.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(Buffer.concat(chunks, size));
    });
    source.on('error', (error) => {
      fail(
        decoder
          ? new HttpError(400, 'bad_compression', `body is not valid ${encoding} data: ${error.message}`, {
              cause: error,
            })
          : error,
      );
    });
    req.on('aborted', () => fail(new HttpError(400, 'aborted', 'request aborted by the client')));
    if (decoder) {
      req.on('error', fail);
      req.pipe(decoder);
    }
  });
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError(413, 'body_too_large', `request body exceeds ${maxBytes} bytes (after decompression)`);
}
