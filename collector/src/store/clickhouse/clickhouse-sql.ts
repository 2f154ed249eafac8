// Query plans (query/plan.ts) as ClickHouse SQL: plan columns as expressions of the spans table,
// attributes read from its key/value arrays, predicates and aggregates, and the conditions that
// narrow the table to a time range through the way it is laid out. Values are literals made by
// rows.ts (escaped), never spliced as they came.
import { type PlanAgg, type Predicate, type ValueExpr, isSpanColumn } from '../../query/plan.js';
import { dayOf, literal } from './rows.js';

/** Plan columns → ClickHouse expressions (absent strings are '' there, NULL in SQLite). */
export const COLUMN_SQL: Record<string, string> = {
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

/** Plan columns → SQL expressions of one table. */
export type Columns = Record<string, string>;

export function columnSql(name: string, cols: Columns = COLUMN_SQL): string {
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
export function valueSql(v: ValueExpr, cols: Columns = COLUMN_SQL): string | undefined {
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

export function mustValueSql(v: ValueExpr, cols: Columns = COLUMN_SQL): string {
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

export function whereSql(
  where: readonly Predicate[],
  cols: Columns = COLUMN_SQL,
  more: string[] = [],
): string {
  const all = [...where.map((p) => predicateSql(p, cols)), ...more];
  return all.length ? ` WHERE ${all.join(' AND ')}` : '';
}

export function aggSql(a: PlanAgg): string {
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

export const US = 1_000_000n;
export const floorDiv = (a: bigint, b: bigint): bigint => (a >= 0n ? a / b : -((-a + b - 1n) / b));
export const ceilDiv = (a: bigint, b: bigint): bigint => -floorDiv(-a, b);

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
