import { basename } from 'node:path';
import type { Logger } from '../../logger.js';
import { StoreCorruptError } from '../store.js';

/** SQLite's words for a damaged database file (SQLITE_CORRUPT, SQLITE_NOTADB). */
const CORRUPTION = /database disk image is malformed|file is not a database|SQLITE_CORRUPT|SQLITE_NOTADB/i;

/** Whether an error (or its message) says the database file is damaged. */
export function isCorruption(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return CORRUPTION.test(message);
}

/** Where the README says how to recover. */
export const RECOVERY_HINT = 'see "Recovering a corrupt store" in the collector README';

/**
 * What a client is told while the store is corrupt (503). It does not name the file: any OTLP
 * client would learn a path on the host; the operator finds it in the log.
 */
export function corruptError(detail?: string, cause?: unknown): StoreCorruptError {
  return new StoreCorruptError(
    `the store is corrupt${detail ? ` (${detail})` : ''}; nothing is written to it. ${RECOVERY_HINT}`,
    cause === undefined ? {} : { cause },
  );
}

export interface IntegrityState {
  status: 'ok' | 'checking' | 'corrupt';
  /** The database file. */
  file: string;
  /** What SQLite reported (corrupt only). */
  detail?: string;
  /** When the last full check finished (epoch ms). */
  checkedAtMs?: number;
}

export interface IntegrityMonitorOptions {
  file: string;
  /** Runs `PRAGMA quick_check` somewhere other than the main thread; resolves with its messages. */
  check: () => Promise<string[]>;
  /** Between periodic checks (default 1 h; 0: only at start). */
  intervalMs?: number;
  logger: Logger;
}

/**
 * Knows whether the store is sound: a quick check at start and every `intervalMs`, and any
 * corruption error seen on the way (a write, a query) marks it corrupt at once. A corrupt store
 * makes /healthz unhealthy and writes answer 503 (the log names the file), instead of acknowledging records
 * a damaged database may lose. It stays corrupt until the collector restarts on a sound file.
 */
export function createIntegrityMonitor(options: IntegrityMonitorOptions) {
  const state: IntegrityState = { status: 'checking', file: options.file };
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  function markCorrupt(detail: string): void {
    if (state.status === 'corrupt') return;
    state.status = 'corrupt';
    state.detail = detail;
    options.logger.error('store is corrupt; refusing writes', {
      file: options.file,
      detail,
      hint: RECOVERY_HINT,
    });
  }

  async function run(): Promise<void> {
    if (closed || state.status === 'corrupt') return;
    try {
      const messages = await options.check();
      state.checkedAtMs = Date.now();
      if (messages.length === 1 && messages[0] === 'ok') {
        if (state.status === 'checking') state.status = 'ok';
      } else markCorrupt(messages.slice(0, 5).join('; '));
    } catch (error) {
      // A check that could not run (shutting down, a thread replaced) says nothing about the file.
      if (!closed) options.logger.warn('integrity check did not run', { error });
      if (state.status === 'checking') state.status = 'ok';
    }
  }

  return {
    state: state as Readonly<IntegrityState>,
    markCorrupt,
    /** Starts the check at start and the periodic ones; resolves once the first check finished. */
    start(): Promise<void> {
      const interval = options.intervalMs ?? 3_600_000;
      if (interval > 0) {
        timer = setInterval(() => void run(), interval);
        timer.unref();
      }
      return run();
    },
    /**
     * The state as clients see it (/healthz): the file by its name in the data dir, not its path on
     * the host (the log, markCorrupt's line, has that).
     */
    publicState(): Readonly<IntegrityState> {
      return { ...state, file: basename(state.file) };
    },
    /** StoreCorruptError while the store is corrupt (the file is named in the log, not to the client). */
    unwritable(): StoreCorruptError | undefined {
      return state.status === 'corrupt' ? corruptError(state.detail) : undefined;
    },
    close(): void {
      closed = true;
      clearInterval(timer);
    },
  };
}
