// The store's writer thread, seen from the main thread. The main thread serves HTTP, decodes and
// encodes rows (span-rows.ts); the writer thread (writer-worker.ts, its own SQLite connection)
// inserts and commits them, and runs the WAL checkpoints its commits call for. On two cores the two
// halves overlap instead of taking turns. A write resolves only after its transaction committed.
import { type TransferListItem, Worker } from 'node:worker_threads';
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

/** The writer thread, as the store drives it. */
export interface WriterThread {
  /** Why writes fail right now (the thread is down), or undefined. */
  readonly failure: WriterError | undefined;
  /** Stores the batch in one transaction; resolves once it is committed. */
  write(batch: EncodedBatch): Promise<void>;
  /**
   * Rebuilds up to `limit` stale trace and session summaries in one transaction on this thread's
   * connection (stopping after about `maxMs` of work), queued with the writes; resolves with how
   * many were rebuilt (0: none stale). Keep slices short and call again: writes sent meanwhile
   * commit between the calls.
   */
  refreshSummaries(limit: number, maxMs?: number): Promise<number>;
  /**
   * Stops the thread for tests of the crash path, as a crash would (no close, no answers).
   * @internal
   */
  terminateForTest(): Promise<number>;
  /**
   * One step of retention on this thread's connection (one DELETE of at most 5000 rows), queued
   * with the writes; `finish: true` runs the bookkeeping after the last step instead.
   */
  retain(
    options: RetentionOptions,
    nowMs: number,
    finish?: boolean,
  ): Promise<{ deleted: number; more: boolean }>;
  /** Lets the batches already sent finish, then closes the thread's connection and the thread. */
  close(): Promise<void>;
}

/** A request sent and not answered yet: its `done` reply settles it. */
interface Pending {
  resolve: (refreshed: number, more: boolean) => void;
  reject: (error: Error) => void;
}

/** A writer thread's settings and what it has in hand. */
interface WriterState {
  options: WriterThreadOptions;
  data: WriterData;
  pending: Map<number, Pending>;
  nextId: number;
  worker: Worker;
  /** Set while the thread is down (between a crash and its restart). */
  failure: WriterError | undefined;
  closing: Promise<void> | undefined;
  restartTimer: NodeJS.Timeout | undefined;
  /** Whether `worker` is running (started and not exited). */
  alive: boolean;
  /** Set once the first thread is up: a thread that cannot even start is not restarted. */
  started: boolean;
}

/**
 * Starts the writer thread; resolves once its connection is open. If the thread stops unexpectedly
 * (a crash), the writes it had not answered fail with a WriterError, writes fail fast while it is
 * down, and a new thread is started after `restartDelayMs`: what was acknowledged is committed.
 */
export async function startWriterThread(options: WriterThreadOptions): Promise<WriterThread> {
  const s: WriterState = {
    options,
    data: { entry: ENTRY, path: options.path, traceIndexPercent: options.traceIndexPercent },
    pending: new Map(),
    nextId: 1,
    // spawn sets it before anything reads it.
    worker: undefined as unknown as Worker,
    failure: undefined,
    closing: undefined,
    restartTimer: undefined,
    alive: false,
    started: false,
  };
  await spawn(s);
  s.started = true;
  return writerThreadOf(s);
}

function writerThreadOf(s: WriterState): WriterThread {
  return {
    get failure(): WriterError | undefined {
      return s.failure;
    },
    write: (batch) =>
      // The documents' buffer moves to the thread (no copy); this side is done with it.
      request(
        s,
        (id) => ({ type: 'write', id, batch }),
        () => undefined,
        [batch.docs.buffer, batch.docEnds.buffer],
      ),
    refreshSummaries: (limit, maxMs) =>
      request(
        s,
        (id) => ({ type: 'refresh', id, limit, ...(maxMs === undefined ? {} : { maxMs }) }),
        (refreshed) => refreshed,
      ),
    terminateForTest: () => s.worker.terminate(),
    retain: (options, nowMs, finish = false) =>
      request(
        s,
        (id) => ({ type: 'retain', id, options, nowMs, finish }),
        (deleted, more) => ({ deleted, more }),
      ),
    close: () => close(s),
  };
}

/**
 * Sends the thread a request (`message` of its id) and resolves with `answer` of its `done` reply;
 * refused at once while the store is closing or the thread is down.
 */
function request<T>(
  s: WriterState,
  message: (id: number) => WriterRequest,
  answer: (refreshed: number, more: boolean) => T,
  transfer: TransferListItem[] = [],
): Promise<T> {
  if (s.closing) return Promise.reject(new WriterError('the store is closing'));
  if (s.failure) return Promise.reject(s.failure);
  const id = s.nextId++;
  const done = new Promise<T>((resolve, reject) =>
    s.pending.set(id, { resolve: (refreshed, more) => resolve(answer(refreshed, more)), reject }),
  );
  s.worker.postMessage(message(id), transfer);
  return done;
}

/** Starts a thread; resolves once it is ready, rejects if it exits first. */
function spawn(s: WriterState): Promise<void> {
  const w = new Worker(WORKER_BOOTSTRAP, { eval: true, workerData: s.data });
  // The HTTP server keeps the process alive while the collector runs; close() refs it again
  // so the thread can finish its last batches and close its connection.
  w.unref();
  s.worker = w;
  s.alive = true;
  let lastError: Error | undefined;
  return new Promise<void>((resolve, reject) => {
    w.on('message', (m: WriterReply) => {
      if (m.type === 'ready') resolve();
      else if (m.type === 'done') answered(s, m);
      else if (m.type === 'warn') s.options.logger.warn(m.message);
    });
    w.on('error', (error) => (lastError = error));
    w.on('exit', (code) => exited(s, code, lastError, reject));
  });
}

/** Settles the request a `done` reply answers. */
function answered(s: WriterState, m: Extract<WriterReply, { type: 'done' }>): void {
  const p = s.pending.get(m.id);
  s.pending.delete(m.id);
  if (!p) return;
  if (m.error === undefined) p.resolve(m.refreshed ?? 0, m.more ?? false);
  else
    p.reject(
      new WriterError(
        `${m.refreshed === undefined ? 'the batch was not stored' : 'summary refresh failed'}: ${m.error}`,
      ),
    );
}

/**
 * The thread is gone: its start (if it was starting) and what it had not answered fail, and unless
 * the store is closing (or the first thread never started) writes fail fast until a new thread is up.
 */
function exited(
  s: WriterState,
  code: number,
  lastError: Error | undefined,
  rejectStart: (error: WriterError) => void,
): void {
  s.alive = false;
  const reason = lastError?.message ?? `exit code ${code}`;
  const error = new WriterError(`the store's writer thread stopped unexpectedly (${reason})`);
  rejectStart(error);
  for (const p of s.pending.values()) p.reject(error);
  s.pending.clear();
  if (s.closing || !s.started) return;
  s.failure = error;
  s.options.logger.error('store writer thread stopped; restarting', { error: lastError ?? reason });
  s.restartTimer = setTimeout(() => restart(s), s.options.restartDelayMs ?? 1000);
  s.restartTimer.unref();
}

function restart(s: WriterState): void {
  s.restartTimer = undefined;
  spawn(s).then(
    () => {
      s.failure = undefined;
      s.options.logger.info('store writer thread restarted');
    },
    () => {
      // The exit handler already logged it and scheduled the next attempt.
    },
  );
}

function close(s: WriterState): Promise<void> {
  s.closing ??= new Promise<void>((resolve) => {
    clearTimeout(s.restartTimer);
    if (!s.alive) {
      resolve();
      return;
    }
    s.worker.ref();
    s.worker.once('exit', () => resolve());
    s.worker.postMessage({ type: 'close' } satisfies WriterRequest);
  });
  return s.closing;
}
