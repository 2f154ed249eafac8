import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import type { AttributeValue, QueryResponse, SpanRecord } from '../wire-types.js';
import type { Command } from './ast.js';
import { calcsOf, withCalcs } from './calc.js';
import { type Getter, accumulator, evaluate, sortCompare } from './evaluate.js';
import { resolveField } from './fields.js';
import { parseQuery } from './parser.js';
import { DEFAULT_COLUMNS, DEFAULT_LIMIT, type QueryPlan, type StatsPlan, planQuery } from './plan.js';
import { QueryError } from './query-error.js';
import { deadlineError, isDeadlineStop, withDeadline } from './sqlite-deadline.js';
import { type Fragment, scanSql, statsDiscSql, statsKthSql, statsSql, statsWindowSql } from './sqlite-sql.js';

export interface QueryOptions {
  /** Only spans starting at or after this epoch-ms time. */
  startMs?: number;
  /** Only spans starting before this epoch-ms time. */
  endMs?: number;
  /**
   * Give up (QueryError) once the scan has run this long; default 30 s. (The collector runs queries
   * on worker threads and ends a thread that runs past this, see store/reader-pool.ts.)
   */
  maxQueryMs?: number;
  /** Most rows held in memory for a later sort, filter or stats (QueryError past it); default 1,000,000. */
  maxRows?: number;
}

/** How many rows are read between two checks of the time budget. */
const BUDGET_CHECK_ROWS = 256;

export { DEFAULT_COLUMNS, DEFAULT_LIMIT };

/** Whether the GenAI columns hold every span's value (no span with an odd value there). */
function hotColumnsUsable(db: DatabaseSync): boolean {
  return !db.prepare('SELECT 1 FROM spans WHERE hot_odd = 1 LIMIT 1').get();
}

function prepare(db: DatabaseSync, f: Fragment): { stmt: StatementSync; params: SQLInputValue[] } {
  return { stmt: db.prepare(f.text), params: [...f.params] };
}

type StatsCommand = Extract<Command, { type: 'stats' }>;

const percentileDisc = new WeakMap<DatabaseSync, boolean>();

/** Whether this SQLite build has percentile_disc() (SQLITE_ENABLE_PERCENTILE; Node 24's has). */
function hasPercentileDisc(db: DatabaseSync): boolean {
  let ok = percentileDisc.get(db);
  if (ok === undefined) {
    try {
      db.prepare('SELECT percentile_disc(1, 0.5)').get();
      ok = true;
    } catch {
      ok = false;
    }
    percentileDisc.set(db, ok);
  }
  return ok;
}

/**
 * The fraction that makes percentile_disc() return the k-th smallest (0-based) of n values. It
 * picks index floor(P × (n − 1)) — not the nearest rank pct() uses — so P aims at the middle of
 * entry k, clear of rounding on either side.
 */
export function discFraction(k: number, n: number): number {
  return n <= 1 ? 0 : Math.min(1, (k + 0.5) / (n - 1));
}

/**
 * Runs a `stats` command as one SQL GROUP BY when every field it names is a column (and every
 * filter before it ran in SQL): no record is parsed. `pct()` then reads the k-th value of each
 * group from a sorted column scan — an index walk when an index orders it (the GenAI index for
 * durations by model), else one window-function pass.
 */
function statsInSql(
  db: DatabaseSync,
  cmd: StatsCommand,
  plan: StatsPlan,
): { rows: Record<string, unknown>[]; scanned: number } {
  const grouped = prepare(db, statsSql(plan));
  grouped.stmt.setReturnArrays(true);
  const raw = grouped.stmt.all(...grouped.params) as unknown as unknown[][];
  const nk = plan.keys.length;
  const na = plan.aggs.length;
  let scanned = 0;
  for (const r of raw) scanned += r[nk + na] as number;

  for (const [i, agg] of plan.aggs.entries()) {
    if (agg.fn !== 'pct' || !agg.value) continue;
    const value = agg.value;
    const p = agg.p!;
    const col = nk + i;
    const rank = (n: number): number => Math.max(1, Math.ceil((p / 100) * n));
    // One group's k-th value: SQLite's percentile_disc() where the build has it (one pass that
    // collects and sorts in C), else an ORDER BY … OFFSET. Either is cheap when an index narrows
    // the scan to the group (or delivers the values in order); the other groups (the one of spans
    // without the key, say, or bin() groups) need a pass each: with several of them, one
    // window-function pass over all of them is cheaper.
    const disc = hasPercentileDisc(db);
    const kth = (r: unknown[]): Fragment => {
      const n = r[col] as number;
      const k = rank(n) - 1;
      const key = r.slice(0, nk);
      return disc ? statsDiscSql(plan, value, key, discFraction(k, n)) : statsKthSql(plan, value, key, k);
    };
    const plans = new Map<string, boolean>();
    const cheap = (f: Fragment): boolean => {
      let ok = plans.get(f.text);
      if (ok === undefined) {
        const plan = db.prepare(`EXPLAIN QUERY PLAN ${f.text}`).all(...f.params) as { detail: string }[];
        // percentile_disc(): an index search by equality (the group's key, a session); a search
        // by a range alone (a time window) can cover the whole table.
        ok = disc
          ? !plan.some((p) => p.detail.startsWith('SCAN')) && plan.some((p) => /[^<>!]=\?/.test(p.detail))
          : !plan.some((p) => p.detail.includes('TEMP B-TREE'));
        plans.set(f.text, ok);
      }
      return ok;
    };
    const jobs = raw
      .filter((r) => (r[col] as number) > 0)
      .map((r) => {
        const f = kth(r);
        return { r, f, walk: cheap(f) };
      });
    for (const r of raw) if (!((r[col] as number) > 0)) r[col] = null;
    const sorts = jobs.filter((j) => !j.walk);
    for (const j of sorts.length > 1 ? jobs.filter((x) => x.walk) : jobs) {
      const one = prepare(db, j.f);
      one.stmt.setReturnArrays(true);
      j.r[col] = (one.stmt.get(...one.params) as unknown as unknown[])[0];
    }
    if (sorts.length <= 1) continue;
    // No index in that order: one sort of all the groups' values, picking each group's rank.
    const win = prepare(db, statsWindowSql(plan, value, p));
    win.stmt.setReturnArrays(true);
    const found = new Map<string, unknown>();
    for (const w of win.stmt.all(...win.params) as unknown as unknown[][])
      found.set(JSON.stringify(w.slice(0, nk)), w[nk]);
    for (const { r } of sorts) r[col] = found.get(JSON.stringify(r.slice(0, nk))) ?? null;
  }
  const rows = raw.map((r) => {
    const o: Record<string, unknown> = {};
    cmd.by.forEach((b, i) => (o[b.name] = r[i]));
    cmd.aggs.forEach((a, i) => (o[a.name] = r[nk + i]));
    return o;
  });
  return { rows, scanned };
}

/** A `stats` command over rows in memory (fields that are not columns, or filters run in JS). */
function statsInJs(cmd: StatsCommand, rows: unknown[], g: Getter): Record<string, unknown>[] {
  const groups = new Map<string, { key: unknown[]; accs: ReturnType<typeof accumulator>[] }>();
  for (const r of rows) {
    const key = cmd.by.map((b) => {
      if (b.type === 'bin') {
        const ts = g(r, '@timestamp');
        return typeof ts === 'number' ? Math.floor(ts / b.ms) * b.ms : null;
      }
      return g(r, b.path) ?? null;
    });
    const k = JSON.stringify(key);
    let group = groups.get(k);
    if (!group) groups.set(k, (group = { key, accs: cmd.aggs.map((a) => accumulator(a, g)) }));
    for (const acc of group.accs) acc.add(r);
  }
  if (!groups.size && !cmd.by.length) {
    groups.set('[]', { key: [], accs: cmd.aggs.map((a) => accumulator(a, g)) });
  }
  return [...groups.values()].map((group) => {
    const o: Record<string, unknown> = {};
    cmd.by.forEach((b, i) => (o[b.name] = group.key[i]));
    cmd.aggs.forEach((a, i) => (o[a.name] = group.accs[i]!.result()));
    return o;
  });
}

/** Reads fields of span records. */
export const recordGetter: Getter = (row, path) => resolveField(row as SpanRecord, path);
/** Reads keys of plain objects (projected rows). */
export const objectGetter: Getter = (row, path) =>
  Object.hasOwn(row as object, path) ? (row as Record<string, unknown>)[path] : undefined;

/**
 * Parses and runs a query over the span table. Throws QueryError for bad queries and for one that
 * runs past `maxQueryMs`: between rows the engine checks its budget, and inside one statement
 * SQLite stops at the deadline itself (sqlite-deadline.ts).
 */
export function runQuery(db: DatabaseSync, query: string, options: QueryOptions = {}): QueryResponse {
  const started = performance.now();
  const deadline = started + (options.maxQueryMs ?? 30_000);
  try {
    return withDeadline(db, deadline, () => runPlanned(db, query, options, started, deadline));
  } catch (error) {
    if (isDeadlineStop(error)) throw deadlineError(started);
    throw error;
  }
}

function runPlanned(
  db: DatabaseSync,
  query: string,
  options: QueryOptions,
  started: number,
  deadline: number,
): QueryResponse {
  const plan = planQuery(parseQuery(query), { ...options, hotColumns: hotColumnsUsable(db) });
  const { rest, paths, stopAfter } = plan;
  const index = new Map(paths.map((p, i) => [p, i]));
  const useRecord = plan.scan.select.type === 'doc';

  let get: Getter = objectGetter;
  const rows: unknown[] = [];
  let scanned = 0;
  const filter = plan.residual;
  const overBudget = (): QueryError => deadlineError(started, scanned);
  const checkBudget = (): void => {
    if (scanned % BUDGET_CHECK_ROWS === 0 && performance.now() > deadline) throw overBudget();
  };
  const maxRows = options.maxRows ?? 1_000_000;
  const keep = (row: unknown): void => {
    if (rows.length >= maxRows) {
      throw new QueryError(
        `more than ${maxRows} matching rows to hold for sort or stats; narrow the query with a time range or a filter on an indexed field`,
        0,
        [],
        'QueryError',
      );
    }
    rows.push(row);
  };
  const first = rest[0];
  const sqlStats = first?.type === 'stats' && plan.stats ? statsInSql(db, first, plan.stats) : undefined;
  if (sqlStats) {
    scanned = sqlStats.scanned;
    // SQLite stops the scan at the deadline; a sort or grouping after it that ran past still fails.
    if (performance.now() > deadline) throw overBudget();
  } else if (useRecord) {
    const { stmt, params } = prepare(db, scanSql(plan.scan));
    get = recordGetter;
    for (const r of stmt.iterate(...params) as Iterable<{ doc: string }>) {
      scanned++;
      checkBudget();
      const rec = JSON.parse(r.doc) as SpanRecord;
      if (filter && !evaluate(filter, rec, get)) continue;
      keep(rec);
      if (rows.length >= stopAfter) break;
    }
  } else {
    const { stmt, params } = prepare(db, scanSql(plan.scan));
    const json = plan.json;
    get = (row, path) => {
      const i = index.get(path);
      return i === undefined ? undefined : (row as unknown[])[i];
    };
    const n = paths.length;
    // Rows as arrays: no per-row object or column-name lookups on the hot path.
    stmt.setReturnArrays(true);
    for (const arr of stmt.iterate(...params) as Iterable<unknown[]>) {
      scanned++;
      checkBudget();
      for (let i = 0; i < n; i++) {
        const v = arr[i];
        if (v === null) arr[i] = undefined;
        else if (json[i] && typeof v === 'string') {
          // Plain JSON strings (the common case) without a full parse.
          arr[i] = v.charCodeAt(0) === 34 && !v.includes('\\') ? v.slice(1, -1) : JSON.parse(v);
        }
      }
      if (filter && !evaluate(filter, arr, get)) continue;
      keep(arr);
      if (rows.length >= stopAfter) break;
    }
  }

  return finishQuery(
    plan,
    { rows, get, scanned, ...(sqlStats ? { statsRows: sqlStats.rows } : {}) },
    started,
  );
}

/** What a store's scan of a plan produced, for finishQuery. */
export interface ScanResult {
  /** Rows the scan kept (after the plan's residual filter), read through `get`. */
  rows: unknown[];
  get: Getter;
  /** Rows read from the store. */
  scanned: number;
  /** The first `stats` command's rows when the store ran it as a grouped aggregate (plan.stats). */
  statsRows?: Record<string, unknown>[];
}

/**
 * Runs the commands after a plan's scan over its rows, in order (the part every store shares),
 * and shapes the answer.
 */
export function finishQuery(plan: QueryPlan, scan: ScanResult, started: number): QueryResponse {
  const { rest, sortedBySql, limit } = plan;
  const lastSort = rest.filter((c) => c.type === 'sort').at(-1);
  const first = rest[0];
  const calcs = calcsOf(plan.commands);
  let { rows } = scan;
  let get = withCalcs(scan.get, calcs);
  const { scanned } = scan;
  let kind: QueryResponse['kind'] = 'spans';
  let columns: string[] = DEFAULT_COLUMNS;
  let projected = false;
  let timeColumn: string | undefined;
  for (const cmd of rest) {
    switch (cmd.type) {
      case 'filter':
        rows = rows.filter((r) => evaluate(cmd.expr, r, get));
        break;
      case 'fields': {
        const g = get;
        rows = rows.map((r) => {
          const o: Record<string, unknown> = {};
          for (const item of cmd.items) o[item.name] = g(r, item.path) ?? null;
          return o;
        });
        columns = cmd.items.map((i) => i.name);
        get = withCalcs(objectGetter, calcs);
        projected = true;
        break;
      }
      case 'stats': {
        const g = get;
        if (cmd === first && scan.statsRows) rows = scan.statsRows;
        else rows = statsInJs(cmd, rows, g);
        const bin = cmd.by.findIndex((b) => b.type === 'bin');
        if (bin >= 0) {
          timeColumn = cmd.by[bin]!.name;
          const tc = timeColumn;
          rows.sort((a, b) =>
            sortCompare((a as Record<string, unknown>)[tc], (b as Record<string, unknown>)[tc]),
          );
        } else if (cmd.aggs[0]) {
          const first = cmd.aggs[0].name;
          rows.sort((a, b) =>
            sortCompare((b as Record<string, unknown>)[first], (a as Record<string, unknown>)[first]),
          );
        }
        columns = [...cmd.by.map((b) => b.name), ...cmd.aggs.map((a) => a.name)];
        get = withCalcs(objectGetter, calcs);
        kind = 'stats';
        projected = true;
        break;
      }
      case 'sort': {
        const g = get;
        const keys = cmd.keys;
        if (!(sortedBySql && cmd === lastSort)) {
          rows.sort((a, b) => {
            for (const k of keys) {
              const c = sortCompare(g(a, k.path), g(b, k.path));
              if (c) return k.desc ? -c : c;
            }
            return 0;
          });
        }
        break;
      }
      case 'limit':
        rows = rows.slice(0, cmd.n);
        break;
    }
  }
  if (!lastSort && !sortedBySql && kind === 'spans') {
    const g = get;
    rows.sort((a, b) => -sortCompare(g(a, '@timestamp'), g(b, '@timestamp')));
  }
  if (Number.isFinite(limit)) rows = rows.slice(0, limit);
  if (!projected) {
    const g = get;
    rows = rows.map((r) => {
      const o: Record<string, unknown> = {};
      for (const c of DEFAULT_COLUMNS) o[c] = g(r, c) ?? null;
      return o;
    });
  }
  const response: QueryResponse = {
    kind,
    columns,
    rows: rows as Record<string, AttributeValue>[],
    scanned,
    elapsedMs: Math.round((performance.now() - started) * 100) / 100,
  };
  if (timeColumn) response.timeColumn = timeColumn;
  return response;
}

export { QueryError };
