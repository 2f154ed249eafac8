/**
 * Which names a query may use: the fields of a span record (any path under them), and the columns
 * its own `fields` and `stats` commands name. Anything else is a typo that would read nothing on
 * every row (`durationMs`, `attribute.model`), so it is an error naming the fields there are.
 */
import type { Command, Expr } from './ast.js';
import { calcFields } from './calc.js';
import { QueryError } from './query-error.js';

/** The top-level fields of a span record, and the two the language adds (`@timestamp`, `@message`). */
export const RECORD_FIELDS: readonly string[] = [
  '@timestamp',
  '@message',
  'traceId',
  'spanId',
  'parentSpanId',
  'traceState',
  'flags',
  'name',
  'kind',
  'startTimeUnixNano',
  'endTimeUnixNano',
  'durationNano',
  'status',
  'attributes',
  'resource',
  'scope',
  'events',
  'links',
];
const RECORD_ROOTS: ReadonlySet<string> = new Set(RECORD_FIELDS);

/** The names the query's `fields` and `stats` commands give their columns. */
function columnNames(commands: readonly Command[]): Set<string> {
  const out = new Set<string>();
  for (const cmd of commands) {
    // A field's own name is no new column (`fields durationMs` names nothing that exists).
    if (cmd.type === 'fields')
      for (const item of cmd.items) if (item.name !== item.path || item.calc) out.add(item.name);
    if (cmd.type === 'stats') {
      for (const b of cmd.by) if (b.type === 'bin' || b.name !== b.path) out.add(b.name);
      for (const a of cmd.aggs) out.add(a.name);
    }
  }
  return out;
}

function filterFields(expr: Expr, out: string[]): void {
  if (expr.type === 'and' || expr.type === 'or') {
    filterFields(expr.left, out);
    filterFields(expr.right, out);
  } else if (expr.type === 'not') filterFields(expr.expr, out);
  else if ('field' in expr) out.push(expr.field);
}

/** The field paths a command reads (arithmetic's operands, not its text). */
function pathsOf(cmd: Command): string[] {
  const out: string[] = [];
  const add = (v: { path: string; calc?: Parameters<typeof calcFields>[0] }) =>
    out.push(...(v.calc ? calcFields(v.calc) : [v.path]));
  if (cmd.type === 'filter') filterFields(cmd.expr, out);
  if (cmd.type === 'fields') cmd.items.forEach(add);
  if (cmd.type === 'sort') cmd.keys.forEach(add);
  if (cmd.type === 'stats') {
    for (const a of cmd.aggs) if (a.field) add({ path: a.field, ...(a.calc ? { calc: a.calc } : {}) });
    for (const b of cmd.by) if (b.type === 'field') add(b);
  }
  return out;
}

/** Throws a QueryError for the first name that is neither a record field nor a column of the query. */
export function checkFieldNames(commands: readonly Command[]): void {
  const columns = columnNames(commands);
  for (const cmd of commands)
    for (const path of pathsOf(cmd)) {
      if (columns.has(path) || RECORD_ROOTS.has(path.split('.', 1)[0]!)) continue;
      const known = [...RECORD_FIELDS, ...columns].join(', ');
      throw new QueryError(
        `unknown field '${path}': a field is one of ${known} (attributes.<key>, resource.attributes.<key> for attributes)`,
        cmd.pos,
        [],
        'QueryError',
      );
    }
}
