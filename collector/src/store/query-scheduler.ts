// The query pool's scheduling: jobs wait in one queue (first come, first served; the next step of
// admitted work goes ahead), a free thread takes the next one, and every job has a deadline that
// really stops it. A job still waiting at its deadline fails in the queue; one still running past
// its deadline and a grace period ends with its thread, and a fresh thread takes that one's place.
import type { Logger } from '../logger.js';
import { ReaderBusyError, ReaderClosedError } from './reader-errors.js';
import type { QueryPoolData, QueryReply } from './query-protocol.js';
import {
  type Job,
  deadlineError,
  queueWaitError,
  requestFor,
  settle,
  threadExitError,
} from './query-jobs.js';
import { type Slot, finish, startThread } from './query-thread.js';

/** The pool's options, defaults applied. */
export interface PoolSettings {
  data: QueryPoolData;
  logger: Logger;
  timeoutMs: number;
  graceMs: number;
  maxQueued: number;
  maxHeapMb: number;
}

/** What the pool has done since it started. */
export interface QueryPoolStats {
  queries: number;
  stoppedAtDeadline: number;
  replacedThreads: number;
  refused: number;
}

export interface PoolState {
  readonly settings: PoolSettings;
  readonly queue: Job[];
  readonly slots: Slot[];
  readonly stats: QueryPoolStats;
  closed: boolean;
  nextId: number;
  /** Runs expireQueued while jobs wait for a thread. */
  expiry?: NodeJS.Timeout;
}

/** What is asked of a thread; the scheduler adds its id, deadline and promise. */
export type Work = Pick<Job, 'kind' | 'query' | 'options'> & Partial<Pick<Job, 'op' | 'args'>>;

const closedError = () => new ReaderClosedError('the collector is shutting down');

/** Starts `size` threads; resolves once they are all up, or stops them all when one cannot start. */
export async function startThreads(pool: PoolState, size: number): Promise<void> {
  for (let i = 0; i < size; i++) pool.slots.push(spawn(pool));
  try {
    await Promise.all(pool.slots.map((s) => s.ready));
  } catch (error) {
    pool.closed = true;
    await Promise.all(pool.slots.map((s) => s.worker.terminate()));
    throw error;
  }
}

function spawn(pool: PoolState): Slot {
  return startThread(pool.settings.data, pool.settings.maxHeapMb, {
    ready: () => dispatch(pool),
    reply: (slot, reply) => onReply(pool, slot, reply),
    exit: (slot, code, lastError) => onExit(pool, slot, code, lastError),
  });
}

function onReply(pool: PoolState, slot: Slot, reply: Exclude<QueryReply, { type: 'ready' }>): void {
  const job = slot.job;
  if (!job || job.id !== reply.id) return;
  finish(slot);
  settle(job, reply);
  dispatch(pool);
}

/** A thread ended: its job fails, and (unless it was retired or the pool is closing) it is replaced. */
function onExit(pool: PoolState, slot: Slot, code: number, lastError: Error | undefined): void {
  const i = pool.slots.indexOf(slot);
  if (i >= 0) pool.slots.splice(i, 1);
  const job = slot.job;
  finish(slot);
  if (job) job.reject(threadExitError(lastError, code, pool.settings.maxHeapMb));
  // A thread ended at a deadline was replaced already (retire).
  if (pool.closed || i < 0) return;
  pool.settings.logger.warn('query thread stopped; replacing it', {
    error: lastError ?? `exit code ${code}`,
  });
  pool.stats.replacedThreads++;
  // One that could not even start (its connection) is retried after a pause, not in a loop.
  if (slot.up) pool.slots.push(spawn(pool));
  else setTimeout(() => !pool.closed && pool.slots.push(spawn(pool)), 1000).unref();
}

/** Ends a thread that ran past a deadline; a fresh one takes its place right away. */
function retire(pool: PoolState, slot: Slot): void {
  const i = pool.slots.indexOf(slot);
  if (i >= 0) pool.slots.splice(i, 1);
  void slot.worker.terminate();
  if (pool.closed) return;
  pool.stats.replacedThreads++;
  pool.slots.push(spawn(pool));
}

/** Hands waiting jobs to the threads that are up and free. */
function dispatch(pool: PoolState): void {
  for (const slot of pool.slots) {
    if (slot.job || !slot.up) continue;
    const job = pool.queue.shift();
    if (!job) return;
    run(pool, slot, job);
  }
}

function run(pool: PoolState, slot: Slot, job: Job): void {
  slot.job = job;
  pool.stats.queries++;
  const left = Math.max(1, job.deadline - performance.now());
  slot.worker.postMessage(requestFor(job, left));
  // The engine and SQLite stop the scan at the deadline; what neither reaches (SQLite's sort of
  // what was scanned) ends with the thread.
  slot.timer = setTimeout(() => {
    if (slot.job !== job) return;
    pool.stats.stoppedAtDeadline++;
    finish(slot);
    job.reject(deadlineError(job));
    retire(pool, slot);
  }, left + pool.settings.graceMs);
}

/** Fails a job still waiting for a thread once its deadline passed (threads busy or starting). */
function expireQueued(pool: PoolState): void {
  if (!pool.queue.length) {
    // Nothing waits: no timer either (an idle collector does not wake up ten times a second).
    clearInterval(pool.expiry);
    pool.expiry = undefined;
    return;
  }
  const now = performance.now();
  for (let i = pool.queue.length - 1; i >= 0; i--) {
    const job = pool.queue[i]!;
    if (job.deadline + pool.settings.graceMs > now) continue;
    pool.queue.splice(i, 1);
    pool.stats.stoppedAtDeadline++;
    job.reject(queueWaitError(job));
  }
}

/** Queues a job (first in line when `ahead`) and hands out what a free thread can take. */
function add(pool: PoolState, job: Job, ahead: boolean): void {
  pool.queue[ahead ? 'unshift' : 'push'](job);
  dispatch(pool);
  if (pool.queue.length && !pool.expiry) {
    pool.expiry = setInterval(() => expireQueued(pool), 100);
    pool.expiry.unref();
  }
}

/** A job for `work` with a deadline `timeoutMs` from now, queued; resolves with its result. */
function submit(pool: PoolState, work: Work, timeoutMs: number, ahead: boolean): Promise<Uint8Array> {
  return new Promise<Uint8Array>((resolve, reject) =>
    add(
      pool,
      { ...work, id: pool.nextId++, timeoutMs, deadline: performance.now() + timeoutMs, resolve, reject },
      ahead,
    ),
  );
}

/**
 * Queues a query or read (429 when too many wait already). `ahead`: the next step of work already
 * admitted (an export's next page) goes before waiting queries and is never refused.
 */
export function enqueue(pool: PoolState, work: Work, ahead = false): Promise<Uint8Array> {
  if (pool.closed) return Promise.reject(closedError());
  const busy = pool.slots.every((s) => s.job);
  if (!ahead && busy && pool.queue.length >= pool.settings.maxQueued) {
    pool.stats.refused++;
    return Promise.reject(
      new ReaderBusyError(`${pool.queue.length} queries are waiting already; retry shortly`),
    );
  }
  return submit(pool, work, pool.settings.timeoutMs, ahead);
}

/** Queues an integrity check ahead of waiting queries, never refused, with a deadline of its own. */
export function enqueueCheck(pool: PoolState, timeoutMs: number): Promise<Uint8Array> {
  if (pool.closed) return Promise.reject(closedError());
  return submit(pool, { kind: 'check', query: '', options: {} }, timeoutMs, true);
}

/** Fails what waits, stops the threads. */
export async function closePool(pool: PoolState): Promise<void> {
  if (pool.closed) return;
  pool.closed = true;
  clearInterval(pool.expiry);
  for (const job of pool.queue.splice(0)) job.reject(closedError());
  await Promise.all(
    pool.slots.map(async (s) => {
      clearTimeout(s.timer);
      await s.worker.terminate();
    }),
  );
}
