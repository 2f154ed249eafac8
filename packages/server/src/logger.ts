import { diag } from '@opentelemetry/api';
import type { LogMethods } from '@agentrt/kit';

export {
  type LogFields,
  type LogLevel,
  /** Options of {@link createJsonLineLogger}: `level` (default `info`), `write` (default stdout). */
  type LoggerOptions as JsonLineLoggerOptions,
  /**
   * A logger for services: one JSON object per line with `time`, `level`, `msg` and the fields
   * (`sessionId`, `requestId`, `traceId` where known). `serve()` uses it by default.
   */
  createLogger as createJsonLineLogger,
} from '@agentrt/kit';

/** The logger the server writes to. Any object with these four methods fits (pino does). */
export type Logger = LogMethods;

/**
 * The default logger of a library: OpenTelemetry `diag`, so nothing is written unless the host
 * application enabled a diag logger (as `@agentrt/instrument` does with `OTEL_LOG_LEVEL`).
 */
export const diagLogger: Logger = {
  debug: (msg, fields) => diag.debug(msg, ...(fields ? [fields] : [])),
  info: (msg, fields) => diag.info(msg, ...(fields ? [fields] : [])),
  warn: (msg, fields) => diag.warn(msg, ...(fields ? [fields] : [])),
  error: (msg, fields) => diag.error(msg, ...(fields ? [fields] : [])),
};
