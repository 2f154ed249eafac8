// A job of the query pool (a query, a store read or an integrity check): what its thread is sent,
// and the error each way it can fail ends with. The messages are the API's, so they stay as they are.
import type { ReadOp } from './sqlite/read-ops.js';
import { StoreUnavailableError } from './store.js';
import { QueryFailure } from '../query/query-error.js';
import { ReaderThreadError } from './reader-errors.js';
import type { QueryErrorBody } from '../wire-types.js';
import type { QueryOptions } from '../query/engine.js';
import { narrowHint } from '../query/sqlite-deadline.js';
import type { QueryReply, QueryRequest } from './query-protocol.js';

export interface Job {
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

const stopped = (message: string): QueryErrorBody => ({
  error: 'QueryError',
  message,
  position: 0,
  line: 1,
  column: 1,
});

/** What a thread is sent for `job`, with `leftMs` of its deadline left after the queue. */
export function requestFor(job: Job, leftMs: number): QueryRequest {
  // The engine's own budget is what is left of the deadline after waiting in the queue.
  if (job.kind === 'query') job.options = { ...job.options, maxQueryMs: leftMs };
  if (job.kind === 'check') return { type: 'check', id: job.id };
  if (job.kind === 'read')
    return { type: 'read', id: job.id, op: job.op!, args: job.args!, deadlineMs: leftMs };
  return { type: 'query', id: job.id, query: job.query, options: job.options };
}

/** Settles a job with its thread's answer. */
export function settle(job: Job, reply: Exclude<QueryReply, { type: 'ready' }>): void {
  if (reply.type === 'result') job.resolve(reply.json);
  else if (reply.body) job.reject(new QueryFailure(reply.body, reply.status));
  else if (reply.unavailable)
    job.reject(new StoreUnavailableError(reply.message ?? 'the store is not answering'));
  else job.reject(new Error(`query failed: ${reply.message}`));
}

/** Why a job failed when its thread ended under it (out of memory, a crash, killed). */
export function threadExitError(lastError: Error | undefined, code: number, maxHeapMb: number): Error {
  const oom = (lastError as { code?: string } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
  return oom
    ? new QueryFailure(
        stopped(
          `the query needed more than ${maxHeapMb} MiB; narrow it with a time range, a filter or fields`,
        ),
      )
    : new ReaderThreadError(`the query thread stopped (${lastError?.message ?? `exit code ${code}`})`);
}

/** A job whose thread did not answer by its deadline and a grace period. */
export function deadlineError(job: Job): QueryFailure {
  const what = job.kind === 'check' ? 'integrity check' : job.kind === 'read' ? `${job.op} read` : 'query';
  return new QueryFailure(
    stopped(`${what} stopped at its ${job.timeoutMs} ms deadline; ${narrowHint(job.op)}`),
  );
}

/** A job that waited for a thread past its deadline. */
export function queueWaitError(job: Job): QueryFailure {
  return new QueryFailure(
    stopped(`query waited ${job.timeoutMs} ms for a free query thread; retry shortly or narrow it`),
  );
}
