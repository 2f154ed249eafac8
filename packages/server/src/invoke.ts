// `POST /invocations`: the payload, the session, the entrypoint run in the request's context, and
// its result answered as JSON, text or bytes, or streamed as server-sent events.
import { type Context as OtelContext, context, propagation } from '@opentelemetry/api';
import {
  CLOUD_REQUEST_ID_HEADER,
  CLOUD_SESSION_ID_HEADER,
  SESSION_ID_BAGGAGE_KEY,
  isValidSessionId,
} from '@agentrt/propagation';
import type { Context as KoaContext } from 'koa';
import { type AgentContextState, getAgentContextState } from './agent-context.js';
import { type AppScope, missingSessionId, otelContextOf, runIn, shuttingDown } from './app-scope.js';
import { readJsonBody } from './body.js';
import { AgentError } from './errors.js';
import { InvocationContext } from './request-context.js';
import { isStreamable, streamSse } from './sse.js';

/** Answers one invocation; a client that disconnects aborts it. */
export async function invoke(ctx: KoaContext, scope: AppScope): Promise<void> {
  if (scope.inFlight.draining) throw shuttingDown();
  const leave = scope.inFlight.enter();
  let invocation: InvocationContext | undefined;
  let disconnected = false;
  const onClose = () => {
    if (ctx.res.writableFinished) return;
    disconnected = true;
    invocation?.abort(new Error('client disconnected'));
  };
  ctx.res.once('close', onClose);
  try {
    const payload = await readJsonBody(ctx.req, scope.maxBodyBytes);
    const state = getAgentContextState(ctx);
    const { sessionId, bodyContext } = sessionOf(payload, state);
    const otelContext = otelContextOf(bodyContext, state);
    if (sessionId === undefined && scope.options.requireSessionId) throw missingSessionId();
    const requestContext = (invocation = new InvocationContext({
      headers: ctx.req.headers,
      otelContext,
      sessionId,
      headerAllowList: scope.headerAllowList,
    }));
    scope.inFlight.add(invocation);
    if (disconnected) invocation.abort(new Error('client disconnected'));
    const inContext = runIn(state, requestContext, otelContext);
    const result: unknown = await inContext(() => scope.entrypoint(payload, requestContext));
    // Awaited only when streaming: an answer at once adds no turn of the event loop.
    const streaming = respond(ctx, scope, { result, requestContext, sessionId, inContext });
    if (streaming) await streaming;
  } finally {
    leave();
    ctx.res.off('close', onClose);
    if (invocation) scope.inFlight.delete(invocation);
  }
}

/** The header's session id, else the body's: bridged into baggage and the span like the header's. */
function sessionOf(
  payload: unknown,
  state: AgentContextState | undefined,
): { sessionId: string | undefined; bodyContext: OtelContext | undefined } {
  const sessionId = state?.sessionId;
  const bodySession = (payload as { sessionId?: unknown } | null)?.sessionId;
  // The AWS TypeScript SDK also accepts the session id in the body; bridge it the same way.
  if (sessionId !== undefined || !isValidSessionId(bodySession)) return { sessionId, bodyContext: undefined };
  const base = state?.otelContext ?? context.active();
  const baggage = propagation.getBaggage(base) ?? propagation.createBaggage();
  const bodyContext = propagation.setBaggage(
    base,
    baggage.setEntry(SESSION_ID_BAGGAGE_KEY, { value: bodySession }),
  );
  if (state?.span.isRecording()) state.span.setAttribute(SESSION_ID_BAGGAGE_KEY, bodySession);
  return { sessionId: bodySession, bodyContext };
}

interface Outcome {
  result: unknown;
  requestContext: InvocationContext;
  sessionId: string | undefined;
  inContext: <T>(fn: () => T) => T;
}

/** Streams a streamable result as server-sent events (the stream's promise); answers anything else at once. */
function respond(ctx: KoaContext, scope: AppScope, outcome: Outcome): Promise<void> | undefined {
  const { result, requestContext, inContext } = outcome;
  const headers = responseHeaders(requestContext, outcome.sessionId);
  if (!isStreamable(result)) {
    ctx.set(headers);
    sendResult(ctx, result, scope.options.stringResponse ?? 'json');
    return undefined;
  }
  ctx.respond = false;
  if (scope.inFlight.draining) headers.connection = 'close';
  return inContext(() =>
    streamSse(ctx.res, result, {
      heartbeatMs: scope.heartbeatMs,
      signal: requestContext.signal,
      headers,
      logger: scope.logger,
    }),
  );
}

function responseHeaders(
  requestContext: InvocationContext,
  sessionId: string | undefined,
): Record<string, string> {
  // Echo the request id when one was sent or the entrypoint used it (no UUID is made otherwise).
  const requestId = requestContext.sentRequestId ?? requestContext.generatedRequestId;
  const headers: Record<string, string> = {};
  if (requestId !== undefined) headers[CLOUD_REQUEST_ID_HEADER] = requestId;
  if (sessionId !== undefined) headers[CLOUD_SESSION_ID_HEADER] = sessionId;
  return headers;
}

function sendResult(ctx: KoaContext, result: unknown, strings: 'json' | 'text'): void {
  if (typeof result === 'string' && strings === 'text') {
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = result;
    return;
  }
  if (result instanceof Uint8Array) {
    ctx.type = 'application/octet-stream';
    ctx.body = Buffer.from(result.buffer, result.byteOffset, result.byteLength);
    return;
  }
  let json: string;
  try {
    json = JSON.stringify(result) ?? 'null';
  } catch (cause) {
    throw new AgentError(500, `Entrypoint result is not JSON-serialisable: ${(cause as Error).message}`, {
      cause,
      expose: true,
    });
  }
  ctx.set('Content-Type', 'application/json; charset=utf-8'); // set directly: no MIME lookup
  ctx.body = json;
}
