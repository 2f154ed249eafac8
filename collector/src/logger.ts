import { type LogMethods, createLogger } from '@agentrt/kit';

export { silentLogger } from '@agentrt/kit';

/** What the collector logs through; the library stays silent unless given one. */
export type Logger = Pick<LogMethods, 'info' | 'warn' | 'error'>;

/** The kit's JSON-lines logger writing through `write` (e.g. process.stdout), `base` on every line. */
export function createJsonLogger(write: (line: string) => void, base: Record<string, unknown> = {}): Logger {
  return createLogger({ write, fields: base });
}
