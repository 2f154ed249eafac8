import type { LogRecord, SpanRecord } from '../wire-types.js';
import { HttpError } from '@agentrt/kit';
import { StoreCorruptError } from '../store/store.js';

export interface IngestQueueOptions {
  /**
   * Stores one request's records (all or nothing); resolves once they are committed. Requests that
   * reach the writer while it is busy are committed together.
   */
  write: (spans: SpanRecord[], logs: LogRecord[]) => Promise<void>;
  /** Why the store cannot take writes right now (Backend.unwritable), or undefined. */
  unavailable?: () => Error | undefined;
  /** Above this many records not yet committed, new requests get 429 + Retry-After. */
  maxPendingRecords: number;
  /** How long requests are held before they go to the writer, to be committed together (0: at once). */
  flushDelayMs: number;
  /** Called after each request's records are committed, with its spans (live view). */
  onCommit?: (spans: SpanRecord[]) => void;
}

interface Pending {
  spans: SpanRecord[];
  logs: LogRecord[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** A 503 whose message (with the store's reason) is shown to the client. */
function storeUnavailable(message: string, cause: unknown): HttpError {
  return new HttpError(503, message, {
    code: 'store_unavailable',
    cause,
    headers: { 'retry-after': '5' },
    expose: true,
  });
}

/**
 * The way into the store: each request is acknowledged only after its records are committed — so
 * an acknowledged span survives a crash or restart — and back-pressure (429) counts every record
 * not committed yet.
 */
export function createIngestQueue(options: IngestQueueOptions) {
  /** Requests held for `flushDelayMs`. */
  let held: Pending[] = [];
  let pendingRecords = 0;
  /** Requests handed to the writer and not answered yet. */
  let writing = 0;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let drained: (() => void) | undefined;

  function settled(records: number): void {
    writing--;
    pendingRecords -= records;
    if (closed && !writing) drained?.();
  }

  function send(p: Pending): void {
    const records = p.spans.length + p.logs.length;
    writing++;
    let written: Promise<void>;
    try {
      written = options.write(p.spans, p.logs);
    } catch (error) {
      written = Promise.reject(error);
    }
    written.then(
      () => {
        p.resolve();
        settled(records);
        if (p.spans.length) options.onCommit?.(p.spans);
      },
      (error: unknown) => {
        // A corrupt store says so itself (its 503 tells how to recover); anything else is a retry.
        p.reject(
          error instanceof StoreCorruptError
            ? error
            : storeUnavailable(`could not store the data (${(error as Error).message}); retry later`, error),
        );
        settled(records);
      },
    );
  }

  function flush(): void {
    clearTimeout(timer);
    timer = undefined;
    const requests = held;
    held = [];
    for (const p of requests) send(p);
  }

  return {
    get pendingRecords(): number {
      return pendingRecords;
    },
    /** Throws a 429/503 HttpError when `incoming` more records cannot be taken now. */
    checkAccepting(incoming = 0): void {
      if (closed) {
        throw new HttpError(503, 'collector is shutting down; retry later', {
          code: 'shutting_down',
          headers: { 'retry-after': '5' },
          expose: true,
        });
      }
      const down = options.unavailable?.();
      if (down instanceof StoreCorruptError) throw down;
      if (down) {
        throw storeUnavailable(`cannot store data now (${down.message}); retry later`, down);
      }
      if (pendingRecords > 0 && pendingRecords + incoming > options.maxPendingRecords) {
        throw new HttpError(429, 'ingest queue is full; retry later', {
          code: 'queue_full',
          headers: { 'retry-after': '1' },
        });
      }
    },
    /** Stores the records; resolves once they are committed. Throws like checkAccepting. */
    enqueue(spans: SpanRecord[], logs: LogRecord[]): Promise<void> {
      this.checkAccepting(spans.length + logs.length);
      if (!spans.length && !logs.length) return Promise.resolve();
      pendingRecords += spans.length + logs.length;
      return new Promise<void>((resolve, reject) => {
        const p = { spans, logs, resolve, reject };
        if (options.flushDelayMs <= 0) return send(p);
        held.push(p);
        timer ??= setTimeout(flush, options.flushDelayMs);
      });
    },
    /** Refuses new work and writes whatever is held; resolves once every request is answered. */
    close(): Promise<void> {
      closed = true;
      flush();
      if (!writing) return Promise.resolve();
      return new Promise<void>((resolve) => (drained = resolve));
    },
  };
}
