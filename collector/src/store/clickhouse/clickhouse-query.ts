// The ClickHouse executor of query plans (query/plan.ts): the same plan the SQLite executor runs,
// rendered as ClickHouse SQL. The scan and the grouped `stats` run in ClickHouse; the commands after
// them run in JS through the shared finishQuery, so both stores answer alike.
import { ClickHouseError } from '@clickhouse/client';
import { type ScanResult, finishQuery, objectGetter, recordGetter } from '../../query/engine.js';
import { QueryError } from '../../query/query-error.js';
import type { QueryOptions } from '../../query/engine.js';
import { evaluate, type Getter } from '../../query/evaluate.js';
import { resolveField } from '../../query/fields.js';
import { parseQuery } from '../../query/parser.js';
import {
  type PlanAgg,
  type Predicate,
  type QueryPlan,
  type StatsPlan,
  type ValueExpr,
  isSpanColumn,
  planQuery,
} from '../../query/plan.js';
import type { QueryErrorBody, QueryResponse, SpanRecord } from '../../wire-types.js';
import { dayOf, literal } from './rows.js';
import { ROLLUP_NULLABLE, ROLLUP_NUMBERS, ROLLUP_STATES } from './schema.js';

export interface ClickHouseQueryContext {
  select<T>(sql: string): Promise<T[]>;
  /** The spans table (Distributed with a cluster). */
  table: string;
  /** The span_rollup table (schema version 2), which answers `stats` it can without the spans. */
  rollupTable?: string;
  serverVersion: string;
}

/** Plan columns → ClickHouse expressions (absent strings are '' there, NULL in SQLite). */
const COLUMN_SQL: Record<string, string> = {
  trace_id: 'trace_id',
  span_id: 'span_id',
  parent_span_id: "nullIf(parent_span_id, '')",
  name: 'name',
  kind: 'kind',
  status: 'status',
  duration_ns: 'duration_ns',
  start_us: 'start_us',
  service: "nullIf(service, '')",
  session_id: "nullIf(session_id, '')",
  doc: 'doc',
  ga_model: 'ga_model',
  ga_operation: 'ga_operation',
  ga_provider: 'ga_provider',
  ga_input_tokens: 'ga_input_tokens',
  ga_output_tokens: 'ga_output_tokens',
};

/** Plan columns → span_rollup expressions, for the columns it keeps (no others reach it). */
const ROLLUP_COLUMN_SQL: Record<string, string> = {
  name: 'name',
  kind: 'kind',
  status: 'status',
  service: "nullIf(service, '')",
  start_us: '(start_s * 1000000)',
  ...Object.fromEntries(ROLLUP_NULLABLE.map((n) => [n.column, `if(${n.flag} = 1, NULL, ${n.value})`])),
};

type Columns = Record<string, string>;

function columnSql(name: string, cols: Columns = COLUMN_SQL): string {
  const sql = isSpanColumn(name) ? cols[name] : undefined;
  if (!sql) throw new TypeError(`no ClickHouse column for ${JSON.stringify(name)}`);
  return sql;
}

/** An attribute read from the key/value arrays: the value's JSON text, or NULL when absent. */
function attributeSql(path: readonly string[]): string | undefined {
  if (path.length === 2 && path[0] === 'attributes') {
    return `if(has(attr_keys, ${literal(path[1]!)}), attr_values[indexOf(attr_keys, ${literal(path[1]!)})], NULL)`;
  }
  if (path.length === 3 && path[0] === 'resource' && path[1] === 'attributes') {
    return `if(has(res_keys, ${literal(path[2]!)}), res_values[indexOf(res_keys, ${literal(path[2]!)})], NULL)`;
  }
  return undefined;
}

/**
 * SQL for a per-row value, or undefined when ClickHouse cannot read it without the whole record
 * (a JSON path outside the attribute maps).
 */
function valueSql(v: ValueExpr, cols: Columns = COLUMN_SQL): string | undefined {
  switch (v.type) {
    case 'column':
      // Float division, as SQLite divides by the bound (REAL) divisor: @timestamp keeps its µs.
      return v.divisor ? `(${columnSql(v.column, cols)} / ${literal(v.divisor)})` : columnSql(v.column, cols);
    case 'json':
      return attributeSql(v.path);
    case 'bin':
      return `(intDiv(${columnSql(v.column, cols)}, ${v.us}) * ${v.ms})`;
  }
}

function mustValueSql(v: ValueExpr, cols: Columns = COLUMN_SQL): string {
  const sql = valueSql(v, cols);
  if (sql === undefined) throw new TypeError(`no ClickHouse expression for ${JSON.stringify(v)}`);
  return sql;
}

const OPS = new Set(['=', '!=', '<', '<=', '>', '>=']);

function predicateSql(p: Predicate, cols: Columns = COLUMN_SQL): string {
  const v = mustValueSql(p.value, cols);
  switch (p.type) {
    case 'cmp':
      if (!OPS.has(p.op)) throw new TypeError(`not a comparison: ${JSON.stringify(p.op)}`);
      return `${v} ${p.op} ${literal(p.operand)}`;
    case 'in':
      return `${v} IN (${p.operands.map(literal).join(', ')})`;
    case 'null':
      return p.negate ? `isNotNull(${v})` : `isNull(${v})`;
  }
}

function whereSql(where: readonly Predicate[], cols: Columns = COLUMN_SQL, more: string[] = []): string {
  const all = [...where.map((p) => predicateSql(p, cols)), ...more];
  return all.length ? ` WHERE ${all.join(' AND ')}` : '';
}

function aggSql(a: PlanAgg): string {
  if (!a.value) return 'count()';
  const v = mustValueSql(a.value);
  const orNull = (e: string): string => `if(count(${v}) = 0, NULL, ${e})`;
  switch (a.fn) {
    case 'count':
      return `count(${v})`;
    case 'count_distinct':
      return `uniqExact(${v})`;
    case 'sum':
      return `ifNull(sum(${v}), 0)`;
    case 'avg':
      return orNull(`avg(${v})`);
    case 'min':
      return orNull(`min(${v})`);
    case 'max':
      return orNull(`max(${v})`);
    case 'pct':
      // Nearest rank, as the JS accumulator and the SQLite executor pick it (quantileExact picks
      // another index).
      return orNull(
        `arrayElement(arraySort(groupArray(${v})), toUInt64(greatest(1, ceil(${literal(a.p! / 100)} * count(${v})))))`,
      );
  }
}

/** span_rollup's state columns for a number column: [non-null count, sum, min, max]. */
function numberStates(column: string): [string, string, string, string] | undefined {
  const n = ROLLUP_NUMBERS.find((x) => x.column === column);
  if (!n) return undefined;
  // duration_ns is never NULL: its count is the span count.
  const count = n.column === 'duration_ns' ? 'countMerge(spans)' : `sumMerge(${n.prefix}_n)`;
  return [count, `sumMerge(${n.prefix}_sum)`, `minMerge(${n.prefix}_min)`, `maxMerge(${n.prefix}_max)`];
}

/** An aggregate over merged span_rollup states, as aggSql computes it over spans. */
function rollupAggSql(a: PlanAgg): string | undefined {
  if (!a.value) return 'countMerge(spans)';
  if (a.value.type !== 'column' || a.value.divisor) return undefined;
  const states = numberStates(a.value.column);
  if (!states) return undefined;
  const [count, sum, min, max] = states;
  const orNull = (e: string): string => `if(${count} = 0, NULL, ${e})`;
  switch (a.fn) {
    case 'count':
      return count;
    case 'sum':
      return sum;
    case 'avg':
      return orNull(`${sum} / ${count}`);
    case 'min':
      return orNull(min);
    case 'max':
      return orNull(max);
    default:
      return undefined;
  }
}

const ROLLUP_DIMENSIONS: ReadonlySet<string> = new Set([
  'name',
  'kind',
  'status',
  'service',
  ...ROLLUP_NULLABLE.map((n) => n.column),
]);

const isDimension = (v: ValueExpr): boolean =>
  v.type === 'column' && !v.divisor && ROLLUP_DIMENSIONS.has(v.column);

const US = 1_000_000n;
const floorDiv = (a: bigint, b: bigint): bigint => (a >= 0n ? a / b : -((-a + b - 1n) / b));
const ceilDiv = (a: bigint, b: bigint): bigint => -floorDiv(-a, b);

/** An integer µs bound from a start_us operand: the first integer ≥ it (`ceil`) or ≤ it. */
function intBound(v: unknown, ceil: boolean): bigint | undefined {
  if (typeof v === 'bigint') return v;
  if (typeof v !== 'number' || !Number.isFinite(v)) return undefined;
  return BigInt(ceil ? Math.ceil(v) : Math.floor(v));
}

/**
 * How span_rollup answers a stats plan, or undefined when it cannot: every filter on a rollup
 * dimension or a start-time bound, every group a dimension or a bin of whole seconds, every
 * aggregate count(*) or count/sum/avg/min/max of a number column. The whole seconds inside the time
 * bounds come from the rollup; the fractions of a second at the bounds (`edges`, start_us ranges)
 * from the spans, merged as aggregate states so the answer is exactly the spans'.
 */
function rollupPlan(
  plan: QueryPlan,
  stats: StatsPlan,
): { dims: Predicate[]; fromS?: bigint; toS?: bigint; edges: [bigint, bigint][] } | undefined {
  if (plan.residual) return undefined;
  let lo: bigint | undefined;
  let hi: bigint | undefined;
  const dims: Predicate[] = [];
  for (const p of stats.where) {
    if (isDimension(p.value)) {
      dims.push(p);
      continue;
    }
    if (p.value.type !== 'column' || p.value.column !== 'start_us' || p.value.divisor || p.type !== 'cmp')
      return undefined;
    // start_us is an integer: start_us >= x ⇔ >= ceil(x); > x ⇔ >= floor(x) + 1; < x ⇔ < ceil(x).
    const b =
      p.op === '>=' || p.op === '<'
        ? intBound(p.operand, true)
        : p.op === '>' || p.op === '<='
          ? intBound(p.operand, false)
          : undefined;
    if (b === undefined) return undefined;
    if (p.op === '>=' || p.op === '>') {
      const l = p.op === '>' ? b + 1n : b;
      lo = lo === undefined || l > lo ? l : lo;
    } else {
      const h = p.op === '<=' ? b + 1n : b;
      hi = hi === undefined || h < hi ? h : hi;
    }
  }
  for (const k of stats.keys) {
    if (!isDimension(k) && !(k.type === 'bin' && k.us % US === 0n)) return undefined;
  }
  if (stats.aggs.some((a) => rollupAggSql(a) === undefined)) return undefined;
  const fromS = lo === undefined ? undefined : ceilDiv(lo, US);
  const toS = hi === undefined ? undefined : floorDiv(hi, US);
  // Under two seconds wide: nothing for the rollup, the spans answer alone.
  if (fromS !== undefined && toS !== undefined && fromS >= toS) return undefined;
  const edges: [bigint, bigint][] = [];
  if (lo !== undefined && lo < fromS! * US) edges.push([lo, fromS! * US]);
  if (hi !== undefined && toS! * US < hi) edges.push([toS! * US, hi]);
  return { dims, fromS, toS, edges };
}

const HOUR_KEY = 'toStartOfHour(toDateTime(intDiv(start_ns, 1000000000)))';

/**
 * Conditions that narrow the spans table to starts from `a` (and before `b`) µs through what it is
 * laid out by: daily partitions and ORDER BY (service, hour, name, start_ns), so a recent window or
 * an edge reads its hours' granules rather than the table. They are a second looser than [a, b)
 * (the day, hour and µs columns are rounded from the same float ns): add the exact condition.
 */
export function spanStartRangeSql(a: bigint, b?: bigint): string {
  const lo = a > US ? a - US : 0n;
  const out = [
    `date >= ${literal(dayOf(Number(lo) * 1000))}`,
    `${HOUR_KEY} >= toStartOfHour(toDateTime(${floorDiv(lo, US)}))`,
    `start_ns >= ${lo * 1000n}`,
  ];
  if (b !== undefined) {
    const hi = b + US;
    out.push(
      `date <= ${literal(dayOf(Number(hi) * 1000))}`,
      `${HOUR_KEY} <= toStartOfHour(toDateTime(${floorDiv(hi, US)}))`,
      `start_ns < ${hi * 1000n}`,
    );
  }
  return out.join(' AND ');
}

/** Spans starting in [a, b) µs (a fraction of a second at a time range's end, an export's page). */
export const spansStartingInSql = ([a, b]: [bigint, bigint]): string =>
  `(${spanStartRangeSql(a, b)} AND start_us >= ${a} AND start_us < ${b})`;

/** The grouped stats SQL over span_rollup (plus the spans at the edges of the time bounds). */
function rollupStatsSql(
  ctx: ClickHouseQueryContext,
  stats: StatsPlan,
  r: NonNullable<ReturnType<typeof rollupPlan>>,
): string {
  const keys = (cols: Columns): string[] => stats.keys.map((k, i) => `${mustValueSql(k, cols)} AS k${i}`);
  const groupKeys = stats.keys.map((_, i) => `k${i}`).join(', ');
  const states = ROLLUP_STATES.map((s) => s.slice(s.lastIndexOf(' AS ') + 4));
  const seconds = [
    ...(r.fromS === undefined ? [] : [`start_s >= ${r.fromS}`]),
    ...(r.toS === undefined ? [] : [`start_s < ${r.toS}`]),
  ];
  const parts = [
    `SELECT ${[...keys(ROLLUP_COLUMN_SQL), ...states].join(', ')} FROM ${ctx.rollupTable}${whereSql(r.dims, ROLLUP_COLUMN_SQL, seconds)}`,
  ];
  if (r.edges.length) {
    const edges = r.edges.map(spansStartingInSql).join(' OR ');
    parts.push(
      `SELECT ${[...keys(COLUMN_SQL), ...ROLLUP_STATES].join(', ')} FROM ${ctx.table}${whereSql(r.dims, COLUMN_SQL, [`(${edges})`])}${groupKeys ? ` GROUP BY ${groupKeys}` : ''}`,
    );
  }
  const aggs = stats.aggs.map((a, i) => `${rollupAggSql(a)!} AS a${i}`);
  const outerKeys = stats.keys.map((_, i) => `k${i}`);
  const group = groupKeys ? ` GROUP BY ${groupKeys} ORDER BY minMerge(first_ns)` : '';
  return `SELECT ${[...outerKeys, ...aggs, 'countMerge(spans) AS n'].join(', ')} FROM (${parts.join(' UNION ALL ')})${group}`;
}

async function statsRows(
  ctx: ClickHouseQueryContext,
  plan: QueryPlan,
  stats: StatsPlan,
  cmd: Extract<QueryPlan['rest'][number], { type: 'stats' }>,
): Promise<{ rows: Record<string, unknown>[]; scanned: number }> {
  const rollup = ctx.rollupTable ? rollupPlan(plan, stats) : undefined;
  let sql: string;
  if (rollup) {
    sql = rollupStatsSql(ctx, stats, rollup);
  } else {
    const keys = stats.keys.map((k, i) => `${mustValueSql(k)} AS k${i}`);
    const aggs = stats.aggs.map((a, i) => `${aggSql(a)} AS a${i}`);
    const group = keys.length
      ? ` GROUP BY ${stats.keys.map((_, i) => `k${i}`).join(', ')} ORDER BY min(start_ns)`
      : '';
    sql = `SELECT ${[...keys, ...aggs, 'count() AS n'].join(', ')} FROM ${ctx.table}${whereSql(stats.where)}${group}`;
  }
  const raw = await ctx.select<Record<string, unknown>>(sql);
  let scanned = 0;
  const rows = raw
    // Without GROUP BY an aggregate over no rows is still one row (as in SQLite).
    .map((r) => {
      scanned += Number(r['n']);
      const o: Record<string, unknown> = {};
      cmd.by.forEach((b, i) => (o[b.name] = r[`k${i}`] ?? null));
      cmd.aggs.forEach((a, i) => (o[a.name] = r[`a${i}`] ?? null));
      return o;
    });
  return { rows, scanned };
}

/** Prefixes of a dotted key that could hold it nested (a kvlist value): `a.b.c` → a, a.b. */
function prefixes(key: string): string[] {
  const out: string[] = [];
  for (let i = key.indexOf('.'); i > 0; i = key.indexOf('.', i + 1)) out.push(key.slice(0, i));
  return out;
}

/**
 * The scan: selected values (columns and attributes), or whole records. A value with a nested
 * fallback (a dotted key that may sit in a kvlist) is read from the record for the rows whose key
 * is absent while a prefix of it is present — those rows also carry their record.
 */
async function scanRows(ctx: ClickHouseQueryContext, plan: QueryPlan): Promise<ScanResult> {
  const { scan } = plan;
  const values = scan.select.type === 'values' ? scan.select.values : undefined;
  const sqls = values?.map((v) => valueSql(v));
  const useRecord = !values || sqls!.some((s) => s === undefined);
  const order = [...scan.order.map((o) => `${mustValueSql(o.value)} ${o.desc ? 'DESC' : 'ASC'}`)];
  if (order.length) order.push('start_ns', 'span_id');
  const tail = `${whereSql(scan.where)}${order.length ? ` ORDER BY ${order.join(', ')}` : ''}${scan.limit === undefined ? '' : ` LIMIT ${scan.limit}`}`;
  const filter = plan.residual;
  const rows: unknown[] = [];
  let scanned = 0;
  if (useRecord) {
    const got = await ctx.select<{ doc: string }>(`SELECT doc FROM ${ctx.table}${tail}`);
    for (const r of got) {
      scanned++;
      const rec = JSON.parse(r.doc) as SpanRecord;
      if (filter && !evaluate(filter, rec, recordGetter)) continue;
      rows.push(rec);
      if (rows.length >= plan.stopAfter) break;
    }
    return { rows, get: recordGetter, scanned };
  }
  // Rows whose nested fallback may matter: key absent, a prefix present.
  const nested: string[] = [];
  values!.forEach((v) => {
    if (v.type !== 'json' || !v.fallback) return;
    const [base, key] = v.path[0] === 'resource' ? ['res_keys', v.path[2]!] : ['attr_keys', v.path[1]!];
    nested.push(
      `(NOT has(${base}, ${literal(key)}) AND hasAny(${base}, [${prefixes(key).map(literal).join(', ')}]))`,
    );
  });
  const select = [
    ...sqls!.map((s, i) => `${s} AS c${i}`),
    nested.length ? `if(${nested.join(' OR ')}, doc, '') AS d` : "'' AS d",
  ];
  const got = await ctx.select<Record<string, unknown>>(
    `SELECT ${select.join(', ')} FROM ${ctx.table}${tail}`,
  );
  const index = new Map(plan.paths.map((p, i) => [p, i]));
  const get: Getter = (row, path) => {
    const i = index.get(path);
    return i === undefined ? undefined : (row as unknown[])[i];
  };
  const n = plan.paths.length;
  for (const r of got) {
    scanned++;
    const arr: unknown[] = new Array<unknown>(n);
    const doc = r['d'] as string;
    const rec = doc ? (JSON.parse(doc) as SpanRecord) : undefined;
    for (let i = 0; i < n; i++) {
      if (rec) {
        arr[i] = resolveField(rec, plan.paths[i]!);
        continue;
      }
      const v = r[`c${i}`];
      arr[i] =
        v === null || v === undefined ? undefined : plan.json[i] && typeof v === 'string' ? JSON.parse(v) : v;
    }
    if (filter && !evaluate(filter, arr, get)) continue;
    rows.push(arr);
    if (rows.length >= plan.stopAfter) break;
  }
  return { rows, get, scanned };
}

/** Parses, plans and runs a query against the ClickHouse spans table. */
export async function runClickHouseQuery(
  ctx: ClickHouseQueryContext,
  query: string,
  options: QueryOptions = {},
): Promise<QueryResponse> {
  const started = performance.now();
  const parsed = parseQuery(query);
  const odd = await ctx.select(`SELECT 1 FROM ${ctx.table} WHERE hot_odd = 1 LIMIT 1`);
  const plan = planQuery(parsed, { ...options, hotColumns: !odd.length });
  const first = plan.rest[0];
  if (first?.type === 'stats' && plan.stats) {
    const stats = await statsRows(ctx, plan, plan.stats, first);
    return finishQuery(
      plan,
      { rows: [], get: objectGetter, scanned: stats.scanned, statsRows: stats.rows },
      started,
    );
  }
  return finishQuery(plan, await scanRows(ctx, plan), started);
}

/**
 * The 400 body of a query that failed: the language refused it, or ClickHouse did (its deadline,
 * `max_execution_time`, or SQL this server cannot run); undefined for any other failure.
 */
export function clickHouseQueryFailure(
  error: unknown,
  query: string,
  serverVersion: string,
  queryTimeoutMs: number,
): QueryErrorBody | undefined {
  if (error instanceof QueryError) return error.toBody(query);
  if (!(error instanceof ClickHouseError)) return undefined;
  // 159: TIMEOUT_EXCEEDED (max_execution_time).
  return new QueryError(
    error.code === '159'
      ? `query stopped after ${queryTimeoutMs} ms; narrow it with a time range or a filter on an indexed field`
      : `ClickHouse ${serverVersion} cannot run this query: ${error.message}`,
    0,
    [],
    'QueryError',
  ).toBody(query);
}
