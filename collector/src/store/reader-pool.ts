// Queries run on worker threads, each with its own read-only SQLite connection (or, for the
// ClickHouse store, its own ClickHouse client: clickhouse-query-worker.ts), so a heavy query
// never holds up ingest, the UI or health checks on the main thread. Every query has a deadline
// that really stops it: the engine's own budget stops a scan between rows, SQLite stops a single
// long statement itself (sqlite-deadline.ts), and past a grace period the thread is terminated (the
// sort after a scan, which no check reaches) and a fresh one takes its place.
import { Worker } from 'node:worker_threads';
import type { Logger } from '../logger.js';
import type { ReadOp, ReadOps } from './sqlite/read-ops.js';
import { StoreUnavailableError } from './store.js';
import { QueryFailure } from '../query/query-error.js';
import { ReaderBusyError, ReaderClosedError, ReaderThreadError } from './reader-errors.js';
import { WORKER_BOOTSTRAP } from './worker-bootstrap.js';
import type { QueryErrorBody } from '../wire-types.js';
import type { QueryOptions } from '../query/engine.js';
import { narrowHint } from '../query/sqlite-deadline.js';

const decoder = new TextDecoder();

/** What a query thread starts with. */
export interface QueryPoolData {
  entry: string;
  /** SQLite's database file ('' on another store's thread). */
  path: string;
  /** SQLite's metrics.sqlite (metric reads), on SQLite's threads. */
  metricsPath?: string;
  maxResultBytes: number;
  maxRows: number;
  /** What a thread of another store needs (the ClickHouse store's connection). */
  extra?: unknown;
}

export type QueryRequest =
  /** `PRAGMA quick_check` on the thread's connection; the result is a JSON array of its messages. */
  | { type: 'check'; id: number }
  | {
      type: 'query';
      id: number;
      query: string;
      options: Pick<QueryOptions, 'startMs' | 'endMs' | 'maxQueryMs'>;
    }
  /** One of the store's reads (read-ops.ts); `deadlineMs` from now. The result is its JSON. */
  | { type: 'read'; id: number; op: ReadOp; args: unknown[]; deadlineMs: number }
  | { type: 'close' };
export type QueryReply =
  | { type: 'ready' }
  | { type: 'result'; id: number; json: Uint8Array }
  | {
      type: 'error';
      id: number;
      body?: QueryErrorBody;
      /** With `body`: the status other than 400 it answers (404: no such metric). */
      status?: number;
      message?: string;
      unavailable?: boolean;
    };

/**
 * Whose threads these are: SQLite's (its sqlite/reader-worker over the database file, created and migrated
 * already, and metrics.sqlite for metric reads), or another store's (its thread module, and what
 * that starts with besides).
 */
export type QueryThreads = { path: string; metricsPath?: string } | { entry: string; extra: unknown };

export type QueryPoolOptions = QueryThreads & {
  logger: Logger;
  /** Query threads (default 2; the collector passes its config, cores − 1). */
  size?: number;
  /** A query's deadline (default 30 s): its scan stops there, its thread soon after. */
  timeoutMs?: number;
  /** Past the deadline, how long a thread may take to notice before it is terminated (default 1 s). */
  graceMs?: number;
  /** Queries waiting for a thread before new ones get 429 (default 16). */
  maxQueued?: number;
  /** Largest result (JSON bytes) before the query fails with a hint (default 64 MiB). */
  maxResultBytes?: number;
  /** Most rows a query may hold in memory for a later sort or stats (default 1,000,000). */
  maxRows?: number;
  /** V8 heap of a query thread (default 512 MiB); a query that needs more fails, the thread is replaced. */
  maxHeapMb?: number;
};

interface Job {
  id: number;
  /** A query, a store read (`op`, `args`), or an integrity check (`query` unused). */
  kind: 'query' | 'check' | 'read';
  op?: ReadOp;
  args?: unknown[];
  timeoutMs: number;
  /** performance.now() by which it must be answered (queue wait included). */
  deadline: number;
  query: string;
  options: Pick<QueryOptions, 'startMs' | 'endMs' | 'maxQueryMs'>;
  resolve: (json: Uint8Array) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  ready: Promise<void>;
  /** The thread is up (its connection open): it takes queries, and their deadlines start. */
  up: boolean;
  job?: Job;
  timer?: NodeJS.Timeout;
}

const ENTRY = new URL(
  import.meta.url.endsWith('.ts') ? './sqlite/reader-worker.ts' : './sqlite/reader-worker.js',
  import.meta.url,
).href;

const stopped = (message: string): QueryErrorBody => ({
  error: 'QueryError',
  message,
  position: 0,
  line: 1,
  column: 1,
});

/** Starts the query threads; resolves once they are ready. */
export async function createQueryPool(options: QueryPoolOptions) {
  const size = Math.max(1, options.size ?? 2);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const graceMs = options.graceMs ?? 1000;
  const maxQueued = options.maxQueued ?? 16;
  const data: QueryPoolData = {
    ...('path' in options
      ? {
          entry: ENTRY,
          path: options.path,
          ...(options.metricsPath ? { metricsPath: options.metricsPath } : {}),
        }
      : { entry: options.entry, path: '', extra: options.extra }),
    maxResultBytes: options.maxResultBytes ?? 64 * 1024 * 1024,
    maxRows: options.maxRows ?? 1_000_000,
  };
  const maxHeapMb = options.maxHeapMb ?? 512;
  const queue: Job[] = [];
  const slots: Slot[] = [];
  let nextId = 1;
  let closed = false;
  const stats = { queries: 0, stoppedAtDeadline: 0, replacedThreads: 0, refused: 0 };

  function spawn(): Slot {
    const worker = new Worker(WORKER_BOOTSTRAP, {
      eval: true,
      workerData: data,
      resourceLimits: { maxOldGenerationSizeMb: maxHeapMb },
    });
    worker.unref();
    const slot: Slot = { worker, ready: Promise.resolve(), up: false };
    let lastError: Error | undefined;
    slot.ready = new Promise<void>((resolve, reject) => {
      worker.on('message', (m: QueryReply) => {
        if (m.type === 'ready') {
          slot.up = true;
          resolve();
          dispatch();
          return;
        }
        const job = slot.job;
        if (!job || job.id !== m.id) return;
        finish(slot);
        if (m.type === 'result') job.resolve(m.json);
        else if (m.body) job.reject(new QueryFailure(m.body, m.status));
        else if (m.unavailable)
          job.reject(new StoreUnavailableError(m.message ?? 'the store is not answering'));
        else job.reject(new Error(`query failed: ${m.message}`));
        dispatch();
      });
      worker.on('error', (error) => (lastError = error));
      worker.on('exit', (code) => {
        reject(lastError ?? new Error(`query thread exited with code ${code}`));
        const i = slots.indexOf(slot);
        if (i >= 0) slots.splice(i, 1);
        const job = slot.job;
        finish(slot);
        if (job) {
          const oom = (lastError as { code?: string } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
          job.reject(
            oom
              ? new QueryFailure(
                  stopped(
                    `the query needed more than ${maxHeapMb} MiB; narrow it with a time range, a filter or fields`,
                  ),
                )
              : new ReaderThreadError(
                  `the query thread stopped (${lastError?.message ?? `exit code ${code}`})`,
                ),
          );
        }
        // A thread ended at a deadline was replaced already (retire).
        if (!closed && i >= 0) {
          options.logger.warn('query thread stopped; replacing it', {
            error: lastError ?? `exit code ${code}`,
          });
          stats.replacedThreads++;
          // One that could not even start (its connection) is retried after a pause, not in a loop.
          if (slot.up) slots.push(spawn());
          else setTimeout(() => !closed && slots.push(spawn()), 1000).unref();
        }
      });
    });
    // A thread that fails to start is replaced by its exit handler; nobody awaits this one.
    slot.ready.catch(() => {});
    return slot;
  }

  function finish(slot: Slot): void {
    clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.job = undefined;
  }

  /** Ends a thread that ran past a deadline; a fresh one takes its place right away. */
  function retire(slot: Slot): void {
    const i = slots.indexOf(slot);
    if (i >= 0) slots.splice(i, 1);
    void slot.worker.terminate();
    if (closed) return;
    stats.replacedThreads++;
    slots.push(spawn());
  }

  function dispatch(): void {
    for (const slot of slots) {
      if (slot.job || !slot.up) continue;
      const job = queue.shift();
      if (!job) return;
      slot.job = job;
      stats.queries++;
      // The engine's own budget is what is left of the deadline after waiting in the queue.
      const left = Math.max(1, job.deadline - performance.now());
      if (job.kind === 'query') job.options = { ...job.options, maxQueryMs: left };
      slot.worker.postMessage(
        (job.kind === 'check'
          ? { type: 'check', id: job.id }
          : job.kind === 'read'
            ? { type: 'read', id: job.id, op: job.op!, args: job.args!, deadlineMs: left }
            : { type: 'query', id: job.id, query: job.query, options: job.options }) satisfies QueryRequest,
      );
      // The engine and SQLite stop the scan at the deadline; what neither reaches (SQLite's sort of
      // what was scanned) ends with the thread.
      slot.timer = setTimeout(() => {
        if (slot.job !== job) return;
        stats.stoppedAtDeadline++;
        finish(slot);
        job.reject(
          new QueryFailure(
            stopped(
              `${job.kind === 'check' ? 'integrity check' : job.kind === 'read' ? `${job.op} read` : 'query'} stopped at its ${job.timeoutMs} ms deadline; ${narrowHint(job.op)}`,
            ),
          ),
        );
        retire(slot);
      }, left + graceMs);
    }
  }

  /** Fails a job still waiting for a thread once its deadline passed (threads busy or starting). */
  function expireQueued(): void {
    if (!queue.length) {
      // Nothing waits: no timer either (an idle collector does not wake up ten times a second).
      clearInterval(expiry);
      expiry = undefined;
      return;
    }
    const now = performance.now();
    for (let i = queue.length - 1; i >= 0; i--) {
      const job = queue[i]!;
      if (job.deadline + graceMs > now) continue;
      queue.splice(i, 1);
      stats.stoppedAtDeadline++;
      job.reject(
        new QueryFailure(
          stopped(`query waited ${job.timeoutMs} ms for a free query thread; retry shortly or narrow it`),
        ),
      );
    }
  }
  /** Runs expireQueued while jobs wait for a thread. */
  let expiry: NodeJS.Timeout | undefined;

  /** Queues a job (first in line when `ahead`) and hands out what a free thread can take. */
  function add(job: Job, ahead: boolean): void {
    queue[ahead ? 'unshift' : 'push'](job);
    dispatch();
    if (queue.length && !expiry) {
      expiry = setInterval(expireQueued, 100);
      expiry.unref();
    }
  }

  /**
   * Queues a query or read (429 when too many wait already). `ahead`: the next step of work already
   * admitted (an export's next page) goes before waiting queries and is never refused.
   */
  function enqueue(
    job: Pick<Job, 'kind' | 'query' | 'options'> & Partial<Pick<Job, 'op' | 'args'>>,
    ahead = false,
  ): Promise<Uint8Array> {
    if (closed) return Promise.reject(new ReaderClosedError('the collector is shutting down'));
    const busy = slots.every((s) => s.job);
    if (!ahead && busy && queue.length >= maxQueued) {
      stats.refused++;
      return Promise.reject(
        new ReaderBusyError(`${queue.length} queries are waiting already; retry shortly`),
      );
    }
    return new Promise<Uint8Array>((resolve, reject) =>
      add(
        { ...job, id: nextId++, timeoutMs, deadline: performance.now() + timeoutMs, resolve, reject },
        ahead,
      ),
    );
  }

  for (let i = 0; i < size; i++) slots.push(spawn());
  try {
    await Promise.all(slots.map((s) => s.ready));
  } catch (error) {
    closed = true;
    await Promise.all(slots.map((s) => s.worker.terminate()));
    throw error;
  }

  return {
    stats,
    /** Queries waiting for a thread. */
    get queued(): number {
      return queue.length;
    },
    /**
     * Runs a query on a thread; resolves with the QueryResponse as JSON bytes. Rejects with
     * QueryFailure (a 400 body), ReaderBusyError when too many queries wait, ReaderClosedError
     * when closing.
     */
    run(query: string, range: Pick<QueryOptions, 'startMs' | 'endMs'> = {}): Promise<Uint8Array> {
      return enqueue({ kind: 'query', query, options: { ...range, maxQueryMs: timeoutMs } });
    },
    /**
     * Runs one of the store's reads (read-ops.ts) on a thread, with the same deadline, result cap
     * and 429 as a query; resolves with its result as JSON bytes (`null` for undefined).
     */
    read<K extends ReadOp>(
      op: K,
      args: Parameters<ReadOps[K]>,
      { ahead = false }: { ahead?: boolean } = {},
    ): Promise<Uint8Array> {
      return enqueue({ kind: 'read', op, args, query: '', options: {} }, ahead);
    },
    /** A read's result as bytes; `null` (an undefined result: no such trace, session, page) as undefined. */
    async readBytes<K extends ReadOp>(
      op: K,
      args: Parameters<ReadOps[K]>,
      ahead = false,
    ): Promise<Uint8Array | undefined> {
      const json = await this.read(op, args, { ahead });
      return json.length === 4 && decoder.decode(json) === 'null' ? undefined : json;
    },
    /** A read's result, parsed (bounded results: lists of at most 1000, one summary). */
    async readParsed<K extends ReadOp>(
      op: K,
      args: Parameters<ReadOps[K]>,
    ): Promise<Awaited<ReturnType<ReadOps[K]>>> {
      const json = await this.readBytes(op, args);
      return (json === undefined ? undefined : JSON.parse(decoder.decode(json))) as Awaited<
        ReturnType<ReadOps[K]>
      >;
    },
    /**
     * Runs SQLite's `PRAGMA quick_check` on a query thread (ahead of waiting queries); resolves with
     * its messages: `['ok']` for a sound database.
     */
    check(timeoutMs = 600_000): Promise<string[]> {
      if (closed) return Promise.reject(new ReaderClosedError('the collector is shutting down'));
      return new Promise<Uint8Array>((resolve, reject) =>
        add(
          {
            id: nextId++,
            kind: 'check',
            timeoutMs,
            deadline: performance.now() + timeoutMs,
            query: '',
            options: {},
            resolve,
            reject,
          },
          true,
        ),
      ).then((json) => JSON.parse(Buffer.from(json).toString()) as string[]);
    },
    /** Fails what waits, stops the threads. */
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      clearInterval(expiry);
      for (const job of queue.splice(0)) job.reject(new ReaderClosedError('the collector is shutting down'));
      await Promise.all(
        slots.map(async (s) => {
          clearTimeout(s.timer);
          await s.worker.terminate();
        }),
      );
    },
  };
}

export type QueryPool = Awaited<ReturnType<typeof createQueryPool>>;
