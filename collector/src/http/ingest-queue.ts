import type { SpanStore } from '../store/span-store.js';
import type { LogRecord, SpanRecord } from '../wire-types.js';
import { HttpError } from './http-error.js';

export interface IngestQueueOptions {
  store: SpanStore;
  /** Above this many queued records new requests get 429 + Retry-After. */
  maxPendingRecords: number;
  /** How long a batch waits for more requests before it is written (0: next tick). */
  flushDelayMs: number;
  /** Called after each committed batch with its spans (live view). */
  onCommit?: (spans: SpanRecord[]) => void;
}

interface Pending {
  spans: SpanRecord[];
  logs: LogRecord[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: requests decoded in the same tick (or within `flushDelayMs`) are written in one
 * transaction, and each request is acknowledged only after its records are committed — so an
 * acknowledged span survives a crash or restart.
 */
export function createIngestQueue(options: IngestQueueOptions) {
  let queue: Pending[] = [];
  let pendingRecords = 0;
  let timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  let closed = false;

  function flush(): void {
    timer = undefined;
    const batch = queue;
    queue = [];
    pendingRecords = 0;
    if (!batch.length) return;
    const spans = batch.length === 1 ? batch[0]!.spans : batch.flatMap((p) => p.spans);
    const logs = batch.length === 1 ? batch[0]!.logs : batch.flatMap((p) => p.logs);
    try {
      options.store.insertBatch(spans, logs);
    } catch (error) {
      const failure = new HttpError(503, 'store_unavailable', 'could not store the data; retry later', {
        cause: error,
        headers: { 'retry-after': '5' },
      });
      for (const p of batch) p.reject(failure);
      return;
    }
    for (const p of batch) p.resolve();
    if (spans.length) options.onCommit?.(spans);
  }

  return {
    get pendingRecords(): number {
      return pendingRecords;
    },
    /** Throws a 429/503 HttpError when `incoming` more records cannot be taken now. */
    checkAccepting(incoming = 0): void {
      if (closed) {
        throw new HttpError(503, 'shutting_down', 'collector is shutting down; retry later', {
          headers: { 'retry-after': '5' },
        });
      }
      if (pendingRecords > 0 && pendingRecords + incoming > options.maxPendingRecords) {
        throw new HttpError(429, 'queue_full', 'ingest queue is full; retry later', {
          headers: { 'retry-after': '1' },
        });
      }
    },
    /** Queues records; resolves once they are committed. Throws like checkAccepting. */
    enqueue(spans: SpanRecord[], logs: LogRecord[]): Promise<void> {
      this.checkAccepting(spans.length + logs.length);
      if (!spans.length && !logs.length) return Promise.resolve();
      pendingRecords += spans.length + logs.length;
      return new Promise<void>((resolve, reject) => {
        queue.push({ spans, logs, resolve, reject });
        timer ??= options.flushDelayMs > 0 ? setTimeout(flush, options.flushDelayMs) : setImmediate(flush);
      });
    },
    /** Refuses new work and writes whatever is queued. */
    close(): void {
      closed = true;
      if (timer) {
        clearTimeout(timer as NodeJS.Timeout);
        clearImmediate(timer as NodeJS.Immediate);
      }
      flush();
    },
  };
}
