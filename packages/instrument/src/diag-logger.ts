import { type DiagLogger, DiagLogLevel, diag } from '@opentelemetry/api';
import type { DiagLevelName } from './config.js';

const PREFIX = 'agentrt-instrument:';
const MAX_DISTINCT_MESSAGES = 100;

const LEVELS: Record<DiagLevelName, DiagLogLevel> = {
  none: DiagLogLevel.NONE,
  error: DiagLogLevel.ERROR,
  warn: DiagLogLevel.WARN,
  info: DiagLogLevel.INFO,
  debug: DiagLogLevel.DEBUG,
  verbose: DiagLogLevel.VERBOSE,
  all: DiagLogLevel.ALL,
};

/** Where the launcher's own lines go; stderr by default, never through `console` (which we wrap). */
export type LineWriter = (line: string) => void;

const stderrWriter: LineWriter = (line) => {
  try {
    process.stderr.write(`${line}\n`);
  } catch {
    // stderr closed: nothing better to do, and the launcher must not throw into its host
  }
};

function describe(args: unknown[]): string {
  return args
    .map((a) => (a instanceof Error ? a.message : typeof a === 'string' ? a : safeJson(a)))
    .join(' ')
    .replace(/\s+/g, ' ')
    .slice(0, 500);
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * A diag logger that prints each distinct message once, on one stderr line prefixed
 * `agentrt-instrument:`. An unreachable collector therefore says so once instead of every batch,
 * and telemetry never fails silently.
 */
export function createOnceLogger(write: LineWriter = stderrWriter): DiagLogger & {
  warnOnce(message: string): void;
} {
  const seen = new Set<string>();
  const emit =
    (level: string) =>
    (message: string, ...args: unknown[]) => {
      const text = describe([message, ...args]);
      if (seen.has(text) || seen.size >= MAX_DISTINCT_MESSAGES) return;
      seen.add(text);
      write(`${PREFIX} ${level} ${text}`);
    };
  return {
    error: emit('error'),
    warn: emit('warn'),
    info: emit('info'),
    debug: emit('debug'),
    verbose: emit('verbose'),
    warnOnce: (message: string) => emit('warn')(message),
  };
}

/** Installs `logger` as OTel's diag logger at `level`. */
export function installDiagLogger(logger: DiagLogger, level: DiagLevelName): void {
  diag.setLogger(logger, { logLevel: LEVELS[level], suppressOverrideMessage: true });
}
