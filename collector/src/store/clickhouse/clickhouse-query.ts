// The ClickHouse executor of query plans (query/plan.ts): the same plan the SQLite executor runs,
// rendered as ClickHouse SQL (clickhouse-sql.ts; `stats` from span_rollup where it can answer them:
// clickhouse-rollup-sql.ts). The scan and the grouped `stats` run in ClickHouse; the commands after
// them run in JS through the shared finishQuery, so both stores answer alike.
import { ClickHouseError } from '@clickhouse/client';
import { type ScanResult, finishQuery, objectGetter, recordGetter } from '../../query/engine.js';
import { QueryError } from '../../query/query-error.js';
import type { QueryOptions } from '../../query/engine.js';
import { evaluate, type Getter } from '../../query/evaluate.js';
import { resolveField } from '../../query/fields.js';
import { parseQuery } from '../../query/parser.js';
import { type QueryPlan, type StatsPlan, planQuery } from '../../query/plan.js';
import type { QueryErrorBody, QueryResponse, SpanRecord } from '../../wire-types.js';
import { rollupPlan, rollupStatsSql } from './clickhouse-rollup-sql.js';
import { aggSql, mustValueSql, valueSql, whereSql } from './clickhouse-sql.js';
import { literal } from './rows.js';

export interface ClickHouseQueryContext {
  select<T>(sql: string): Promise<T[]>;
  /** The spans table (Distributed with a cluster). */
  table: string;
  /** The span_rollup table (schema version 2), which answers `stats` it can without the spans. */
  rollupTable?: string;
  serverVersion: string;
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
    sql = rollupStatsSql({ spans: ctx.table, rollup: ctx.rollupTable! }, stats, rollup);
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
