import {
  type LogFields,
  type LogLevel,
  type LogRecord,
  type Logger,
  createLogger as createKitLogger,
} from '@agentrt/kit';

export type { LogFields, LogRecord, Logger } from '@agentrt/kit';

export interface LoggerOptions {
  level: LogLevel;
  sink: (line: string) => void;
  /** Also receives every record that passes the level (the OTLP log exporter). */
  onRecord?: (record: LogRecord) => void;
}

/** The kit's JSON-lines logger writing to `sink`, with `bound` on every record. */
export function createLogger({ sink, ...options }: LoggerOptions, bound: LogFields = {}): Logger {
  return createKitLogger({ ...options, write: sink, fields: bound });
}
