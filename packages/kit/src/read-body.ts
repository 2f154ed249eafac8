import type { IncomingMessage } from 'node:http';
import type { Readable, Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { HttpError } from './http-error.js';

/** Options of {@link readBody}. */
export interface ReadBodyOptions {
  /**
   * Decompress a gzip, deflate or br `Content-Encoding` as the body streams, the limit counting
   * the decompressed bytes (a gzip bomb is never inflated in memory); another encoding is a 415.
   * Default: false, the bytes as sent.
   */
  decompress?: boolean;
}

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
        `Content-Encoding '${encoding}' is not supported (use gzip, deflate, br or none)`,
        { code: 'unsupported_encoding' },
      );
  }
}

function tooLarge(maxBytes: number, decompressed: boolean): HttpError {
  const after = decompressed ? ' (after decompression)' : '';
  return new HttpError(413, `request body exceeds ${maxBytes} bytes${after}`, { code: 'body_too_large' });
}

function unreadable(cause?: Error): HttpError {
  const why = cause ? `request body could not be read: ${cause.message}` : 'request aborted by the client';
  return new HttpError(400, why, { code: 'aborted', cause });
}

/**
 * Collects the request (through its decoder, if any) until it ends, or fails with `tooBig()` once
 * more than `maxBytes` came. On failure the rest of the request is drained, never kept: the caller's
 * answer goes out and the connection stays usable.
 */
function collect(
  req: IncomingMessage,
  maxBytes: number,
  decoder: Transform | undefined,
  tooBig: () => HttpError,
) {
  return new Promise<Buffer>((resolve, reject) => {
    const source: Readable = decoder ?? req;
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const fail = (error: Error): void => {
      if (settled) return;
      settled = true;
      if (decoder) req.unpipe(decoder);
      decoder?.destroy();
      req.resume();
      reject(error);
    };
    source.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) fail(tooBig());
      else chunks.push(chunk);
    });
    source.on('end', () => {
      if (!settled) resolve(Buffer.concat(chunks, size));
      settled = true;
    });
    if (decoder) {
      const encoding = String(req.headers['content-encoding']).trim().toLowerCase();
      decoder.on('error', (cause: Error) =>
        fail(
          new HttpError(400, `body is not valid ${encoding} data: ${cause.message}`, {
            code: 'bad_compression',
            cause,
          }),
        ),
      );
      req.pipe(decoder);
    }
    req.on('error', (cause: Error) => fail(unreadable(cause)));
    req.on('aborted', () => fail(unreadable()));
  });
}

/**
 * Reads a request body of at most `maxBytes`. Past the limit (declared by Content-Length or
 * counted as it arrives) it fails with a 413 {@link HttpError} (`body_too_large`) naming the limit;
 * a client that goes away mid-body is a 400 (`aborted`).
 */
export function readBody(
  req: IncomingMessage,
  maxBytes: number,
  options: ReadBodyOptions = {},
): Promise<Buffer> {
  const decompress = options.decompress === true;
  const encoding = decompress
    ? String(req.headers['content-encoding'] ?? '')
        .trim()
        .toLowerCase()
    : '';
  let decoder: Transform | undefined;
  try {
    decoder = decoderFor(encoding);
  } catch (error) {
    req.resume();
    return Promise.reject(error as HttpError);
  }
  const declared = Number(req.headers['content-length']);
  if (!decoder && Number.isFinite(declared) && declared > maxBytes) {
    req.resume();
    return Promise.reject(tooLarge(maxBytes, decompress));
  }
  return collect(req, maxBytes, decoder, () => tooLarge(maxBytes, decompress));
}

/** The body as UTF-8 text; see {@link readBody}. */
export async function readText(
  req: IncomingMessage,
  maxBytes: number,
  options: ReadBodyOptions = {},
): Promise<string> {
  return (await readBody(req, maxBytes, options)).toString('utf8');
}

/**
 * The body parsed as JSON, `undefined` when it is empty or blank (the caller says whether that is
 * allowed). Text that is not JSON is a 400 {@link HttpError} (`bad_json`) with the parser's reason.
 */
export async function readJson(
  req: IncomingMessage,
  maxBytes: number,
  options: ReadBodyOptions = {},
): Promise<unknown> {
  const text = await readText(req, maxBytes, options);
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new HttpError(400, `body is not valid JSON: ${(error as Error).message}`, {
      code: 'bad_json',
      cause: error,
    });
  }
}
