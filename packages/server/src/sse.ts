import { SpanStatusCode, trace } from '@opentelemetry/api';
import type { ServerResponse } from 'node:http';
import type { Logger } from './logger.js';
import { correlationFields } from './request-context.js';

/** Options of {@link streamSse}. */
export interface SseOptions {
  /** Silence after which a `: heartbeat` comment is sent; 0 disables heartbeats. */
  heartbeatMs: number;
  /** Fires when the client goes away: iteration stops and the iterator's `return()` is called. */
  signal: AbortSignal;
  /** Extra response headers (request id, session id). */
  headers?: Readonly<Record<string, string>>;
  logger: Logger;
}

/** The `data` of the error event that ends a failed stream (Python SDK compatible fields). */
export interface StreamErrorEvent {
  error: string;
  error_type: string;
  message: string;
}

const ABORTED = Symbol('aborted');

/** True for values an entrypoint returns to stream: async iterables and generator objects. */
export function isStreamable(value: unknown): value is AsyncIterable<unknown> | Iterable<unknown> {
  if (typeof value !== 'object' || value === null) return false;
  if (typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function') return true;
  return Object.prototype.toString.call(value) === '[object Generator]';
}

/** One SSE frame: `data: <JSON>` and a blank line. JSON never contains a raw newline, so one line is enough. */
export function sseFrame(item: unknown, event?: string): string {
  return `${event ? `event: ${event}\n` : ''}data: ${toJson(item)}\n\n`;
}

function toJson(item: unknown): string {
  try {
    return JSON.stringify(item) ?? 'null';
  } catch {
    // Not JSON-serialisable (a BigInt, a cycle): send its text form rather than end the stream.
    return JSON.stringify(String(item));
  }
}

/**
 * Writes `items` to `res` as `text/event-stream`, one frame per item, each written (and so flushed)
 * as soon as it is produced. Honours back-pressure, sends heartbeat comments on silence, stops and
 * calls the iterator's `return()` when `signal` fires, and turns a failure into an `event: error`
 * frame before ending. Resolves when the stream is over; never rejects.
 */
export async function streamSse(
  res: ServerResponse,
  items: AsyncIterable<unknown> | Iterable<unknown>,
  options: SseOptions,
): Promise<void> {
  const { signal, heartbeatMs, logger } = options;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    ...options.headers,
  });
  res.flushHeaders();
  const iterator =
    Symbol.asyncIterator in items
      ? (items as AsyncIterable<unknown>)[Symbol.asyncIterator]()
      : (items as Iterable<unknown>)[Symbol.iterator]();
  const aborted = new Promise<typeof ABORTED>((resolve) => {
    if (signal.aborted) resolve(ABORTED);
    else signal.addEventListener('abort', () => resolve(ABORTED), { once: true });
  });
  const heartbeat =
    heartbeatMs > 0
      ? setTimeout(function beat() {
          if (!res.writableEnded && !res.destroyed) res.write(': heartbeat\n\n');
          heartbeat?.refresh();
        }, heartbeatMs)
      : undefined;
  heartbeat?.unref();
  try {
    for (;;) {
      const next = Promise.resolve(iterator.next());
      // If the client left, `next` may still settle later; its outcome no longer matters.
      next.catch(() => undefined);
      const step = await Promise.race([next, aborted]);
      if (step === ABORTED) return await stopped(res, iterator, signal, logger);
      if (step.done) break;
      const flushed = res.write(sseFrame(step.value));
      heartbeat?.refresh();
      if (!flushed && (await Promise.race([drained(res), aborted])) === ABORTED) {
        return await stopped(res, iterator, signal, logger);
      }
    }
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    logger.error('stream failed', {
      ...correlationFields(),
      error: e.message,
      ...(e.stack ? { stack: e.stack } : {}),
    });
    // The answer is a 200 whose stream failed: the request's span must say so (status ERROR, the
    // exception, error.type), or the trace and its error counts would show a success.
    const span = trace.getActiveSpan();
    if (span?.isRecording()) {
      span.recordException(e);
      span.setAttribute('error.type', e.name);
      span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
    }
    if (!res.destroyed) res.write(errorFrame(e));
  } finally {
    if (heartbeat) clearTimeout(heartbeat);
  }
  if (!res.destroyed) await new Promise<void>((resolve) => res.end(resolve));
}

function errorFrame(e: Error): string {
  const event: StreamErrorEvent = {
    error: e.message,
    error_type: e.name,
    message: 'An error occurred during streaming',
  };
  return sseFrame(event, 'error');
}

/**
 * Stops the iterator after the signal fired. When the client left there is nothing more to send;
 * when the server stopped the stream (drain deadline) the client gets an error event and a proper end.
 */
async function stopped(
  res: ServerResponse,
  iterator: Iterator<unknown> | AsyncIterator<unknown>,
  signal: AbortSignal,
  logger: Logger,
): Promise<void> {
  stopIterator(iterator, logger);
  if (res.destroyed || res.writableEnded) return;
  const reason: unknown = signal.reason;
  res.write(errorFrame(reason instanceof Error ? reason : new Error(String(reason))));
  await new Promise<void>((resolve) => res.end(resolve));
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

function stopIterator(iterator: Iterator<unknown> | AsyncIterator<unknown>, logger: Logger): void {
  try {
    // Not awaited: an async generator suspended in an await only returns once that await settles.
    void Promise.resolve(iterator.return?.()).catch((err: unknown) =>
      logger.debug('stream iterator failed while stopping', { error: String(err) }),
    );
  } catch (err) {
    logger.debug('stream iterator failed while stopping', { error: String(err) });
  }
}
