// The store's writer thread, seen from the main thread. The main thread serves HTTP, decodes and
// encodes rows (span-rows.ts); the writer thread (writer-worker.ts, its own SQLite connection)
// inserts and commits them, and runs the WAL checkpoints its commits call for. On two cores the two
// halves overlap instead of taking turns. A write resolves only after its transaction committed.
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../logger.js';
import type { EncodedBatch } from './span-rows.js';
import type { RetentionOptions } from '../read-options.js';
import { WORKER_BOOTSTRAP } from '../worker-bootstrap.js';

/** What the writer thread starts with. */
export interface WriterData {
  /** The module the bootstrap imports: writer-worker.js (dist) or writer-worker.ts (tests, src). */
  entry: string;
  path: string;
  traceIndexPercent: number;
}

export type WriterRequest =
  | { type: 'write'; id: number; batch: EncodedBatch }
  /**
   * Rebuild up to `limit` stale summaries in one transaction of at most about `maxMs` (between
   * ingest transactions).
   */
  | { type: 'refresh'; id: number; limit: number; maxMs?: number }
  /** One retention step (span-store.ts createRetention), or with `finish` its bookkeeping. */
  | { type: 'retain'; id: number; options: RetentionOptions; nowMs: number; finish?: boolean }
  | { type: 'close' };
export type WriterReply =
  | { type: 'ready' }
  /**
   * A write committed (or, with `error`, rolled back); a refresh done (`refreshed` summaries); a
   * retention step done (`refreshed`: records deleted, `more`: call again).
   */
  | { type: 'done'; id: number; error?: string; refreshed?: number; more?: boolean }
  | { type: 'warn'; message: string };

export interface WriterThreadOptions {
  /** The database file (created and migrated already, by createSpanStore). */
  path: string;
  traceIndexPercent: number;
  logger: Logger;
  /** Pause before a writer thread that stopped unexpectedly is started again (default 1 s). */
  restartDelayMs?: number;
}

/** Why writes fail: the batch was rolled back, or the writer thread is not running. */
export class WriterError extends Error {
  override name = 'WriterError';
}

const ENTRY = new URL(
  import.meta.url.endsWith('.ts') ? './writer-worker.ts' : './writer-worker.js',
  import.meta.url,
).href;

/**
 * Starts the writer thread; resolves once its connection is open. If the thread stops unexpectedly
 * (a crash), the writes it had not answered fail with a WriterError, writes fail fast while it is
 * down, and a new thread is started after `restartDelayMs`: what was acknowledged is committed.
 */
export async function startWriterThread(options: WriterThreadOptions) {
  const data: WriterData = {
    entry: ENTRY,
    path: options.path,
    traceIndexPercent: options.traceIndexPercent,
  };
  const pending = new Map<
    number,
    { resolve: (refreshed: number, more: boolean) => void; reject: (error: Error) => void }
  >();
  let nextId = 1;
  let worker: Worker;
  /** Set while the thread is down (between a crash and its restart). */
  let failure: WriterError | undefined;
  let closing: Promise<void> | undefined;
  let restartTimer: NodeJS.Timeout | undefined;
  /** Whether `worker` is running (started and not exited). */
  let alive = false;
  /** Set once the first thread is up: a thread that cannot even start is not restarted. */
  let started = false;

  function spawn(): Promise<void> {
    const w = new Worker(WORKER_BOOTSTRAP, { eval: true, workerData: data });
    // The HTTP server keeps the process alive while the collector runs; close() refs it again
    // so the thread can finish its last batches and close its connection.
    w.unref();
    worker = w;
    alive = true;
    let lastError: Error | undefined;
    return new Promise<void>((resolve, reject) => {
      w.on('message', (m: WriterReply) => {
        if (m.type === 'ready') resolve();
        else if (m.type === 'done') {
          const p = pending.get(m.id);
          pending.delete(m.id);
          if (!p) return;
          if (m.error === undefined) p.resolve(m.refreshed ?? 0, m.more ?? false);
          else
            p.reject(
              new WriterError(
                `${m.refreshed === undefined ? 'the batch was not stored' : 'summary refresh failed'}: ${m.error}`,
              ),
            );
        } else if (m.type === 'warn') options.logger.warn(m.message);
      });
      w.on('error', (error) => (lastError = error));
      w.on('exit', (code) => {
        alive = false;
        const reason = lastError?.message ?? `exit code ${code}`;
        const error = new WriterError(`the store's writer thread stopped unexpectedly (${reason})`);
        reject(error);
        for (const p of pending.values()) p.reject(error);
        pending.clear();
        if (closing || !started) return;
        failure = error;
        options.logger.error('store writer thread stopped; restarting', { error: lastError ?? reason });
        restartTimer = setTimeout(restart, options.restartDelayMs ?? 1000);
        restartTimer.unref();
      });
    });
  }

  function restart(): void {
    restartTimer = undefined;
    spawn().then(
      () => {
        failure = undefined;
        options.logger.info('store writer thread restarted');
      },
      () => {
        // The exit handler already logged it and scheduled the next attempt.
      },
    );
  }

  await spawn();
  started = true;

  return {
    /** Why writes fail right now (the thread is down), or undefined. */
    get failure(): WriterError | undefined {
      return failure;
    },
    /** Stores the batch in one transaction; resolves once it is committed. */
    write(batch: EncodedBatch): Promise<void> {
      if (closing) return Promise.reject(new WriterError('the store is closing'));
      if (failure) return Promise.reject(failure);
      const id = nextId++;
      const done = new Promise<void>((resolve, reject) =>
        pending.set(id, { resolve: () => resolve(), reject }),
      );
      // The documents' buffer moves to the thread (no copy); this side is done with it.
      worker.postMessage({ type: 'write', id, batch } satisfies WriterRequest, [
        batch.docs.buffer,
        batch.docEnds.buffer,
      ]);
      return done;
    },
    /**
     * Rebuilds up to `limit` stale trace and session summaries in one transaction on this thread's
     * connection (stopping after about `maxMs` of work), queued with the writes; resolves with how
     * many were rebuilt (0: none stale). Keep slices short and call again: writes sent meanwhile
     * commit between the calls.
     */
    refreshSummaries(limit: number, maxMs?: number): Promise<number> {
      if (closing) return Promise.reject(new WriterError('the store is closing'));
      if (failure) return Promise.reject(failure);
      const id = nextId++;
      const done = new Promise<number>((resolve, reject) => pending.set(id, { resolve, reject }));
      worker.postMessage({
        type: 'refresh',
        id,
        limit,
        ...(maxMs === undefined ? {} : { maxMs }),
      } satisfies WriterRequest);
      return done;
    },
    /**
     * Stops the thread for tests of the crash path, as a crash would (no close, no answers).
     * @internal
     */
    terminateForTest(): Promise<number> {
      return worker.terminate();
    },
    /**
     * One step of retention on this thread's connection (one DELETE of at most 5000 rows), queued
     * with the writes; `finish: true` runs the bookkeeping after the last step instead.
     */
    retain(
      options: RetentionOptions,
      nowMs: number,
      finish = false,
    ): Promise<{ deleted: number; more: boolean }> {
      if (closing) return Promise.reject(new WriterError('the store is closing'));
      if (failure) return Promise.reject(failure);
      const id = nextId++;
      const done = new Promise<{ deleted: number; more: boolean }>((resolve, reject) =>
        pending.set(id, { resolve: (deleted, more) => resolve({ deleted, more }), reject }),
      );
      worker.postMessage({ type: 'retain', id, options, nowMs, finish } satisfies WriterRequest);
      return done;
    },
    /** Lets the batches already sent finish, then closes the thread's connection and the thread. */
    close(): Promise<void> {
      closing ??= new Promise<void>((resolve) => {
        clearTimeout(restartTimer);
        if (!alive) {
          resolve();
          return;
        }
        worker.ref();
        worker.once('exit', () => resolve());
        worker.postMessage({ type: 'close' } satisfies WriterRequest);
      });
      return closing;
    },
  };
}

export type WriterThread = Awaited<ReturnType<typeof startWriterThread>>;
