// The ClickHouse executor of query plans (query/plan.ts): the same plan the SQLite executor runs,
// rendered as ClickHouse SQL. The scan and the grouped `stats` run in ClickHouse; the commands after
// them run in JS through the shared finishQuery, so both stores answer alike.
import { type ScanResult, finishQuery, objectGetter, recordGetter } from '../../query/engine.js';
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
import type { QueryResponse, SpanRecord } from '../../wire-types.js';
import { literal } from './rows.js';

export interface ClickHouseQueryContext {
  select<T>(sql: string): Promise<T[]>;
  /** The spans table (Distributed with a cluster). */
  table: string;
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

function columnSql(name: string): string {
  const sql = isSpanColumn(name) ? COLUMN_SQL[name] : undefined;
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
function valueSql(v: ValueExpr): string | undefined {
  switch (v.type) {
    case 'column':
      // Float division, as SQLite divides by the bound (REAL) divisor: @timestamp keeps its µs.
      return v.divisor ? `(${columnSql(v.column)} / ${literal(v.divisor)})` : columnSql(v.column);
    case 'json':
      return attributeSql(v.path);
    case 'bin':
      return `(intDiv(${columnSql(v.column)}, ${v.us}) * ${v.ms})`;
  }
}

function mustValueSql(v: ValueExpr): string {
  const sql = valueSql(v);
  if (sql === undefined) throw new TypeError(`no ClickHouse expression for ${JSON.stringify(v)}`);
  return sql;
}

const OPS = new Set(['=', '!=', '<', '<=', '>', '>=']);

function predicateSql(p: Predicate): string {
  const v = mustValueSql(p.value);
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

function whereSql(where: readonly Predicate[]): string {
  return where.length ? ` WHERE ${where.map(predicateSql).join(' AND ')}` : '';
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

async function statsRows(
  ctx: ClickHouseQueryContext,
  plan: StatsPlan,
  cmd: Extract<QueryPlan['rest'][number], { type: 'stats' }>,
): Promise<{ rows: Record<string, unknown>[]; scanned: number }> {
  const keys = plan.keys.map((k, i) => `${mustValueSql(k)} AS k${i}`);
  const aggs = plan.aggs.map((a, i) => `${aggSql(a)} AS a${i}`);
  const group = keys.length
    ? ` GROUP BY ${plan.keys.map((_, i) => `k${i}`).join(', ')} ORDER BY min(start_ns)`
    : '';
  const raw = await ctx.select<Record<string, unknown>>(
    `SELECT ${[...keys, ...aggs, 'count() AS n'].join(', ')} FROM ${ctx.table}${whereSql(plan.where)}${group}`,
  );
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
  const sqls = values?.map(valueSql);
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
    const stats = await statsRows(ctx, plan.stats, first);
    return finishQuery(
      plan,
      { rows: [], get: objectGetter, scanned: stats.scanned, statsRows: stats.rows },
      started,
    );
  }
  return finishQuery(plan, await scanRows(ctx, plan), started);
}
