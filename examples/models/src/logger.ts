import { context, trace } from '@opentelemetry/api';
import { SeverityNumber, logs } from '@opentelemetry/api-logs';
import { sessionIdFromContext } from './genai-telemetry.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
}

export interface LoggerOptions {
  /** Logger name (`logger` field and the OTel instrumentation scope). */
  readonly name: string;
  /** Lowest level written (default info). */
  readonly level?: LogLevel;
  /** Where JSON lines go; a service passes `process.stdout`. */
  readonly write: (line: string) => void;
  readonly fields?: LogFields;
}

const ORDER: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };
const SEVERITY: Record<LogLevel, SeverityNumber> = {
  debug: SeverityNumber.DEBUG,
  info: SeverityNumber.INFO,
  warn: SeverityNumber.WARN,
  error: SeverityNumber.ERROR,
};

function toAttribute(value: unknown): string | number | boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    ? value
    : JSON.stringify(value);
}

/**
 * JSON-line logger for the example services: `time`, `level`, `msg`, `logger`, plus `traceId`,
 * `spanId` and `sessionId` from the active OpenTelemetry context. Each line is also emitted as an
 * OTel log record, which the SDK exports as OTLP when `@agentrt/instrument` is loaded (a no-op
 * otherwise).
 */
export function createLogger(options: LoggerOptions): Logger {
  const min = ORDER[options.level ?? 'info'];
  const otel = logs.getLogger(options.name);
  const base = options.fields ?? {};
  const emit = (level: LogLevel, msg: string, fields: LogFields | undefined): void => {
    if (ORDER[level] < min) return;
    const active = context.active();
    const spanContext = trace.getSpanContext(active);
    const sessionId = sessionIdFromContext(active);
    const line: Record<string, unknown> = {
      time: new Date().toISOString(),
      level,
      msg,
      logger: options.name,
      ...base,
      ...fields,
    };
    if (sessionId && line.sessionId === undefined) line.sessionId = sessionId;
    if (spanContext && trace.isSpanContextValid(spanContext)) {
      line.traceId = spanContext.traceId;
      line.spanId = spanContext.spanId;
    }
    options.write(`${JSON.stringify(line)}\n`);
    const attributes: Record<string, string | number | boolean> = {};
    for (const [key, value] of Object.entries({ ...base, ...fields })) {
      if (value !== undefined) attributes[key] = toAttribute(value);
    }
    if (sessionId) attributes['session.id'] = sessionId;
    otel.emit({
      severityNumber: SEVERITY[level],
      severityText: level.toUpperCase(),
      body: msg,
      attributes,
      context: active,
    });
  };
  return {
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
    child: (fields) => createLogger({ ...options, fields: { ...base, ...fields } }),
  };
}

/** `AGENTRT_LOG_LEVEL`-style parsing; unknown values fall back to info. */
export function parseLogLevel(value: string | undefined): LogLevel {
  const lower = value?.trim().toLowerCase();
  return lower === 'debug' || lower === 'info' || lower === 'warn' || lower === 'error' ? lower : 'info';
}
