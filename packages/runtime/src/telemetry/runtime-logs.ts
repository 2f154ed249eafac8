// The runtime's log records as OTLP log records, each with the trace of the call it belongs to: the
// span a worker's own line names, else the call in flight of its request, else of its session.
import { type SpanContext, ROOT_CONTEXT, TraceFlags, trace } from '@opentelemetry/api';
import { type AnyValueMap, type Logger as OtelLogger, SeverityNumber } from '@opentelemetry/api-logs';
import { type LogRecord } from '../logger.js';
import { EXPORTED_BY_AGENT } from '../sessions/worker-output.js';

const SEVERITY: Record<string, SeverityNumber> = {
  debug: SeverityNumber.DEBUG,
  info: SeverityNumber.INFO,
  warn: SeverityNumber.WARN,
  error: SeverityNumber.ERROR,
};

/** A log record's fields as OTLP attributes: the session and runtime under their semantic names. */
function logAttributes(fields: Record<string, unknown>, skip: readonly string[]): AnyValueMap {
  const attributes: AnyValueMap = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined || skip.includes(key)) continue;
    const name = key === 'sessionId' ? 'session.id' : key === 'runtimeArn' ? 'cloud.resource_id' : key;
    attributes[name] =
      typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
        ? value
        : JSON.stringify(value);
  }
  return attributes;
}

/** The trace and span a worker's own log line names (`traceId`, `spanId`), when it names both. */
function loggedSpanContext(fields: Record<string, unknown>): SpanContext | undefined {
  const { traceId, spanId } = fields;
  if (typeof traceId !== 'string' || typeof spanId !== 'string') return undefined;
  return { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true };
}

/** The calls in flight, by request id and by session id: the trace a log record belongs to. */
export interface CallsInFlight {
  byRequest: Map<string, SpanContext>;
  bySession: Map<string, SpanContext>;
}

/** Exports one runtime log record (not one its worker exported itself) through `otelLogger`. */
export function createLogEmitter(otelLogger: OtelLogger, { byRequest, bySession }: CallsInFlight) {
  return (record: LogRecord): void => {
    if (record[EXPORTED_BY_AGENT] === true) return; // the worker exported it itself
    const { time, level, msg, ...fields } = record;
    const logged = loggedSpanContext(fields);
    const attributes = logAttributes(fields, logged ? ['traceId', 'spanId'] : []);
    const requestId = typeof fields.requestId === 'string' ? fields.requestId : undefined;
    const sessionId = typeof fields.sessionId === 'string' ? fields.sessionId : undefined;
    const spanContext =
      logged ??
      (requestId !== undefined ? byRequest.get(requestId) : undefined) ??
      (sessionId !== undefined ? bySession.get(sessionId) : undefined);
    otelLogger.emit({
      timestamp: new Date(time),
      severityNumber: SEVERITY[level] ?? SeverityNumber.INFO,
      severityText: level.toUpperCase(),
      body: msg,
      attributes,
      ...(spanContext ? { context: trace.setSpanContext(ROOT_CONTEXT, spanContext) } : {}),
    });
  };
}
