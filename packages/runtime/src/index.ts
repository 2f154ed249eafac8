export { createRuntimeServer } from './server.js';
export type { RuntimeServer } from './server.js';
export { resolveRuntimeConfig, DEFAULT_PORT } from './config.js';
export type { RuntimeServerOptions, RuntimeConfig, IsolationSetting, LogLevel } from './config.js';
export type { Isolation, IsolationMode, NetworkMode } from './sessions/isolation.js';
export { detectIsolation } from './sessions/isolation.js';
export type { Session, SessionState } from './sessions/session-manager.js';
export { RuntimeApiError } from './errors.js';
export type { ErrorType } from './errors.js';
export { SESSION_HEADER, CLOUD_SESSION_HEADER } from './data/data-plane.js';
export {
  createRuntimeClient,
  decodeCommandStream,
  RuntimeClientRequestError,
  DEFAULT_ROLE_ARN,
} from './client.js';
export type {
  RuntimeClient,
  RuntimeSummary,
  RuntimeDetail,
  RuntimeSpec,
  InvokeOptions,
  InvokeResult,
  CommandChunk,
  RuntimeEndpoint,
  ActiveSession,
} from './client.js';
