import type { SQLInputValue } from 'node:sqlite';
import type { PlanAgg, PlanValue, Predicate, ScanPlan, StatsPlan, ValueExpr } from './plan.js';
import { isSpanColumn } from './plan.js';
import { DEADLINE_CHECK_ROWS, DEADLINE_FUNCTION } from './sqlite-deadline.js';

/**
 * Renders query plans (plan.ts) as SQLite SQL. SQL text is only ever built from constant
 * fragments written here, identifiers through quoteIdent() (closed-set columns and generated
 * aliases) and `?` placeholders: every value, user text or number, is a bound parameter.
 */

/** SQL text with its parameters, in placeholder order. */
export interface Fragment {
  readonly text: string;
  readonly params: readonly SQLInputValue[];
}

const isFragment = (v: unknown): v is Fragment =>
  typeof v === 'object' && v !== null && 'text' in v && 'params' in v;

/**
 * Tagged template: the literal parts are SQL written in this file; interpolated fragments are
 * spliced with their parameters; anything else becomes a `?` with the value bound.
 */
export function sql(strings: TemplateStringsArray, ...parts: (Fragment | PlanValue)[]): Fragment {
  let text = strings[0]!;
  const params: SQLInputValue[] = [];
  parts.forEach((part, i) => {
    if (isFragment(part)) {
      text += part.text;
      params.push(...part.params);
    } else {
      text += '?';
      params.push(part);
    }
    text += strings[i + 1]!;
  });
  return { text, params };
}

/** Joins fragments with a constant separator (`, `, ` AND `). */
export function join(parts: readonly Fragment[], separator: ', ' | ' AND '): Fragment {
  return {
    text: parts.map((p) => p.text).join(separator),
    params: parts.flatMap((p) => p.params),
  };
}

/**
 * The one identifier quoting: an SQL double-quoted identifier with every `"` doubled. Refuses
 * what SQLite cannot carry in an identifier (empty, NUL) instead of mangling it.
 */
export function quoteIdent(name: string): string {
  if (!name || name.includes('\0')) throw new TypeError(`not an SQL identifier: ${JSON.stringify(name)}`);
  return `"${name.replaceAll('"', '""')}"`;
}

/** An identifier as a fragment. */
export function ident(name: string): Fragment {
  return { text: quoteIdent(name), params: [] };
}

function column(name: string): Fragment {
  // The plan's types already say so; this holds for plans built outside the planner too.
  if (!isSpanColumn(name)) throw new TypeError(`not a span column: ${JSON.stringify(name)}`);
  return ident(name);
}

/**
 * A JSON path for SQLite's `->` from object keys: simple keys as `.key`, others as `."key"`. A
 * key holding `"` or `\` has no SQLite path (the planner reads such fields from the record).
 */
export function jsonPath(keys: readonly string[]): string {
  return `$${keys
    .map((k) => {
      if (/^[A-Za-z0-9_]+$/.test(k)) return `.${k}`;
      if (/["\\\0]/.test(k) || !k) throw new TypeError(`no SQLite JSON path for key ${JSON.stringify(k)}`);
      return `."${k}"`;
    })
    .join('')}`;
}

/** A per-row value. The JSON path is a bound parameter, not text. */
export function valueSql(v: ValueExpr): Fragment {
  switch (v.type) {
    case 'column':
      return v.divisor ? sql`(${column(v.column)} / ${v.divisor})` : column(v.column);
    case 'json': {
      const doc = column('doc');
      const first = sql`${doc} -> ${jsonPath(v.path)}`;
      return v.fallback ? sql`coalesce(${first}, ${doc} -> ${jsonPath(v.fallback)})` : first;
    }
    case 'bin':
      return sql`((${column(v.column)} / ${v.us}) * ${v.ms})`;
  }
}

const CMP: Record<string, Fragment> = Object.fromEntries(
  ['=', '!=', '<', '<=', '>', '>='].map((op) => [op, { text: op, params: [] }]),
);

export function predicateSql(p: Predicate): Fragment {
  const v = valueSql(p.value);
  switch (p.type) {
    case 'cmp': {
      const op = CMP[p.op];
      if (!op) throw new TypeError(`not a comparison: ${JSON.stringify(p.op)}`);
      return sql`${v} ${op} ${p.operand}`;
    }
    case 'in':
      return sql`${v} IN (${join(
        p.operands.map((o) => sql`${o}`),
        ', ',
      )})`;
    case 'null':
      return p.negate ? sql`${v} IS NOT NULL` : sql`${v} IS NULL`;
  }
}

/**
 * The first term of every planned WHERE: every DEADLINE_CHECK_ROWS-th row (by id) calls the
 * deadline check (sqlite-deadline.ts), which aborts the statement once its deadline passed. The
 * bit test runs in SQLite; only one row in DEADLINE_CHECK_ROWS pays for a call into JavaScript.
 */
const DEADLINE_GUARD: Fragment = {
  text: `((${quoteIdent('id')} & ?) != ? OR ${DEADLINE_FUNCTION}())`,
  params: [DEADLINE_CHECK_ROWS - 1, 0],
};

export function whereSql(where: readonly Predicate[], extra: readonly Fragment[] = []): Fragment {
  return sql` WHERE ${join([DEADLINE_GUARD, ...where.map(predicateSql), ...extra], ' AND ')}`;
}

/** `SELECT … FROM spans WHERE … ORDER BY … LIMIT ?`; selected values are named c0, c1, …. */
export function scanSql(plan: ScanPlan): Fragment {
  const select =
    plan.select.type === 'doc'
      ? column('doc')
      : plan.select.values.length
        ? join(
            plan.select.values.map((v, i) => sql`${valueSql(v)} AS ${ident(`c${i}`)}`),
            ', ',
          )
        : sql`1 AS ${ident('c0')}`;
  const order = plan.order.length
    ? sql` ORDER BY ${join(
        [
          ...plan.order.map((o) => (o.desc ? sql`${valueSql(o.value)} DESC` : sql`${valueSql(o.value)} ASC`)),
          column('id'),
        ],
        ', ',
      )}`
    : sql``;
  const limit = plan.limit === undefined ? sql`` : sql` LIMIT ${BigInt(plan.limit)}`;
  return sql`SELECT ${select} FROM ${ident('spans')}${whereSql(plan.where)}${order}${limit}`;
}

function aggSql(a: PlanAgg): Fragment {
  if (!a.value) return sql`count(*)`;
  const v = valueSql(a.value);
  switch (a.fn) {
    case 'count':
    case 'pct':
      // pct(): the group's count of values; the value itself comes from statsKthSql/statsWindowSql.
      return sql`count(${v})`;
    case 'count_distinct':
      return sql`count(DISTINCT ${v})`;
    case 'sum':
      return sql`total(${v})`;
    case 'avg':
      return sql`avg(${v})`;
    case 'min':
      return sql`min(${v})`;
    case 'max':
      return sql`max(${v})`;
  }
}

/**
 * The grouped aggregate: columns k0… (keys), a0… (aggregates), n (rows in the group), groups in
 * order of their first row.
 */
export function statsSql(plan: StatsPlan): Fragment {
  const keyNames = plan.keys.map((_, i) => ident(`k${i}`));
  const select = join(
    [
      ...plan.keys.map((k, i) => sql`${valueSql(k)} AS ${keyNames[i]!}`),
      ...plan.aggs.map((a, i) => sql`${aggSql(a)} AS ${ident(`a${i}`)}`),
      sql`count(*) AS ${ident('n')}`,
    ],
    ', ',
  );
  const grouped = keyNames.length
    ? sql` GROUP BY ${join(keyNames, ', ')} ORDER BY min(${column('id')})`
    : sql``;
  return sql`SELECT ${select} FROM ${ident('spans')}${whereSql(plan.where)}${grouped}`;
}

/** Conditions selecting one group (its key values; null keys by IS NULL) with a non-null value. */
function groupWhere(plan: StatsPlan, value: ValueExpr, key: readonly unknown[]): Fragment {
  return whereSql(plan.where, [
    ...plan.keys.map((k, i) =>
      key[i] === null ? sql`${valueSql(k)} IS NULL` : sql`${valueSql(k)} = ${key[i] as PlanValue}`,
    ),
    sql`${valueSql(value)} IS NOT NULL`,
  ]);
}

/** One group's percentile value through percentile_disc(value, fraction). */
export function statsDiscSql(
  plan: StatsPlan,
  value: ValueExpr,
  key: readonly unknown[],
  fraction: number,
): Fragment {
  return sql`SELECT percentile_disc(${valueSql(value)}, ${fraction}) FROM ${ident('spans')}${groupWhere(plan, value, key)}`;
}

/** One group's k-th smallest (0-based) value by ORDER BY … OFFSET. */
export function statsKthSql(plan: StatsPlan, value: ValueExpr, key: readonly unknown[], k: number): Fragment {
  const v = valueSql(value);
  return sql`SELECT ${v} FROM ${ident('spans')}${groupWhere(plan, value, key)} ORDER BY ${v} LIMIT 1 OFFSET ${BigInt(k)}`;
}

/** Every group's nearest-rank percentile in one window-function pass: columns k0…, v. */
export function statsWindowSql(plan: StatsPlan, value: ValueExpr, p: number): Fragment {
  const keyNames = plan.keys.map((_, i) => ident(`k${i}`));
  const v = valueSql(value);
  const keys = plan.keys.map(valueSql);
  const part = keys.length ? sql`PARTITION BY ${join(keys, ', ')} ` : sql``;
  const inner = join(
    [
      ...keys.map((k, i) => sql`${k} AS ${keyNames[i]!}`),
      sql`${v} AS ${ident('v')}`,
      sql`row_number() OVER (${part}ORDER BY ${v}) AS ${ident('rn')}`,
      sql`count(*) OVER (${part}) AS ${ident('c')}`,
    ],
    ', ',
  );
  const outer = join([...keyNames, ident('v')], ', ');
  return sql`SELECT ${outer} FROM (SELECT ${inner} FROM ${ident('spans')}${whereSql(plan.where, [sql`${v} IS NOT NULL`])}) WHERE ${ident('rn')} = max(1, ceil((${p} / 100.0) * ${ident('c')}))`;
}
