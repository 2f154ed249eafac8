// `stats` answered from span_rollup (schema.ts) instead of the spans: which plans it can answer
// (rollupPlan), and their SQL over the rollup's merged states, with the spans at the fractions of a
// second the time bounds cut (rollupStatsSql), so the answer is exactly the spans'.
import type { PlanAgg, Predicate, QueryPlan, StatsPlan, ValueExpr } from '../../query/plan.js';
import {
  COLUMN_SQL,
  type Columns,
  US,
  ceilDiv,
  floorDiv,
  mustValueSql,
  spansStartingInSql,
  whereSql,
} from './clickhouse-sql.js';
import { ROLLUP_NULLABLE, ROLLUP_NUMBERS, ROLLUP_STATES } from './schema-rollup.js';

/** How span_rollup answers a stats plan: the dimension filters, whole seconds and the edges. */
export interface RollupPlan {
  dims: Predicate[];
  fromS?: bigint;
  toS?: bigint;
  edges: [bigint, bigint][];
}

/** Plan columns → span_rollup expressions, for the columns it keeps (no others reach it). */
const ROLLUP_COLUMN_SQL: Record<string, string> = {
  name: 'name',
  kind: 'kind',
  status: 'status',
  service: "nullIf(service, '')",
  start_us: '(start_s * 1000000)',
  ...Object.fromEntries(ROLLUP_NULLABLE.map((n) => [n.column, `if(${n.flag} = 1, NULL, ${n.value})`])),
};

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
export function rollupPlan(plan: QueryPlan, stats: StatsPlan): RollupPlan | undefined {
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

/** The grouped stats SQL over span_rollup (plus the spans at the edges of the time bounds). */
export function rollupStatsSql(
  tables: { spans: string; rollup: string },
  stats: StatsPlan,
  r: RollupPlan,
): string {
  const keys = (cols: Columns): string[] => stats.keys.map((k, i) => `${mustValueSql(k, cols)} AS k${i}`);
  const groupKeys = stats.keys.map((_, i) => `k${i}`).join(', ');
  const states = ROLLUP_STATES.map((s) => s.slice(s.lastIndexOf(' AS ') + 4));
  const seconds = [
    ...(r.fromS === undefined ? [] : [`start_s >= ${r.fromS}`]),
    ...(r.toS === undefined ? [] : [`start_s < ${r.toS}`]),
  ];
  const parts = [
    `SELECT ${[...keys(ROLLUP_COLUMN_SQL), ...states].join(', ')} FROM ${tables.rollup}${whereSql(r.dims, ROLLUP_COLUMN_SQL, seconds)}`,
  ];
  if (r.edges.length) {
    const edges = r.edges.map(spansStartingInSql).join(' OR ');
    parts.push(
      `SELECT ${[...keys(COLUMN_SQL), ...ROLLUP_STATES].join(', ')} FROM ${tables.spans}${whereSql(r.dims, COLUMN_SQL, [`(${edges})`])}${groupKeys ? ` GROUP BY ${groupKeys}` : ''}`,
    );
  }
  const aggs = stats.aggs.map((a, i) => `${rollupAggSql(a)!} AS a${i}`);
  const outerKeys = stats.keys.map((_, i) => `k${i}`);
  const group = groupKeys ? ` GROUP BY ${groupKeys} ORDER BY minMerge(first_ns)` : '';
  return `SELECT ${[...outerKeys, ...aggs, 'countMerge(spans) AS n'].join(', ')} FROM (${parts.join(' UNION ALL ')})${group}`;
}
