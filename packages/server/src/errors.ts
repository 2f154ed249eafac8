import { SpanStatusCode, isValidTraceId, trace } from '@opentelemetry/api';
import { HttpError, type HttpErrorOptions } from '@agentrt/kit';
import type { Middleware } from 'koa';
import type { Logger } from './logger.js';

/** Options of {@link AgentError}: `code`, `expose`, `cause`, `headers` (see @agentrt/kit's HttpError). */
export type AgentErrorOptions = HttpErrorOptions;

/**
 * The one error class of the server: @agentrt/kit's HttpError under the server's name. Throw it from
 * an entrypoint to choose the status:
 * `throw new AgentError(422, 'prompt must be a string', { code: 'invalid_prompt' })`.
 */
export class AgentError extends HttpError {
  override readonly name = 'AgentError';
}

/** The JSON body of every error response. `error` holds the message, as both AWS SDKs do. */
export interface ErrorBody {
  error: string;
  code: string;
}

/**
 * Turns anything thrown into an {@link AgentError}. Errors carrying a numeric `status` or
 * `statusCode` (Koa's `ctx.throw`, http-errors) keep it; anything else is a 500 whose message is
 * shown, because an agent's own failure text is what its caller needs to see (seed section 7).
 */
export function toAgentError(err: unknown): AgentError {
  if (err instanceof AgentError) return err;
  const e = (typeof err === 'object' && err !== null ? err : {}) as {
    status?: unknown;
    statusCode?: unknown;
    message?: unknown;
    expose?: unknown;
    code?: unknown;
  };
  const status =
    typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : 500;
  const message = typeof e.message === 'string' && e.message !== '' ? e.message : String(err);
  return new AgentError(status, message, {
    cause: err,
    expose: typeof e.expose === 'boolean' ? e.expose : true,
    ...(typeof e.code === 'string' && /^[a-z][a-z0-9_]*$/.test(e.code) ? { code: e.code } : {}),
  });
}

/**
 * The single place that turns errors into responses: JSON `{"error": message, "code": code}` with
 * the error's status. 5xx details (stack) go to the log and to the active span. Once a response has
 * started (a stream), nothing more can be sent: the error is logged and the connection left to the
 * stream's own error event.
 */
export function errorMiddleware(logger: Logger): Middleware {
  return async function agentErrors(ctx, next) {
    try {
      await next();
    } catch (thrown) {
      const err = toAgentError(thrown);
      const span = trace.getActiveSpan();
      if (err.status >= 500) {
        // not when the span has ended already: the client went away and the span says so
        if (span?.isRecording()) {
          span.recordException(thrown instanceof Error ? thrown : String(thrown));
          span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
        }
        const cause = thrown instanceof Error ? thrown : undefined;
        const sessionId = (ctx.state as { agentrt?: { sessionId?: string } }).agentrt?.sessionId;
        const traceId = span?.spanContext().traceId;
        logger.error('request failed', {
          ...(sessionId !== undefined ? { sessionId } : {}),
          ...(traceId !== undefined && isValidTraceId(traceId) ? { traceId } : {}),
          status: err.status,
          path: ctx.path,
          error: err.message,
          ...(cause?.stack ? { stack: cause.stack } : {}),
        });
      } else {
        logger.debug('request rejected', { status: err.status, path: ctx.path, error: err.message });
      }
      if (ctx.headerSent || !ctx.writable) return;
      ctx.status = err.status;
      for (const [name, value] of Object.entries(err.headers)) ctx.set(name, value);
      const body: ErrorBody = { error: err.expose ? err.message : 'Internal Server Error', code: err.code };
      ctx.body = body;
    }
  };
}
