// One query thread's lifecycle: started with the pool's data and heap limit, up once its connection
// is open ('ready'), then answering the one job it holds at a time, until it exits. What an answer or
// an exit means for the pool is the scheduler's (query-scheduler.ts).
import { Worker } from 'node:worker_threads';
import { WORKER_BOOTSTRAP } from './worker-bootstrap.js';
import type { QueryPoolData, QueryReply } from './query-protocol.js';
import type { Job } from './query-jobs.js';

/** A query thread and the job it runs. */
export interface Slot {
  worker: Worker;
  ready: Promise<void>;
  /** The thread is up (its connection open): it takes queries, and their deadlines start. */
  up: boolean;
  job?: Job;
  timer?: NodeJS.Timeout;
}

/** What the pool does when a thread comes up, answers, or exits. */
export interface ThreadEvents {
  ready(slot: Slot): void;
  reply(slot: Slot, reply: Exclude<QueryReply, { type: 'ready' }>): void;
  /** `lastError`: the thread's last 'error' event (out of memory, an uncaught error). */
  exit(slot: Slot, code: number, lastError: Error | undefined): void;
}

/** Starts a query thread; its `ready` rejects when it exits before it is up. */
export function startThread(data: QueryPoolData, maxHeapMb: number, events: ThreadEvents): Slot {
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
      if (m.type !== 'ready') return events.reply(slot, m);
      slot.up = true;
      resolve();
      events.ready(slot);
    });
    worker.on('error', (error) => (lastError = error));
    worker.on('exit', (code) => {
      reject(lastError ?? new Error(`query thread exited with code ${code}`));
      events.exit(slot, code, lastError);
    });
  });
  // A thread that fails to start is replaced by its exit handler; nobody awaits this one.
  slot.ready.catch(() => {});
  return slot;
}

/** Frees a slot of its job and that job's deadline timer. */
export function finish(slot: Slot): void {
  clearTimeout(slot.timer);
  slot.timer = undefined;
  slot.job = undefined;
}
