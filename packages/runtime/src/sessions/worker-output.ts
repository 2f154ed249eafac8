/**
 * A session worker's stdout and stderr, line by line, as log records: a JSON line of a structured
 * logger (pino, bunyan, the examples' logger: `level`, `msg`/`message`, `time`, `traceId`/`spanId`,
 * more fields) keeps its severity, message, trace and span and fields; any other line is its text,
 * INFO on stdout and WARN on stderr.
 */
import type { LogLevel } from '../config.js';
import type { LogFields } from '../logger.js';

export interface WorkerLine {
  level: LogLevel;
  msg: string;
  fields: LogFields;
  /** A structured logger's record (a JSON object with a message). */
  structured: boolean;
}

const LEVEL_NAMES: Record<string, LogLevel> = {
  trace: 'debug',
  debug: 'debug',
  info: 'info',
  notice: 'info',
  warn: 'warn',
  warning: 'warn',
  error: 'error',
  err: 'error',
  fatal: 'error',
  critical: 'error',
  crit: 'error',
};

/** A logger's level: a name, or pino's/bunyan's numbers (10 trace … 60 fatal). */
function levelOf(value: unknown): LogLevel | undefined {
  if (typeof value === 'string') return LEVEL_NAMES[value.toLowerCase()];
  if (typeof value !== 'number') return undefined;
  return value >= 50 ? 'error' : value >= 40 ? 'warn' : value >= 30 ? 'info' : 'debug';
}

const HEX_ID = /^[0-9a-f]+$/i;
/** Keys of a record this module reads itself; the rest become the record's fields. */
const OWN_KEYS = new Set([
  'level',
  'msg',
  'message',
  'time',
  'timestamp',
  'trace_id',
  'span_id',
  'traceId',
  'spanId',
]);

function idOf(value: unknown, length: number): string | undefined {
  return typeof value === 'string' && value.length === length && HEX_ID.test(value)
    ? value.toLowerCase()
    : undefined;
}

function parseJsonObject(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined; // text that starts with a brace
  }
}

/** One line of a worker's output as a log record. */
export function parseWorkerLine(line: string, stream: 'stdout' | 'stderr'): WorkerLine {
  const plain: WorkerLine = {
    level: stream === 'stderr' ? 'warn' : 'info',
    msg: line,
    fields: { stream },
    structured: false,
  };
  const record = parseJsonObject(line.trim());
  const msg = record?.['msg'] ?? record?.['message'];
  if (!record || typeof msg !== 'string') return plain;
  const fields: Record<string, unknown> = { stream };
  for (const [key, value] of Object.entries(record)) if (!OWN_KEYS.has(key)) fields[key] = value;
  const traceId = idOf(record['traceId'] ?? record['trace_id'], 32);
  const spanId = idOf(record['spanId'] ?? record['span_id'], 16);
  if (traceId) fields['traceId'] = traceId;
  if (traceId && spanId) fields['spanId'] = spanId;
  return { level: levelOf(record['level']) ?? plain.level, msg, fields, structured: true };
}

/**
 * Whether @agentrt/instrument, preloaded into a worker, exports a line of its output itself: a
 * structured logger's record (the logger emits it through the OpenTelemetry logs API) and stdout
 * (console.log/info/debug, which its console bridge exports). Plain stderr is left to the runtime:
 * console.warn/error reach it twice, but a crash's stack trace, which no console call writes, once.
 */
export function exportedByInstrument(line: WorkerLine, stream: 'stdout' | 'stderr'): boolean {
  return line.structured || stream === 'stdout';
}

/**
 * Set on a worker line's log record when the worker exports that record itself (a structured
 * logger's line of a worker running the runtime's @agentrt/instrument preload): the runtime writes
 * it to its own log but does not export it a second time.
 */
export const EXPORTED_BY_AGENT = 'exportedByAgent';
