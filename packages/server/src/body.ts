import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { AgentError } from './errors.js';

// Content types read as JSON. The AWS SDK sends `application/octet-stream` when the caller sets no
// content type, and curl sends form-urlencoded with -d, so those are parsed as JSON too.
const JSON_LIKE =
  /^(application\/(json|octet-stream|x-www-form-urlencoded)|text\/plain|[a-z]+\/[\w.+-]*\+json)$/;

/**
 * Reads the request body as JSON, counting bytes as they arrive: a declared or actual size above
 * `maxBodyBytes` is a 413 without buffering the rest. Empty, non-UTF-8 and invalid JSON bodies are
 * 400s that say what is wrong.
 */
export async function readJsonBody(req: IncomingMessage, maxBodyBytes: number): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (type !== '' && !JSON_LIKE.test(type)) {
    throw new AgentError(415, `Unsupported Content-Type "${type}": send the payload as application/json`);
  }
  const bytes = await readBody(req, maxBodyBytes);
  if (bytes.length === 0) {
    throw new AgentError(400, 'Request body is empty: send a JSON document, e.g. {"prompt":"Hello"}', {
      code: 'empty_body',
    });
  }
  if (!isUtf8(bytes)) {
    throw new AgentError(400, 'Request body is not valid UTF-8', { code: 'invalid_encoding' });
  }
  try {
    // A UTF-8 byte order mark is allowed before the JSON text (some Windows tools write one).
    const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
    return JSON.parse(bytes.toString('utf8', bom));
  } catch (cause) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    throw new AgentError(400, `Invalid JSON in request body: ${detail}`, { code: 'invalid_json', cause });
  }
}

function tooLarge(maxBodyBytes: number): AgentError {
  return new AgentError(413, `Request body exceeds the limit of ${maxBodyBytes} bytes`, {
    code: 'payload_too_large',
    // The rest of an oversized upload is not read: close the connection after answering.
    headers: { Connection: 'close' },
  });
}

// Not @agentrt/kit's readBody: an oversized upload is paused, not drained, and answered with
// Connection: close, so a hostile client cannot keep the server reading what it will refuse.
function readBody(req: IncomingMessage, maxBodyBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBodyBytes) return Promise.reject(tooLarge(maxBodyBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBodyBytes) {
        cleanup();
        req.pause();
        reject(tooLarge(maxBodyBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (cause: Error) => {
      cleanup();
      reject(
        new AgentError(400, `Request body could not be read: ${cause.message}`, {
          code: 'body_read_failed',
          cause,
        }),
      );
    };
    const onAborted = () => onError(new Error('client aborted the upload'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}
