// InvokeAgentRuntimeWithWebSocketStream's side of the data plane: the WebSocket gateway
// (websocket.ts) admitted by the same rules as every invocation — runtime and version resolved,
// caller authenticated, a new session only on a runnable version — and its sessions acquired as
// invocations acquire theirs. A plain GET of `/ws` (no upgrade) is a 400 saying how to
// upgrade.
import { type Router } from '../http/router.js';
import { type RuntimeTelemetry } from '../telemetry/runtime-telemetry.js';
import { forwardHeaders } from './forward-headers.js';
import { assertRunnable } from './requests.js';
import { type DataRouteDeps } from './session-calls.js';
import { type WebSocketGateway, createWebSocketGateway, notAnUpgrade } from './websocket.js';

export function registerWebSocketRoute(
  router: Router,
  deps: DataRouteDeps & { startWebSocket?: RuntimeTelemetry['startWebSocket'] },
): WebSocketGateway {
  const { config, sessions, logger, requests, calls } = deps;
  router.add('GET', '/runtimes/:runtime/ws', (ctx) => {
    requests.resolveRuntime(ctx);
    throw notAnUpgrade();
  });
  return createWebSocketGateway({
    config,
    sessions,
    logger,
    ...(deps.startWebSocket ? { startWebSocket: deps.startWebSocket } : {}),
    async admit(parts) {
      const target = await requests.admit(parts);
      const sessionId = requests.sessionIdOf(parts.req, false);
      parts.operation.setSession(sessionId);
      if (!sessions.get(target.runtime.id, sessionId)) assertRunnable(target);
      return { runtimeId: target.runtime.id, version: target.version, sessionId };
    },
    async acquire(parts, sessionId) {
      const { session, pinned } = await calls.acquire(parts.operation, requests.resolve(parts), sessionId);
      return { session, version: pinned };
    },
    forwardHeaders(parts, version, sessionId) {
      const headers = forwardHeaders(parts, version, sessionId, parts.requestId, 0);
      delete headers['content-type'];
      delete headers['content-length'];
      return headers;
    },
  });
}
