import { diag } from '@opentelemetry/api';

/** Structured fields attached to one log record. */
export type LogFields = Readonly<Record<string, unknown>>;

/** The logger the server writes to. Any object with these four methods fits (pino does). */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;
/** A log level name. */
export type LogLevel = (typeof LEVELS)[number];

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

/** Options of {@link createJsonLineLogger}. */
export interface JsonLineLoggerOptions {
  /** Lowest level written. Default `info`. */
  level?: LogLevel;
  /** Where each line goes. Default: `process.stdout`. */
  write?: (line: string) => void;
}

/**
 * A logger for services: one JSON object per line with `time`, `level`, `msg` and the fields
 * (`sessionId`, `requestId`, `traceId` where known). `serve()` uses it by default.
 */
export function createJsonLineLogger(options: JsonLineLoggerOptions = {}): Logger {
  const min = LEVELS.indexOf(options.level ?? 'info');
  const write = options.write ?? ((line: string) => void process.stdout.write(line));
  const make =
    (level: LogLevel) =>
    (msg: string, fields?: LogFields): void => {
      if (LEVELS.indexOf(level) < min) return;
      write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`);
    };
  return { debug: make('debug'), info: make('info'), warn: make('warn'), error: make('error') };
}
