export type {
  DiagLevelName,
  InstrumentConfig,
  InstrumentOptions,
  OtlpProtocol,
  PropagatorName,
  SamplerName,
  SignalConfig,
  SignalExporter,
} from './config.js';
export {
  DEFAULT_OTLP_ENDPOINT,
  DEFAULT_PROPAGATORS,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  readConfig,
} from './config.js';
export {
  ALWAYS_REDACTED_PATTERNS,
  CONTENT_ATTRIBUTE_PATTERNS,
  CONTENT_EVENT_PATTERNS,
  REDACTED,
  createAttributeFilter,
} from './attribute-filter.js';
export { DEFAULT_INSTRUMENTATIONS, UNTRACED_PATHS } from './instrumentations.js';
export { installExitHandlers } from './lifecycle.js';
export { type StartTelemetryOptions, type Telemetry, startTelemetry, withDeadline } from './telemetry.js';
