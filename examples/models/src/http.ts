/**
 * The HTTP pieces the plain-Koa examples (weather, custom-agent) share: one error class, one error
 * middleware answering `{"detail": "..."}` (the seed's error shape), a size-limited JSON body
 * reader, and a quiet access log.
 */
import type { Context, Middleware } from 'koa';
import type { Logger } from './logger.js';

// Not @agentrt/kit's HttpError/readJson: examples/models, the examples' shared layer, depends on no agentrt package.
/** The examples' one HTTP error: a status, a message the client sees, optional headers. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Turns anything thrown into `{"detail": ...}`: an {@link HttpError} keeps its status and message;
 * any other failure is a 500 whose detail is the exception text (seed section 7), with the stack in
 * the log. `prefix` is put before a 500's text (the custom agent's "Agent processing failed: ").
 */
export function detailErrors(logger: Logger, prefix = ''): Middleware {
  return async function detailErrorMiddleware(ctx, next) {
    try {
      await next();
    } catch (error) {
      if (error instanceof HttpError) {
        ctx.status = error.status;
        ctx.set(error.headers);
        ctx.body = { detail: error.message };
        return;
      }
      const err = error instanceof Error ? error : new Error(String(error));
      logger.error('request failed', {
        method: ctx.method,
        path: ctx.path,
        error: err.message,
        stack: err.stack,
      });
      if (ctx.headerSent || !ctx.writable) {
        // Mid-stream: the status is gone; cut the response so the client sees it is incomplete.
        ctx.res.destroy(err);
        return;
      }
      ctx.status = 500;
      ctx.body = { detail: `${prefix}${err.message}` };
    }
  };
}

/**
 * Reads and parses a JSON request body of at most `maxBytes`: 413 beyond it, 400 for text that is
 * not JSON. Content-Type is not enforced, so `curl -d '{"prompt":"..."}'` works as typed.
 */
export async function readJsonBody(ctx: Context, maxBytes: number): Promise<unknown> {
  const declared = Number(ctx.get('content-length') || Number.NaN);
  if (declared > maxBytes) throw new HttpError(413, `Request body exceeds ${maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw new HttpError(413, `Request body exceeds ${maxBytes} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, `Invalid JSON body: ${(error as Error).message}`, {}, { cause: error });
  }
}

/** A JSON object body, or a 400 saying what was expected. */
export function requireObject(body: unknown, what: string): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpError(400, `Request body must be a JSON object ${what}`);
  }
  return body as Record<string, unknown>;
}

/** 404 for unknown paths and 405 (with Allow) for a known path with the wrong method. */
export function routeNotFound(ctx: Context, routes: Readonly<Record<string, readonly string[]>>): never {
  const allowed = routes[ctx.path];
  if (allowed) {
    throw new HttpError(405, `Method ${ctx.method} not allowed on ${ctx.path}; use ${allowed.join(', ')}`, {
      Allow: allowed.join(', '),
    });
  }
  throw new HttpError(404, `Not Found: ${ctx.method} ${ctx.path}`);
}

/** One JSON log line per request (health checks excluded), with status and duration. */
export function accessLog(logger: Logger, quietPaths: readonly string[]): Middleware {
  return async function accessLogMiddleware(ctx, next) {
    if (quietPaths.includes(ctx.path)) return next();
    const startedMs = performance.now();
    try {
      await next();
    } finally {
      const fields = {
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        durationMs: Math.round(performance.now() - startedMs),
      };
      logger.info('request', fields);
    }
  };
}
