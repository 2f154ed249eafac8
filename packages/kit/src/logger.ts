/** The levels, lowest first. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
/** A log level name. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Structured fields attached to one log record. */
export type LogFields = Readonly<Record<string, unknown>>;

/** One record as written: `time`, `level` and `msg` first, then the bound and the call's fields. */
export interface LogRecord extends LogFields {
  readonly time: string;
  readonly level: LogLevel;
  readonly msg: string;
}

/** What a library needs of a logger. Any object with these four methods fits (pino does). */
export interface LogMethods {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

/** A logger that can bind fields to every record of a child. */
export interface Logger extends LogMethods {
  /** A logger that adds `fields` to every record (the call's own fields win). */
  child(fields: LogFields): Logger;
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Lowest level written. Default `info`. */
  level?: LogLevel;
  /** Where each line goes. Default: `process.stdout`. */
  write?: (line: string) => void;
  /** Fields on every record. */
  fields?: LogFields;
  /** Also receives every record that passes the level, as its line parses back. */
  onRecord?: (record: LogRecord) => void;
}

/** How deep an error's `cause` chain is written. */
const MAX_CAUSES = 3;

/** An Error as JSON: `name`, `message`, `code` (Node's system errors) and its `cause`. */
function errorFields(error: Error, depth = 0): Record<string, unknown> {
  const fields: Record<string, unknown> = { name: error.name, message: error.message };
  const { code } = error as { code?: unknown };
  if (typeof code === 'string' || typeof code === 'number') fields['code'] = code;
  if (error.cause === undefined) return fields;
  fields['cause'] =
    error.cause instanceof Error
      ? depth < MAX_CAUSES
        ? errorFields(error.cause, depth + 1)
        : String(error.cause)
      : error.cause;
  return fields;
}

/**
 * A JSON.stringify replacer that never throws for a value's kind: an Error is its
 * {@link errorFields}, a BigInt its decimal string, a reference back to an object that contains it
 * `"[Circular]"` (an object met twice side by side is written twice).
 */
function safeReplacer(): (this: unknown, key: string, value: unknown) => unknown {
  const ancestors: unknown[] = [];
  return function (this: unknown, _key: string, value: unknown): unknown {
    if (typeof value === 'bigint') return value.toString();
    if (typeof value !== 'object' || value === null) return value;
    while (ancestors.length > 0 && ancestors.at(-1) !== this) ancestors.pop();
    if (ancestors.includes(value)) return '[Circular]';
    const written = value instanceof Error ? errorFields(value) : value;
    ancestors.push(written);
    return written;
  };
}

/** How deep {@link plainJson} looks before it leaves a value to the replacer. */
const PLAIN_DEPTH = 4;

/**
 * Whether `value` is written by plain JSON.stringify exactly as the replacer would write it, and
 * parses back to itself (keys holding undefined aside): no Error, BigInt or `toJSON` within
 * PLAIN_DEPTH levels, and nothing deeper (a cycle always is). Worker output goes through the
 * logger line by line: the replacer, a call into JavaScript for every value, and parsing the line
 * back for `onRecord` made each line 2–3 times as costly.
 */
function plainJson(value: unknown, depth = 0): boolean {
  if (typeof value === 'bigint') return false;
  if (typeof value !== 'object' || value === null) return true;
  if (depth >= PLAIN_DEPTH || value instanceof Error) return false;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return false;
  if (Array.isArray(value)) return value.every((item) => plainJson(item, depth + 1));
  for (const key in value) if (!plainJson((value as Record<string, unknown>)[key], depth + 1)) return false;
  return true;
}

/** A record as written, and as its one JSON line. */
interface Written {
  line: string;
  /** The record itself when its line parses back to it; else undefined (parse the line). */
  record: LogRecord | undefined;
}

/**
 * One record as one JSON line. Fields the replacer cannot save (a getter or `toJSON` that throws)
 * leave the record with `time`, `level`, `msg` and `logError` naming the reason.
 */
function jsonLine(level: LogLevel, msg: string, bound: LogFields, fields: LogFields | undefined): Written {
  const time = new Date().toISOString();
  try {
    const record = { time, level, msg, ...bound, ...fields };
    // The logger's own keys win over a field of the same name, in their place at the front.
    Object.assign(record, { time, level, msg });
    if (plainJson(record)) return { line: `${JSON.stringify(record)}\n`, record };
    return { line: `${JSON.stringify(record, safeReplacer())}\n`, record: undefined };
  } catch (error) {
    const logError = `fields not written: ${error instanceof Error ? error.message : String(error)}`;
    return { line: `${JSON.stringify({ time, level, msg: String(msg), logError })}\n`, record: undefined };
  }
}

const ignore = (): void => undefined;

/**
 * A JSON-lines logger: one object per line with `time`, `level`, `msg`, the bound fields and the
 * call's fields. Levels below `level` cost one no-op call.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const min = LOG_LEVELS.indexOf(options.level ?? 'info');
  const write = options.write ?? ((line: string) => void process.stdout.write(line));
  const bound = options.fields ?? {};
  const { onRecord } = options;
  const method = (level: LogLevel) => {
    if (LOG_LEVELS.indexOf(level) < min) return ignore;
    return (msg: string, fields?: LogFields): void => {
      const { line, record } = jsonLine(level, msg, bound, fields);
      write(line);
      onRecord?.(record ?? (JSON.parse(line) as LogRecord));
    };
  };
  return {
    debug: method('debug'),
    info: method('info'),
    warn: method('warn'),
    error: method('error'),
    child: (fields) => createLogger({ ...options, fields: { ...bound, ...fields } }),
  };
}

/** A logger that writes nothing: the default of a library given none. */
export const silentLogger: Logger = {
  debug: ignore,
  info: ignore,
  warn: ignore,
  error: ignore,
  child: () => silentLogger,
};
