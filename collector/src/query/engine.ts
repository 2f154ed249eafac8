import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import { KIND_NAMES, STATUS_NAMES } from '../otlp/records.js';
import { HOT_ATTRIBUTES } from '../store/schema.js';
import type { AttributeValue, QueryResponse, SpanRecord } from '../wire-types.js';
import type { Command, Expr, Literal } from './ast.js';
import { type Getter, accumulator, evaluate, sortCompare } from './evaluate.js';
import { resolveField } from './fields.js';
import { parseQuery } from './parser.js';
import { QueryError } from './query-error.js';

export interface QueryOptions {
  /** Only spans starting at or after this epoch-ms time. */
  startMs?: number;
  /** Only spans starting before this epoch-ms time. */
  endMs?: number;
  /**
   * Give up (QueryError) once the scan has run this long. Queries run on the collector's event loop,
   * so an unbounded scan would hold up ingest; default 30 s.
   */
  maxQueryMs?: number;
}

/** How many rows are read between two checks of the time budget. */
const BUDGET_CHECK_ROWS = 256;

/** Rows returned when a query has no `limit`. */
export const DEFAULT_LIMIT = 1000;

/** Columns of a span result without `fields`; `@message` carries the whole record. */
export const DEFAULT_COLUMNS = [
  '@timestamp',
  'traceId',
  'spanId',
  'name',
  'resource.attributes.service.name',
  'durationNano',
  'status.code',
  '@message',
];

interface Column {
  sql: string;
  kind: 'text' | 'number';
  /** The column holds exactly the field's value (not a superset used only to narrow). */
  exact: boolean;
  /** Scale from the query's unit to the column's (ms → µs for @timestamp). */
  scale?: number;
  /** A GenAI attribute column (nullable; usable only while no span has an odd value there). */
  hot?: boolean;
}

// Fields with a column of their own. `attributes.session.id` narrows by the session column (which
// also holds gen_ai.conversation.id) and is then checked exactly on the record.
const COLUMNS: Record<string, Column> = {
  traceId: { sql: 'trace_id', kind: 'text', exact: true },
  spanId: { sql: 'span_id', kind: 'text', exact: true },
  parentSpanId: { sql: 'parent_span_id', kind: 'text', exact: true },
  name: { sql: 'name', kind: 'text', exact: true },
  kind: { sql: 'kind', kind: 'text', exact: true },
  'status.code': { sql: 'status', kind: 'text', exact: true },
  durationNano: { sql: 'duration_ns', kind: 'number', exact: true },
  '@timestamp': { sql: 'start_us', kind: 'number', exact: true, scale: 1000 },
  'resource.attributes.service.name': { sql: 'service', kind: 'text', exact: true },
  'attributes.session.id': { sql: 'session_id', kind: 'text', exact: false },
};
const HOT_COLUMNS: Record<string, Column> = Object.fromEntries(
  HOT_ATTRIBUTES.map((h) => [`attributes.${h.key}`, { sql: h.column, kind: h.kind, exact: true, hot: true }]),
);
const WITH_HOT: Record<string, Column> = { ...COLUMNS, ...HOT_COLUMNS };

/**
 * The columns usable for this database: the GenAI columns too unless some span holds a value of an
 * unexpected type there (then those fields are read from the records, as before they had columns).
 */
function columnsOf(db: DatabaseSync): Record<string, Column> {
  const odd = db.prepare('SELECT 1 FROM spans WHERE hot_odd = 1 LIMIT 1').get();
  return odd ? COLUMNS : WITH_HOT;
}
const NOT_NULL = new Set(['trace_id', 'span_id', 'name', 'kind', 'status', 'duration_ns', 'start_us']);

function normalizeEnum(field: string, v: Literal): Literal {
  const names: readonly string[] | undefined =
    field === 'status.code' ? STATUS_NAMES : field === 'kind' ? KIND_NAMES : undefined;
  if (!names)
    return field === 'traceId' || field === 'spanId' || field === 'parentSpanId'
      ? typeof v === 'string'
        ? v.toLowerCase()
        : v
      : v;
  if (typeof v === 'number') return names[v] ?? v;
  if (typeof v === 'string') {
    const up = v.toUpperCase().replace(/^(STATUS_CODE_|SPAN_KIND_)/, '');
    return names.includes(up) ? up : v;
  }
  return v;
}

/** Rewrites enum/id literals to their stored form so `status.code = 2` means ERROR. */
function normalize(expr: Expr): Expr {
  switch (expr.type) {
    case 'cmp':
      return { ...expr, value: normalizeEnum(expr.field, expr.value) };
    case 'in':
      return { ...expr, values: expr.values.map((v) => normalizeEnum(expr.field, v)) };
    case 'and':
    case 'or':
      return { ...expr, left: normalize(expr.left), right: normalize(expr.right) };
    case 'not':
      return { ...expr, expr: normalize(expr.expr) };
    default:
      return expr;
  }
}

function conjuncts(expr: Expr): Expr[] {
  return expr.type === 'and' ? [...conjuncts(expr.left), ...conjuncts(expr.right)] : [expr];
}

/** SQL for a conjunct on an indexed column, or undefined. `exact` says whether it can be dropped. */
function pushdown(
  e: Expr,
  cols: Record<string, Column>,
): { sql: string; params: SQLInputValue[]; exact: boolean } | undefined {
  if (e.type === 'present') {
    const c = cols[e.field];
    if (!c?.exact) return undefined;
    return { sql: `${c.sql} IS ${e.negate ? '' : 'NOT '}NULL`, params: [], exact: true };
  }
  if (e.type !== 'cmp' && e.type !== 'in') return undefined;
  const col = cols[e.field];
  if (!col) return undefined;
  const values = e.type === 'cmp' ? [e.value] : e.values;
  if (!values.every((v) => (col.kind === 'number' ? typeof v === 'number' : typeof v === 'string'))) {
    return undefined;
  }
  const scaled = values.map((v) =>
    col.scale ? Math.floor((v as number) * col.scale) : v,
  ) as SQLInputValue[];
  if (e.type === 'in') {
    if (e.negate || !values.length) return undefined;
    return { sql: `${col.sql} IN (${values.map(() => '?').join(', ')})`, params: scaled, exact: col.exact };
  }
  if (e.op === '!=' && !NOT_NULL.has(col.sql)) return undefined;
  // A scaled (ms → µs) bound is inexact; keep the row check.
  if (col.scale && e.op === '=') return undefined;
  return { sql: `${col.sql} ${e.op} ?`, params: scaled, exact: col.exact && !col.scale };
}

const SIMPLE_SEGMENT = /^[A-Za-z0-9_]+$/;

/** The SQL expression of an exact column (scaled to the query's unit), or undefined. */
function columnExpr(
  path: string,
  cols: Record<string, Column>,
): { sql: string; kind: Column['kind'] } | undefined {
  const c = cols[path];
  if (!c?.exact) return undefined;
  return { sql: c.scale ? `(${c.sql} / ${c.scale}.0)` : c.sql, kind: c.kind };
}

/** SQL that extracts a field without parsing the whole record, or undefined when it needs the record. */
function extractSql(path: string, cols: Record<string, Column>): { sql: string; json: boolean } | undefined {
  const col = columnExpr(path, cols);
  if (col) return { sql: col.sql, json: false };
  const quote = (k: string): string | undefined => (/["\\]/.test(k) ? undefined : `"${k}"`);
  for (const prefix of ['resource.attributes.', 'attributes.']) {
    if (path.startsWith(prefix)) {
      const key = path.slice(prefix.length);
      const q = quote(key);
      if (!q || !key) return undefined;
      const base = `$.${prefix.slice(0, -1)}`;
      const flat = `doc -> '${base}.${q}'`;
      // Dotted keys are looked up whole first; nested (kvlist) lookups are a fallback.
      if (!key.includes('.') || !key.split('.').every((s) => SIMPLE_SEGMENT.test(s)))
        return { sql: flat, json: true };
      return { sql: `coalesce(${flat}, doc -> '${base}.${key}')`, json: true };
    }
  }
  if (path === '@message') return undefined;
  const segments = path.split('.');
  if (!segments.every((s) => SIMPLE_SEGMENT.test(s))) return undefined;
  return { sql: `doc -> '$.${path}'`, json: true };
}

function fieldsOf(cmd: Command): string[] {
  const out: string[] = [];
  const walk = (e: Expr): void => {
    if (e.type === 'and' || e.type === 'or') {
      walk(e.left);
      walk(e.right);
    } else if (e.type === 'not') walk(e.expr);
    else if ('field' in e) out.push(e.field);
  };
  switch (cmd.type) {
    case 'filter':
      walk(cmd.expr);
      break;
    case 'fields':
      out.push(...cmd.items.map((i) => i.path));
      break;
    case 'stats':
      for (const a of cmd.aggs) if (a.field) out.push(a.field);
      for (const b of cmd.by) out.push(b.type === 'bin' ? '@timestamp' : b.path);
      break;
    case 'sort':
      out.push(...cmd.keys.map((k) => k.path));
      break;
    default:
  }
  return out;
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
 * durations by model), else one window-function pass. Undefined when the command needs records.
 */
function statsInSql(
  db: DatabaseSync,
  cmd: StatsCommand,
  where: readonly string[],
  params: readonly SQLInputValue[],
  cols: Record<string, Column>,
): { rows: Record<string, unknown>[]; scanned: number } | undefined {
  const keys: string[] = [];
  for (const b of cmd.by) {
    if (b.type === 'bin') {
      const us = b.ms * 1000;
      if (!Number.isSafeInteger(us) || us <= 0) return undefined;
      keys.push(`((start_us / ${us}) * ${b.ms})`);
    } else {
      const c = columnExpr(b.path, cols);
      if (!c) return undefined;
      keys.push(c.sql);
    }
  }
  const aggs: string[] = [];
  const pcts: { i: number; sql: string; p: number }[] = [];
  for (const [i, a] of cmd.aggs.entries()) {
    if (!a.field) {
      aggs.push('count(*)');
      continue;
    }
    const c = columnExpr(a.field, cols);
    if (!c) return undefined;
    if (a.fn === 'count') aggs.push(`count(${c.sql})`);
    else if (a.fn === 'count_distinct') aggs.push(`count(DISTINCT ${c.sql})`);
    else if (c.kind !== 'number')
      return undefined; // numeric strings: the JS path converts them
    else if (a.fn === 'pct') {
      aggs.push(`count(${c.sql})`);
      pcts.push({ i, sql: c.sql, p: a.p! });
    } else aggs.push(a.fn === 'sum' ? `total(${c.sql})` : `${a.fn}(${c.sql})`);
  }
  const whereSql = where.length ? ` WHERE ${where.join(' AND ')}` : '';
  const keyNames = keys.map((_, i) => `k${i}`);
  const select = [
    ...keys.map((k, i) => `${k} AS k${i}`),
    ...aggs.map((a, i) => `${a} AS a${i}`),
    'count(*) AS n',
  ];
  const grouped = keys.length ? ` GROUP BY ${keyNames.join(', ')} ORDER BY min(id)` : '';
  const stmt = db.prepare(`SELECT ${select.join(', ')} FROM spans${whereSql}${grouped}`);
  stmt.setReturnArrays(true);
  const raw = stmt.all(...params) as unknown as unknown[][];
  const nk = keys.length;
  let scanned = 0;
  for (const r of raw) scanned += r[nk + aggs.length] as number;

  for (const pct of pcts) {
    const col = nk + pct.i;
    const rank = (n: number): number => Math.max(1, Math.ceil((pct.p / 100) * n));
    const groupWhere = (r: unknown[]): string =>
      [
        ...where,
        ...keys.map((k, i) => (r[i] === null ? `${k} IS NULL` : `${k} = ?`)),
        `${pct.sql} IS NOT NULL`,
      ].join(' AND ');
    // One group's k-th value: SQLite's percentile_disc() where the build has it (one pass that
    // collects and sorts in C), else an ORDER BY … OFFSET. Either is cheap when an index narrows
    // the scan to the group (or delivers the values in order); the other groups (the one of spans
    // without the key, say, or bin() groups) need a pass each: with several of them, one
    // window-function pass over all of them is cheaper.
    const disc = hasPercentileDisc(db);
    const kth = (r: unknown[]): { sql: string; args: SQLInputValue[] } => {
      const n = r[col] as number;
      const k = rank(n) - 1;
      const groupArgs = [...params, ...(r.slice(0, nk).filter((v) => v !== null) as SQLInputValue[])];
      return disc
        ? {
            sql: `SELECT percentile_disc(${pct.sql}, ?) FROM spans WHERE ${groupWhere(r)}`,
            args: [discFraction(k, n), ...groupArgs],
          }
        : {
            sql: `SELECT ${pct.sql} FROM spans WHERE ${groupWhere(r)} ORDER BY ${pct.sql} LIMIT 1 OFFSET ?`,
            args: [...groupArgs, k],
          };
    };
    const plans = new Map<string, boolean>();
    const cheap = (sql: string, args: SQLInputValue[]): boolean => {
      let ok = plans.get(sql);
      if (ok === undefined) {
        const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[];
        // percentile_disc(): an index search by equality (the group's key, a session); a search
        // by a range alone (a time window) can cover the whole table.
        ok = disc
          ? !plan.some((p) => p.detail.startsWith('SCAN')) && plan.some((p) => /[^<>!]=\?/.test(p.detail))
          : !plan.some((p) => p.detail.includes('TEMP B-TREE'));
        plans.set(sql, ok);
      }
      return ok;
    };
    const jobs = raw
      .filter((r) => (r[col] as number) > 0)
      .map((r) => {
        const { sql, args } = kth(r);
        return { r, sql, args, walk: cheap(sql, args) };
      });
    for (const r of raw) if (!((r[col] as number) > 0)) r[col] = null;
    const sorts = jobs.filter((j) => !j.walk);
    for (const j of sorts.length > 1 ? jobs.filter((x) => x.walk) : jobs) {
      const one = db.prepare(j.sql);
      one.setReturnArrays(true);
      j.r[col] = (one.get(...j.args) as unknown as unknown[])[0];
    }
    if (sorts.length <= 1) continue;
    // No index in that order: one sort of all the groups' values, picking each group's rank.
    const part = keys.length ? `PARTITION BY ${keys.join(', ')}` : '';
    const win = db.prepare(
      `SELECT ${[...keyNames, 'v'].join(', ')} FROM (SELECT ${[...keys.map((k, i) => `${k} AS k${i}`), `${pct.sql} AS v`].join(', ')},
        row_number() OVER (${part} ORDER BY ${pct.sql}) AS rn, count(*) OVER (${part}) AS c
        FROM spans WHERE ${[...where, `${pct.sql} IS NOT NULL`].join(' AND ')})
      WHERE rn = max(1, ceil((${pct.p} / 100.0) * c))`,
    );
    win.setReturnArrays(true);
    const found = new Map<string, unknown>();
    for (const w of win.all(...params) as unknown as unknown[][])
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

const recordGetter: Getter = (row, path) => resolveField(row as SpanRecord, path);
const objectGetter: Getter = (row, path) =>
  Object.hasOwn(row as object, path) ? (row as Record<string, unknown>)[path] : undefined;

/** Parses and runs a query over the span table. Throws QueryError for bad queries. */
export function runQuery(db: DatabaseSync, query: string, options: QueryOptions = {}): QueryResponse {
  const started = performance.now();
  const commands = parseQuery(query).map((c) =>
    c.type === 'filter' ? { ...c, expr: normalize(c.expr) } : c,
  );
  const cols = columnsOf(db);

  // Leading filters run (partly) in SQL; everything after runs in order over the rows.
  let lead = 0;
  while (commands[lead]?.type === 'filter') lead++;
  const where: string[] = [];
  const params: SQLInputValue[] = [];
  const residual: Expr[] = [];
  for (const cmd of commands.slice(0, lead)) {
    for (const c of conjuncts((cmd as { expr: Expr }).expr)) {
      const p = pushdown(c, cols);
      if (p) {
        where.push(p.sql);
        params.push(...p.params);
      }
      if (!p?.exact) residual.push(c);
    }
  }
  if (options.startMs !== undefined) {
    where.push('start_us >= ?');
    params.push(Math.floor(options.startMs * 1000));
  }
  if (options.endMs !== undefined) {
    where.push('start_us < ?');
    params.push(Math.floor(options.endMs * 1000));
  }
  const rest = commands.slice(lead);
  const hasStats = rest.some((c) => c.type === 'stats');
  const hasFields = rest.some((c) => c.type === 'fields');

  // Which fields to read: columns and JSON paths when possible, the whole record otherwise.
  const paths = [...new Set(commands.flatMap(fieldsOf))];
  if (!hasStats && !hasFields) paths.push(...DEFAULT_COLUMNS);
  const extracts = paths.map((p) => extractSql(p, cols));
  const useRecord = extracts.some((e) => e === undefined);
  const index = new Map(paths.map((p, i) => [p, i]));

  // Streaming with an SQL order and early stop works when nothing regroups or refilters later.
  const sorts = rest.filter((c) => c.type === 'sort');
  const lastSort = sorts[sorts.length - 1];
  const limits = rest.filter((c) => c.type === 'limit').map((c) => c.n);
  const limit = limits.length ? Math.min(...limits) : hasStats ? Infinity : DEFAULT_LIMIT;
  const aliases = new Set(
    rest.flatMap((c) =>
      c.type === 'fields' ? c.items.filter((i) => i.name !== i.path).map((i) => i.name) : [],
    ),
  );
  const streamable = !hasStats && !rest.some((c) => c.type === 'filter');
  let orderSql = '';
  let sortedBySql = false;
  if (streamable) {
    const keys = lastSort ? lastSort.keys : [{ path: '@timestamp', desc: true }];
    // Not the nullable GenAI columns: SQL sorts NULL first, the query language sorts missing last.
    const order = keys.map((k) => (aliases.has(k.path) ? undefined : COLUMNS[k.path]));
    if (order.every((c) => c?.exact)) {
      orderSql = ` ORDER BY ${order.map((c, i) => `${c!.sql} ${keys[i]!.desc ? 'DESC' : 'ASC'}`).join(', ')}, id`;
      sortedBySql = true;
    }
  }
  const stopAfter = sortedBySql ? limit : Infinity;
  const select = useRecord ? 'doc' : extracts.map((e, i) => `${e!.sql} AS c${i}`).join(', ') || '1 AS c0';
  const sqlLimit = sortedBySql && !residual.length && Number.isFinite(limit) ? ` LIMIT ${limit}` : '';
  const sql = `SELECT ${select} FROM spans${where.length ? ` WHERE ${where.join(' AND ')}` : ''}${orderSql}${sqlLimit}`;

  let get: Getter = objectGetter;
  let rows: unknown[] = [];
  let scanned = 0;
  const filter = residual.length
    ? residual.reduce((l, r): Expr => ({ type: 'and', left: l, right: r, pos: r.pos }))
    : undefined;
  const deadline = started + (options.maxQueryMs ?? 30_000);
  const overBudget = (): QueryError =>
    new QueryError(
      `query stopped after ${Math.round(performance.now() - started)} ms and ${scanned} records; narrow it with a time range or a filter on an indexed field (attributes.session.id, traceId, name, resource.attributes.service.name, durationNano, @timestamp)`,
      0,
      [],
      'QueryError',
    );
  const checkBudget = (): void => {
    if (scanned % BUDGET_CHECK_ROWS === 0 && performance.now() > deadline) throw overBudget();
  };
  const first = rest[0];
  const sqlStats =
    first?.type === 'stats' && !residual.length ? statsInSql(db, first, where, params, cols) : undefined;
  if (sqlStats) {
    scanned = sqlStats.scanned;
    // One SQL statement cannot be interrupted half-way; a query over its budget still fails.
    if (performance.now() > deadline) throw overBudget();
  } else if (useRecord) {
    const stmt = db.prepare(sql);
    get = recordGetter;
    for (const r of stmt.iterate(...params) as Iterable<{ doc: string }>) {
      scanned++;
      checkBudget();
      const rec = JSON.parse(r.doc) as SpanRecord;
      if (filter && !evaluate(filter, rec, get)) continue;
      rows.push(rec);
      if (rows.length >= stopAfter) break;
    }
  } else {
    const stmt = db.prepare(sql);
    const json = extracts.map((e) => e!.json);
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
      rows.push(arr);
      if (rows.length >= stopAfter) break;
    }
  }

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
        get = objectGetter;
        projected = true;
        break;
      }
      case 'stats': {
        const g = get;
        if (cmd === first && sqlStats) rows = sqlStats.rows;
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
        get = objectGetter;
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
