// `GET /ws`: the upgrade, with the same request context, session and span handling as an
// invocation; the connection counts as one invocation in flight until it closes.
import type { Context as KoaContext } from 'koa';
import type { WebSocket } from 'ws';
import { getAgentContextState } from './agent-context.js';
import { type AppScope, missingSessionId, otelContextOf, runIn, shuttingDown } from './app-scope.js';
import { AgentError } from './errors.js';
import { InvocationContext } from './request-context.js';
import { type WebSocketHandler, acceptWebSocket, pendingUpgrade } from './websocket.js';

/** Opens the WebSocket and hands it to `handler`; resolves once the connection has closed. */
export async function openWebSocket(
  ctx: KoaContext,
  scope: AppScope,
  handler: WebSocketHandler,
): Promise<void> {
  const upgrade = pendingUpgrade(ctx.req);
  if (!upgrade)
    throw new AgentError(
      400,
      'GET /ws is a WebSocket endpoint: send the headers Connection: Upgrade and Upgrade: websocket',
      { code: 'not_a_websocket_upgrade' },
    );
  if (scope.inFlight.draining) throw shuttingDown();
  const state = getAgentContextState(ctx);
  const sessionId = state?.sessionId;
  if (sessionId === undefined && scope.options.requireSessionId) throw missingSessionId();
  const requestContext = new InvocationContext({
    headers: ctx.req.headers,
    otelContext: otelContextOf(undefined, state),
    sessionId,
    headerAllowList: scope.headerAllowList,
  });
  const inContext = runIn(state, requestContext, () => requestContext.otelContext);
  ctx.respond = false;
  const leave = scope.inFlight.enter();
  scope.inFlight.add(requestContext);
  try {
    await acceptWebSocket(scope.wss, ctx.req, ctx.res, upgrade, (socket) =>
      serve(socket, { scope, handler, requestContext, inContext }),
    );
  } finally {
    leave();
    scope.inFlight.delete(requestContext);
  }
}

interface Connection {
  scope: AppScope;
  handler: WebSocketHandler;
  requestContext: InvocationContext;
  inContext: <T>(fn: () => T) => T;
}

/** Runs the handler on an open socket; closes it on shutdown (1001) or when the handler fails (1011). */
function serve(socket: WebSocket, { scope, handler, requestContext, inContext }: Connection): void {
  requestContext.signal.addEventListener('abort', () => socket.close(1001, 'server shutting down'));
  void inContext(() =>
    Promise.resolve()
      .then(() => handler(socket, requestContext))
      .catch((error: unknown) => {
        scope.logger.error('websocket handler failed', { error: String(error) });
        socket.close(1011, 'handler failed');
      }),
  );
}
