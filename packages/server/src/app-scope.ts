// What the routes of one app share (its options, logger, health, what is in flight), and the pieces
// that `POST /invocations` and `GET /ws` both use: the same refusals, the same request context.
import { type Context as OtelContext, context } from '@opentelemetry/api';
import { CLOUD_SESSION_ID_HEADER } from '@agentrt/propagation';
import type { AgentContextState } from './agent-context.js';
import type { AgentAppOptions, Entrypoint } from './app-options.js';
import { readConfig } from './config.js';
import { AgentError } from './errors.js';
import { HealthTracker } from './health.js';
import { type InFlight, createInFlight } from './in-flight.js';
import { type Logger, diagLogger } from './logger.js';
import { type InvocationContext, runWithRequestContext } from './request-context.js';
import { createWebSocketServer } from './websocket.js';

export interface AppScope {
  readonly entrypoint: Entrypoint;
  /** Read per request where it was before (`requireSessionId`, `stringResponse`, `websocket`). */
  readonly options: AgentAppOptions;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
  readonly heartbeatMs: number;
  readonly headerAllowList: Set<string> | undefined;
  readonly health: HealthTracker;
  readonly inFlight: InFlight;
  readonly wss: ReturnType<typeof createWebSocketServer>;
}

/** The scope of an app: explicit options, then the environment (`AGENTRT_*`), then defaults. */
export function createAppScope(entrypoint: Entrypoint, options: AgentAppOptions): AppScope {
  const logger = options.logger ?? diagLogger;
  const config = readConfig(process.env, logger.warn);
  const health = new HealthTracker(options.pingHandler ? { pingHandler: options.pingHandler } : {});
  return {
    entrypoint,
    options,
    logger,
    maxBodyBytes: options.maxBodyBytes ?? config.maxBodyBytes,
    heartbeatMs: options.heartbeatMs ?? config.heartbeatMs,
    headerAllowList: options.headerAllowList
      ? new Set(options.headerAllowList.map((h) => h.toLowerCase()))
      : undefined,
    health,
    inFlight: createInFlight(health),
    wss: createWebSocketServer(options.maxWebSocketMessageBytes ?? 64 * 1024),
  };
}

/** New invocations and WebSockets while the app drains. */
export function shuttingDown(): AgentError {
  return new AgentError(503, 'Server is shutting down', { headers: { 'Retry-After': '1' } });
}

/** No session id with `requireSessionId`. */
export function missingSessionId(): AgentError {
  return new AgentError(400, `Missing session id: send the ${CLOUD_SESSION_ID_HEADER} header`, {
    code: 'missing_session_id',
  });
}

/** Runs the agent's code with its request context, and its OpenTelemetry context active. */
export function runIn(
  state: AgentContextState | undefined,
  requestContext: InvocationContext,
  otelContext: () => OtelContext,
): <T>(fn: () => T) => T {
  // Without an OpenTelemetry SDK there is no context manager, so activating a context would do
  // nothing but cost the extraction.
  return state?.telemetry === false
    ? <T>(fn: () => T): T => runWithRequestContext(requestContext, fn)
    : <T>(fn: () => T): T => context.with(otelContext(), () => runWithRequestContext(requestContext, fn));
}

/**
 * The OpenTelemetry context of one invocation, read when first asked for. Built here rather than
 * as a closure inside the request handler, which would share that handler's scope and so keep the
 * Koa context, request and response reachable from the request context for as long as anything
 * the entrypoint started (a timer, say) holds on to it.
 */
export function otelContextOf(
  bodyContext: OtelContext | undefined,
  state: AgentContextState | undefined,
): () => OtelContext {
  return () => bodyContext ?? state?.otelContext ?? context.active();
}
