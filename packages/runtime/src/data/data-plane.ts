// The data plane of BedrockAgentCoreClient on the runtime's router: InvokeAgentRuntime for every
// protocol (invocation-routes.ts), the `.well-known` documents (well-known-routes.ts),
// StopRuntimeSession and InvokeAgentRuntimeCommand (session-routes.ts) and the WebSocket stream
// (websocket-route.ts). Each route module gets the same request reading (requests.ts) and session
// calls (session-calls.ts), built here once.
import { type RuntimeConfig } from '../config.js';
import { type Store } from '../control/store.js';
import { type Router } from '../http/router.js';
import { type Logger } from '../logger.js';
import { type SessionManager } from '../sessions/session-manager.js';
import { type RuntimeTelemetry } from '../telemetry/runtime-telemetry.js';
import { type Authenticator } from './auth.js';
import { registerInvocationRoutes } from './invocation-routes.js';
import { createRequests } from './requests.js';
import { createSessionCalls } from './session-calls.js';
import { registerSessionRoutes } from './session-routes.js';
import { type WebSocketGateway } from './websocket.js';
import { registerWebSocketRoute } from './websocket-route.js';
import { registerWellKnownRoutes } from './well-known-routes.js';

export { CLOUD_SESSION_HEADER, SESSION_HEADER, withSessionBaggage } from './forward-headers.js';

export interface DataPlaneDeps {
  config: Readonly<RuntimeConfig>;
  store: Store;
  sessions: SessionManager;
  auth: Authenticator;
  logger: Logger;
  /** Starts the span of a WebSocket connection (the runtime's telemetry); untraced without it. */
  startWebSocket?: RuntimeTelemetry['startWebSocket'];
}

/**
 * Registers InvokeAgentRuntime, StopRuntimeSession, GetAgentCard and InvokeAgentRuntimeCommand of
 * `BedrockAgentCoreClient` on the router; returns the WebSocket gateway for the server's upgrades.
 */
export function registerDataPlane(router: Router, deps: DataPlaneDeps): WebSocketGateway {
  const routeDeps = { ...deps, requests: createRequests(deps), calls: createSessionCalls(deps) };
  registerInvocationRoutes(router, routeDeps);
  registerWellKnownRoutes(router, routeDeps);
  registerSessionRoutes(router, routeDeps);
  return registerWebSocketRoute(router, routeDeps);
}
