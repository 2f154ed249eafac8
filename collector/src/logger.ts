/** A structured logger: services write JSON lines; the library stays silent unless given one. */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/** JSON-line logger writing through `write` (e.g. process.stdout). */
export function createJsonLogger(write: (line: string) => void, base: Record<string, unknown> = {}): Logger {
  const log =
    (level: string) =>
    (msg: string, fields: Record<string, unknown> = {}) => {
      const line = { time: new Date().toISOString(), level, msg, ...base, ...fields };
      write(
        `${JSON.stringify(line, (_k, v: unknown) => (v instanceof Error ? { name: v.name, message: v.message } : v))}\n`,
      );
    };
  return { info: log('info'), warn: log('warn'), error: log('error') };
}
