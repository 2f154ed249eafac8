import type { TextMapPropagator, TracerProvider } from '@opentelemetry/api';
import type { Middleware } from 'koa';
import type { PingHandler } from './health.js';
import type { Logger } from './logger.js';
import type { RequestContext } from './request-context.js';
import type { WebSocketHandler } from './websocket.js';

/**
 * The agent's code. It receives the parsed JSON payload and the request context, and returns a
 * JSON-serialisable value (or a promise of one), or an async generator / async iterable to stream
 * each item as one SSE `data:` frame.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- payloads are whatever the caller sent
export type Entrypoint<Payload = any> = (payload: Payload, context: RequestContext) => unknown;

/** Options of `createApp`. Explicit options win over environment variables. */
export interface AgentAppOptions {
  /** Where the server logs (5xx details, stream failures). Default: OpenTelemetry `diag`. */
  logger?: Logger;
  /** Largest accepted body. Default `AGENTRT_MAX_BODY_BYTES` or 100 MB. Larger bodies get 413. */
  maxBodyBytes?: number;
  /** Silence after which a stream gets a heartbeat comment (0: never). Default `AGENTRT_SSE_HEARTBEAT_MS` or 15 s. */
  heartbeatMs?: number;
  /** How a string result is sent: as a JSON string (default, like both AWS SDKs) or as `text/plain`. */
  stringResponse?: 'json' | 'text';
  /** Answer 400 when no session id is sent (the AWS TypeScript SDK's behaviour). Default false. */
  requireSessionId?: boolean;
  /** Custom `/ping` status (sync or async); undefined from it means automatic. */
  pingHandler?: PingHandler;
  /**
   * Only these request headers (case-insensitive) reach `context.headers`, plus the custom-prefix
   * headers. Default: every header except transport/browser and AWS-internal ones.
   */
  headerAllowList?: readonly string[];
  /** Propagator for incoming headers. Default: `createAgentPropagator()`. */
  propagator?: TextMapPropagator;
  /** Tracer provider for server spans. Default: the global one. */
  tracerProvider?: TracerProvider;
  /** Koa middleware run before the routes (after context extraction and error handling). */
  middleware?: readonly Middleware[];
  /**
   * Serves `GET /ws` (WebSocket) on the same port: called with each open socket and the same
   * request context, session and span handling as `/invocations`. Without it `/ws` is a 404.
   */
  websocket?: WebSocketHandler;
  /** Largest WebSocket message accepted (bigger closes with 1009). Default 64 KiB, the hosted limit. */
  maxWebSocketMessageBytes?: number;
}
