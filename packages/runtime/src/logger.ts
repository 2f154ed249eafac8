import { type LogLevel } from './config.js';

/** Fields attached to a log line; `sessionId` and `runtimeId` tag worker output. */
export type LogFields = Record<string, unknown>;

export interface LogRecord extends LogFields {
  time: string;
  level: LogLevel;
  msg: string;
}

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface LoggerOptions {
  level: LogLevel;
  sink: (line: string) => void;
  /** Also receives every record that passes the level (the OTLP log exporter). */
  onRecord?: (record: LogRecord) => void;
}

/** A JSON-lines logger: one object per line with `time`, `level`, `msg` and the bound fields. */
export function createLogger(options: LoggerOptions, bound: LogFields = {}): Logger {
  const write = (level: LogLevel, msg: string, fields?: LogFields): void => {
    if (ORDER[level] < ORDER[options.level]) return;
    const record: LogRecord = { time: new Date().toISOString(), level, msg, ...bound, ...fields };
    options.sink(`${JSON.stringify(record)}\n`);
    options.onRecord?.(record);
  };
  return {
    debug: (msg, fields) => write('debug', msg, fields),
    info: (msg, fields) => write('info', msg, fields),
    warn: (msg, fields) => write('warn', msg, fields),
    error: (msg, fields) => write('error', msg, fields),
    child: (fields) => createLogger(options, { ...bound, ...fields }),
  };
}
