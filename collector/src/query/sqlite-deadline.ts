// A deadline SQLite itself enforces. node:sqlite (Node 24) has no progress handler and no
// sqlite3_interrupt(), and worker.terminate() cannot stop native code: a thread terminated in the
// middle of one long statement (a GROUP BY over every span) burns its core until the statement
// ends. What node:sqlite does have is user functions, and an exception thrown from one aborts the
// statement that called it. Every statement the engine plans carries DEADLINE_GUARD as its first
// WHERE term: every 256th row by id it calls deadline_check(), which throws once the connection's
// deadline has passed, so a scan stops within a few hundred rows of it.
//
// What the guard cannot reach: the sort or grouping SQLite runs in C after the scan (ORDER BY,
// GROUP BY over a temp b-tree, window functions) over the rows the scan kept. That part is bounded
// by the rows scanned before the deadline; docs/benchmarks.md and collector/README.md give the
// measured figure.
import type { DatabaseSync } from 'node:sqlite';
import { QueryError } from './query-error.js';

/** The SQL function name; a constant written here, never user text. */
export const DEADLINE_FUNCTION = 'agentrt_deadline_check';

/** Rows between two calls of the check (a power of two: `id & (ROWS - 1)`). */
export const DEADLINE_CHECK_ROWS = 256;

interface DeadlineState {
  /** performance.now() past which statements fail; Infinity when no query runs. */
  at: number;
}

const states = new WeakMap<DatabaseSync, DeadlineState>();

/** Raised inside SQLite when the deadline passed; runQuery turns it into its QueryError. */
export class DeadlinePassed extends Error {
  override name = 'DeadlinePassed';
}

/**
 * The guard as plain SQL, for statements written by hand (span-store.ts): the same test as the
 * planner's parameterised one (sqlite-sql.ts), on the `spans` table's `id`.
 */
export const DEADLINE_GUARD_SQL = `((id & ${DEADLINE_CHECK_ROWS - 1}) != 0 OR ${DEADLINE_FUNCTION}())`;

/**
 * The guard for tables without an integer id (the metric tables are WITHOUT ROWID): the check on
 * one row in DEADLINE_CHECK_ROWS on average, picked by SQLite's random() (a C call, no JS).
 */
export const DEADLINE_GUARD_ANY_SQL = `((random() & ${DEADLINE_CHECK_ROWS - 1}) != 0 OR ${DEADLINE_FUNCTION}())`;

/** Makes `db` able to run statements with the guard (outside withDeadline it never fires). */
export function registerDeadlineCheck(db: DatabaseSync): void {
  stateOf(db);
}

/** Throws DeadlinePassed when `db`'s current deadline has passed (work between statements). */
export function checkDeadline(db: DatabaseSync): void {
  const state = states.get(db);
  if (state && performance.now() > state.at) throw new DeadlinePassed('query deadline passed');
}

/** Registers the check on `db` (once) and returns its state. */
function stateOf(db: DatabaseSync): DeadlineState {
  let state = states.get(db);
  if (!state) {
    const s: DeadlineState = { at: Infinity };
    db.function(DEADLINE_FUNCTION, { deterministic: false, directOnly: true }, () => {
      if (performance.now() > s.at) throw new DeadlinePassed('query deadline passed');
      return 1;
    });
    states.set(db, (state = s));
  }
  return state;
}

/**
 * Runs `fn` with statements on `db` failing once `deadline` (performance.now() time) has passed
 * (until the promise it returns settles, when it returns one).
 * A statement stopped by it throws; `fn`'s caller sees whatever `fn` throws then (the SQLite error
 * carries the DeadlinePassed message), so `passed()` says whether that was the deadline.
 */
export function withDeadline<T>(db: DatabaseSync, deadline: number, fn: () => T): T {
  const state = stateOf(db);
  const outer = state.at;
  state.at = Math.min(outer, deadline);
  let result: T;
  try {
    result = fn();
  } catch (error) {
    state.at = outer;
    throw error;
  }
  // An async `fn` (a metric read awaits its store's steps) keeps the deadline until it settles; a
  // query thread runs one read at a time, so nothing else runs on `db` meanwhile.
  if (result instanceof Promise) return result.finally(() => (state.at = outer)) as T;
  state.at = outer;
  return result;
}

/** Whether `error` is a statement stopped by its deadline. */
export function isDeadlineStop(error: unknown): boolean {
  return (
    error instanceof DeadlinePassed ||
    (error instanceof Error && error.message.includes('query deadline passed'))
  );
}

/** How to narrow a query or read (by its read op) that ran into its deadline. */
export function narrowHint(op?: string): string {
  if (op === 'metric')
    return 'narrow it with where, a longer step (every, stepMs) or a shorter range (since)';
  if (op === 'logs') return 'narrow it with since, sessionId, traceId or service';
  return 'narrow it with a time range or a filter on an indexed field (attributes.session.id, traceId, name, resource.attributes.service.name, durationNano, @timestamp)';
}

/** The QueryError a stopped statement becomes (`op`: the read it stopped, for its hint). */
export function deadlineError(startedMs: number, scanned?: number, op?: string): QueryError {
  return new QueryError(
    `query stopped after ${Math.round(performance.now() - startedMs)} ms${scanned === undefined ? '' : ` and ${scanned} records`}; ${narrowHint(op)}`,
    0,
    [],
    'QueryError',
  );
}
