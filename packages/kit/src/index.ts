// The small pieces agentrt's packages, tests and benchmarks share, one implementation each.
export { freePort } from './free-port.js';
export { HttpError, type HttpErrorOptions } from './http-error.js';
export {
  LOG_LEVELS,
  type LogFields,
  type LogLevel,
  type LogMethods,
  type LogRecord,
  type Logger,
  type LoggerOptions,
  createLogger,
  silentLogger,
} from './logger.js';
export { type ReadBodyOptions, readBody, readJson, readText } from './read-body.js';
export { sendJson } from './send-json.js';
