import { format } from 'node:util';
import { context } from '@opentelemetry/api';
import { type Logger, SeverityNumber } from '@opentelemetry/api-logs';

type ConsoleMethod = 'debug' | 'log' | 'info' | 'warn' | 'error';

const SEVERITY: Record<ConsoleMethod, [SeverityNumber, string]> = {
  debug: [SeverityNumber.DEBUG, 'DEBUG'],
  log: [SeverityNumber.INFO, 'INFO'],
  info: [SeverityNumber.INFO, 'INFO'],
  warn: [SeverityNumber.WARN, 'WARN'],
  error: [SeverityNumber.ERROR, 'ERROR'],
};

/**
 * Wraps `console.debug/log/info/warn/error` so every call also becomes an OTLP log record in the
 * active context (so it carries the current trace and span ids). The console output itself is
 * unchanged: the original method runs first, with the original arguments. Returns an undo function.
 */
export function bridgeConsole(logger: Logger, target: Console = console): () => void {
  const originals = new Map<ConsoleMethod, (...args: unknown[]) => void>();
  let emitting = false;
  for (const method of Object.keys(SEVERITY) as ConsoleMethod[]) {
    const original = target[method] as (...args: unknown[]) => void;
    if (typeof original !== 'function') continue;
    originals.set(method, original);
    const [severityNumber, severityText] = SEVERITY[method];
    const wrapped = function (this: unknown, ...args: unknown[]): void {
      original.apply(this, args);
      // An exporter or diag message logged from inside emit must not recurse into emit.
      if (emitting) return;
      emitting = true;
      try {
        logger.emit({
          severityNumber,
          severityText,
          body: format(...args),
          attributes: { 'log.source': 'console' },
          context: context.active(),
        });
      } catch {
        // telemetry must never break the app's logging
      } finally {
        emitting = false;
      }
    };
    target[method] = wrapped as Console[ConsoleMethod];
  }
  return () => {
    for (const [method, original] of originals) target[method] = original as Console[ConsoleMethod];
  };
}
