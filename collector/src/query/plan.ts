import { KIND_NAMES, STATUS_NAMES } from '../otlp/records.js';
import { calcFields } from './calc.js';
import { HOT_ATTRIBUTES } from './fields.js';
import { checkFieldNames } from './known-fields.js';
import type { AggFn, CmpOp, Command, Expr, Literal } from './ast.js';

/**
 * The query plan: what a query reads, filters, groups and orders, apart from any SQL dialect. It
 * names columns only from the closed set below and carries user values as values (never as text
 * to splice), so an executor renders it with its own identifier quoting and bound parameters
 * (sqlite-sql.ts for SQLite; a ClickHouse executor can render the same plan).
 */

/** Columns of the `spans` table a plan may name (a closed set: nothing else reaches SQL). */
export const SPAN_COLUMNS = [
  'id',
  'trace_id',
  'span_id',
  'parent_span_id',
  'name',
  'kind',
  'status',
  'duration_ns',
  'start_us',
  'service',
  'session_id',
  'doc',
  ...HOT_ATTRIBUTES.map((h) => h.column),
] as const;
export type SpanColumn = (typeof SPAN_COLUMNS)[number];
const SPAN_COLUMN_SET: ReadonlySet<string> = new Set(SPAN_COLUMNS);

/** Whether a name is one of SPAN_COLUMNS. */
export function isSpanColumn(name: string): name is SpanColumn {
  return SPAN_COLUMN_SET.has(name);
}

/** A bound value: text, a number (REAL), an integer (bigint, for integer arithmetic) or null. */
export type PlanValue = string | number | bigint | null;

/** A value read per row. */
export type ValueExpr =
  /** A column; `divisor` scales it to the query's unit (start_us / 1000 = @timestamp in ms). */
  | { type: 'column'; column: SpanColumn; divisor?: number }
  /**
   * A field of the stored JSON record. `path` are JSON object keys from the record's root
   * (`['attributes', 'gen_ai.request.model']`); `fallback`, when set, is a second path tried when
   * the first is missing (dotted keys looked up nested, for kvlist values).
   */
  | { type: 'json'; path: string[]; fallback?: string[] }
  /** Start time (µs) floored to a bin of `ms` milliseconds, in epoch ms. */
  | { type: 'bin'; column: 'start_us'; us: bigint; ms: bigint };

/** A row condition. */
export type Predicate =
  | { type: 'cmp'; value: ValueExpr; op: CmpOp; operand: PlanValue }
  | { type: 'in'; value: ValueExpr; operands: PlanValue[] }
  | { type: 'null'; value: ValueExpr; negate: boolean };

/** Reads rows of `spans` (leading filters pushed down), in an order, up to a limit. */
export interface ScanPlan {
  where: Predicate[];
  /** The whole record (`doc`), or these values in this order. */
  select: { type: 'doc' } | { type: 'values'; values: ValueExpr[] };
  /** SQL order (then by `id`), or none. */
  order: { value: ValueExpr; desc: boolean }[];
  limit?: number;
}

export interface PlanAgg {
  fn: AggFn;
  /** Absent for count(*). */
  value?: ValueExpr;
  /** Percentile for pct(). */
  p?: number;
}

/** A `stats` command run as one grouped aggregate over columns (no record read). */
export interface StatsPlan {
  where: Predicate[];
  keys: ValueExpr[];
  aggs: PlanAgg[];
}

export interface QueryPlan {
  commands: Command[];
  /** The commands after the leading filters, run in order over the scanned rows. */
  rest: Command[];
  /** Field paths read per row: the scan's selected values in this order (unless it reads `doc`). */
  paths: string[];
  /** Which selected values are JSON text to decode (false: a column value). */
  json: boolean[];
  scan: ScanPlan;
  /** Conditions of the leading filters not (exactly) pushed down, checked per row. */
  residual?: Expr;
  /** Set when the first `stats` runs as one grouped aggregate. */
  stats?: StatsPlan;
  /** The scan is already in the last `sort`'s order. */
  sortedBySql: boolean;
  /** Stop scanning after this many matching rows (Infinity: read all). */
  stopAfter: number;
  /** Rows in the answer (Infinity for stats without a limit). */
  limit: number;
}

export interface PlanOptions {
  startMs?: number;
  endMs?: number;
  /** The GenAI columns hold every span's value (no `hot_odd` row): usable for fields. */
  hotColumns: boolean;
}

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
  column: SpanColumn;
  kind: 'text' | 'number';
  /** The column holds exactly the field's value (not a superset used only to narrow). */
  exact: boolean;
  /** Scale from the query's unit to the column's (ms → µs for @timestamp). */
  scale?: number;
}

// Fields with a column of their own. `attributes.session.id` narrows by the session column (which
// also holds gen_ai.conversation.id) and is then checked exactly on the record.
const COLUMNS: Record<string, Column> = {
  traceId: { column: 'trace_id', kind: 'text', exact: true },
  spanId: { column: 'span_id', kind: 'text', exact: true },
  parentSpanId: { column: 'parent_span_id', kind: 'text', exact: true },
  name: { column: 'name', kind: 'text', exact: true },
  kind: { column: 'kind', kind: 'text', exact: true },
  'status.code': { column: 'status', kind: 'text', exact: true },
  durationNano: { column: 'duration_ns', kind: 'number', exact: true },
  '@timestamp': { column: 'start_us', kind: 'number', exact: true, scale: 1000 },
  'resource.attributes.service.name': { column: 'service', kind: 'text', exact: true },
  'attributes.session.id': { column: 'session_id', kind: 'text', exact: false },
};
const WITH_HOT: Record<string, Column> = {
  ...COLUMNS,
  ...Object.fromEntries(
    HOT_ATTRIBUTES.map((h) => [`attributes.${h.key}`, { column: h.column, kind: h.kind, exact: true }]),
  ),
};
const NOT_NULL = new Set<SpanColumn>([
  'trace_id',
  'span_id',
  'name',
  'kind',
  'status',
  'duration_ns',
  'start_us',
]);

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

function conjuncts(expr: Expr, out: Expr[] = []): Expr[] {
  if (expr.type === 'and') {
    conjuncts(expr.left, out);
    conjuncts(expr.right, out);
  } else out.push(expr);
  return out;
}

const columnValue = (c: Column): ValueExpr => ({ type: 'column', column: c.column });

/** The predicate of a conjunct on an indexed column, or undefined. `exact` says whether it can be dropped. */
function pushdown(e: Expr, cols: Record<string, Column>): { p: Predicate; exact: boolean } | undefined {
  if (e.type === 'present') {
    const c = cols[e.field];
    if (!c?.exact) return undefined;
    return { p: { type: 'null', value: columnValue(c), negate: !e.negate }, exact: true };
  }
  if (e.type !== 'cmp' && e.type !== 'in') return undefined;
  const col = cols[e.field];
  if (!col) return undefined;
  const values = e.type === 'cmp' ? [e.value] : e.values;
  if (!values.every((v) => (col.kind === 'number' ? typeof v === 'number' : typeof v === 'string'))) {
    return undefined;
  }
  const scaled = values.map((v) => (col.scale ? Math.floor((v as number) * col.scale) : (v as PlanValue)));
  if (e.type === 'in') {
    if (e.negate || !values.length) return undefined;
    return { p: { type: 'in', value: columnValue(col), operands: scaled }, exact: col.exact };
  }
  if (e.op === '!=' && !NOT_NULL.has(col.column)) return undefined;
  // A scaled (ms → µs) bound is inexact; keep the row check.
  if (col.scale && e.op === '=') return undefined;
  return {
    p: { type: 'cmp', value: columnValue(col), op: e.op, operand: scaled[0]! },
    exact: col.exact && !col.scale,
  };
}

const SIMPLE_SEGMENT = /^[A-Za-z0-9_]+$/;
/** Characters a JSON path label cannot carry in SQLite (`"` ends a quoted label; no escapes). */
const UNSAFE_KEY = /["\\\0]/;

/** The value of an exact column (scaled to the query's unit), or undefined. */
function columnExpr(
  path: string,
  cols: Record<string, Column>,
): { value: ValueExpr; kind: Column['kind'] } | undefined {
  const c = cols[path];
  if (!c?.exact) return undefined;
  return {
    value: c.scale ? { type: 'column', column: c.column, divisor: c.scale } : columnValue(c),
    kind: c.kind,
  };
}

/** How to read a field without parsing the whole record, or undefined when it needs the record. */
export function extractOf(
  path: string,
  cols: Record<string, Column>,
): { value: ValueExpr; json: boolean } | undefined {
  const col = columnExpr(path, cols);
  if (col) return { value: col.value, json: false };
  for (const prefix of ['resource.attributes.', 'attributes.']) {
    if (path.startsWith(prefix)) {
      const key = path.slice(prefix.length);
      if (!key || UNSAFE_KEY.test(key)) return undefined;
      const base = prefix.slice(0, -1).split('.');
      const value: ValueExpr = { type: 'json', path: [...base, key] };
      // Dotted keys are looked up whole first; nested (kvlist) lookups are a fallback.
      const segments = key.split('.');
      if (segments.length > 1 && segments.every((s) => SIMPLE_SEGMENT.test(s)))
        value.fallback = [...base, ...segments];
      return { value, json: true };
    }
  }
  if (path === '@message') return undefined;
  const segments = path.split('.');
  if (!segments.every((s) => SIMPLE_SEGMENT.test(s))) return undefined;
  return { value: { type: 'json', path: segments }, json: true };
}

function fieldsOf(cmd: Command): string[] {
  const out: string[] = [];
  const walk = (e: Expr): void => {
    // Left-deep chains (`a and b and c …`) iterate instead of recursing on the left.
    for (;;) {
      if (e.type === 'and' || e.type === 'or') {
        walk(e.right);
        e = e.left;
      } else if (e.type === 'not') e = e.expr;
      else {
        if ('field' in e) out.push(e.field);
        return;
      }
    }
  };
  switch (cmd.type) {
    case 'filter':
      walk(cmd.expr);
      break;
    case 'fields':
      for (const item of cmd.items) out.push(...(item.calc ? calcFields(item.calc) : [item.path]));
      break;
    case 'stats':
      for (const a of cmd.aggs) if (a.field) out.push(...(a.calc ? calcFields(a.calc) : [a.field]));
      for (const b of cmd.by) out.push(b.type === 'bin' ? '@timestamp' : b.path);
      break;
    case 'sort':
      for (const k of cmd.keys) out.push(...(k.calc ? calcFields(k.calc) : [k.path]));
      break;
    default:
  }
  return out;
}

/** The grouped aggregate of a `stats` command whose fields are all columns, or undefined. */
function statsPlanOf(
  cmd: Extract<Command, { type: 'stats' }>,
  where: Predicate[],
  cols: Record<string, Column>,
): StatsPlan | undefined {
  const keys: ValueExpr[] = [];
  for (const b of cmd.by) {
    if (b.type === 'bin') {
      const us = b.ms * 1000;
      if (!Number.isSafeInteger(us) || us <= 0 || !Number.isSafeInteger(b.ms)) return undefined;
      keys.push({ type: 'bin', column: 'start_us', us: BigInt(us), ms: BigInt(b.ms) });
    } else {
      const c = columnExpr(b.path, cols);
      if (!c) return undefined;
      keys.push(c.value);
    }
  }
  const aggs: PlanAgg[] = [];
  for (const a of cmd.aggs) {
    if (!a.field) {
      aggs.push({ fn: 'count' });
      continue;
    }
    if (a.calc) return undefined; // arithmetic runs in JS
    const c = columnExpr(a.field, cols);
    if (!c) return undefined;
    // Numeric strings: the JS path converts them.
    if (a.fn !== 'count' && a.fn !== 'count_distinct' && c.kind !== 'number') return undefined;
    aggs.push(a.fn === 'pct' ? { fn: a.fn, value: c.value, p: a.p! } : { fn: a.fn, value: c.value });
  }
  return { where, keys, aggs };
}

/** Plans a parsed query: pure, no database. */
export function planQuery(parsed: Command[], options: PlanOptions): QueryPlan {
  checkFieldNames(parsed);
  const commands = parsed.map((c) => (c.type === 'filter' ? { ...c, expr: normalize(c.expr) } : c));
  const cols = options.hotColumns ? WITH_HOT : COLUMNS;

  // Leading filters run (partly) in SQL; everything after runs in order over the rows.
  let lead = 0;
  while (commands[lead]?.type === 'filter') lead++;
  const where: Predicate[] = [];
  const residual: Expr[] = [];
  for (const cmd of commands.slice(0, lead)) {
    for (const c of conjuncts((cmd as { expr: Expr }).expr)) {
      const p = pushdown(c, cols);
      if (p) where.push(p.p);
      if (!p?.exact) residual.push(c);
    }
  }
  const start: ValueExpr = { type: 'column', column: 'start_us' };
  if (options.startMs !== undefined)
    where.push({ type: 'cmp', value: start, op: '>=', operand: Math.floor(options.startMs * 1000) });
  if (options.endMs !== undefined)
    where.push({ type: 'cmp', value: start, op: '<', operand: Math.floor(options.endMs * 1000) });
  const rest = commands.slice(lead);
  const hasStats = rest.some((c) => c.type === 'stats');
  const hasFields = rest.some((c) => c.type === 'fields');

  // Which fields to read: columns and JSON paths when possible, the whole record otherwise.
  const paths = [...new Set(commands.flatMap(fieldsOf))];
  if (!hasStats && !hasFields) paths.push(...DEFAULT_COLUMNS);
  const extracts = paths.map((p) => extractOf(p, cols));
  const useRecord = extracts.some((e) => e === undefined);

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
  const order: ScanPlan['order'] = [];
  let sortedBySql = false;
  if (streamable) {
    const keys = lastSort ? lastSort.keys : [{ path: '@timestamp', desc: true }];
    // Not the nullable GenAI columns: SQL sorts NULL first, the query language sorts missing last.
    const byColumn = keys.map((k) => (aliases.has(k.path) ? undefined : COLUMNS[k.path]));
    if (byColumn.every((c) => c?.exact)) {
      byColumn.forEach((c, i) => order.push({ value: columnValue(c!), desc: keys[i]!.desc }));
      sortedBySql = true;
    }
  }
  const scan: ScanPlan = {
    where,
    select: useRecord ? { type: 'doc' } : { type: 'values', values: extracts.map((e) => e!.value) },
    order,
  };
  if (sortedBySql && !residual.length && Number.isFinite(limit)) scan.limit = limit;
  const first = rest[0];
  const plan: QueryPlan = {
    commands,
    rest,
    paths,
    json: extracts.map((e) => e?.json ?? false),
    scan,
    sortedBySql,
    stopAfter: sortedBySql ? limit : Infinity,
    limit,
  };
  if (residual.length)
    plan.residual = residual.reduce((l, r): Expr => ({ type: 'and', left: l, right: r, pos: r.pos }));
  if (first?.type === 'stats' && !residual.length) {
    const stats = statsPlanOf(first, where, cols);
    if (stats) plan.stats = stats;
  }
  return plan;
}
