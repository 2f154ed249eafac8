export {
  type AgentContextOptions,
  type AgentContextState,
  TRACER_NAME,
  agentContext,
  getActiveSessionId,
  getAgentContextState,
  setRoute,
} from './agent-context.js';
export { type AgentApp, createApp } from './app.js';
export { type AgentAppOptions, type Entrypoint } from './app-options.js';
export { DEFAULT_CONFIG, type ServerConfig, readConfig } from './config.js';
export {
  AgentError,
  type AgentErrorOptions,
  type ErrorBody,
  errorMiddleware,
  toAgentError,
} from './errors.js';
export { pickForwardedHeaders } from './forwarded-headers.js';
export {
  type AsyncTaskInfo,
  HealthTracker,
  type PingHandler,
  type PingResponse,
  type PingStatus,
  type RunningTask,
} from './health.js';
export {
  type JsonLineLoggerOptions,
  type LogFields,
  type LogLevel,
  type Logger,
  createJsonLineLogger,
  diagLogger,
} from './logger.js';
export {
  type RequestContext,
  correlationFields,
  getRequestContext,
  runWithRequestContext,
} from './request-context.js';
export { type RunningServer, type ServeOptions, serve } from './serve.js';
export { type StreamErrorEvent, sseFrame } from './sse.js';
export { type WebSocketHandler } from './websocket.js';
