// The messages between the query pool (reader-pool.ts) and its threads (sqlite/reader-worker.ts,
// clickhouse/clickhouse-query-worker.ts): what a thread starts with, what it is asked, what it answers.
import type { ReadOp } from './sqlite/read-ops.js';
import type { QueryErrorBody } from '../wire-types.js';
import type { QueryOptions } from '../query/engine.js';

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
