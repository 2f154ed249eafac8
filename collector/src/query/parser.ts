import type { Agg, AggFn, Command, GroupKey, Projection } from './ast.js';
import { type Calc, parseCalc } from './calc.js';
import { QueryCursor, tidy } from './cursor.js';
import { orExpr } from './filter-parser.js';

const AGGS: AggFn[] = ['count', 'count_distinct', 'sum', 'avg', 'min', 'max', 'pct'];
/** Largest `limit` accepted. */
export const MAX_LIMIT = 10_000;

/** Duration units of the query language (also what `since=` of the metrics and logs API takes). */
export const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  sec: 1000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  w: 604_800_000,
};

/** Parses a query (commands separated by `|`) into its command list. Throws QueryError. */
export function parseQuery(src: string): Command[] {
  const c = new QueryCursor(src);
  const commands: Command[] = [];
  if (c.peek().type === 'eof') return commands;
  commands.push(command(c));
  while (c.peek().type !== 'eof') {
    if (!c.isPunct(c.peek(), '|')) c.fail(["'|'", 'end of query']);
    c.next();
    commands.push(command(c));
  }
  return commands;
}

function command(c: QueryCursor): Command {
  const { word, token } = c.command();
  const pos = token.pos;
  if (word === 'filter') return { type: 'filter', expr: orExpr(c), pos };
  if (word === 'fields' || word === 'display')
    return { type: 'fields', items: commaList(c, projection), pos };
  if (word === 'stats') return { type: 'stats', aggs: commaList(c, agg), by: groupKeys(c), pos };
  if (word === 'sort') return { type: 'sort', keys: commaList(c, sortItem), pos };
  return { type: 'limit', n: limit(c), pos };
}

/** One or more of `item`, separated by commas. */
function commaList<T>(c: QueryCursor, item: (c: QueryCursor) => T): T[] {
  const items = [item(c)];
  while (c.isPunct(c.peek(), ',')) {
    c.next();
    items.push(item(c));
  }
  return items;
}

/** A field, or arithmetic over fields and numbers (`calc` set, `path` its text). */
function value(c: QueryCursor): { path: string; calc?: Calc } {
  const from = c.i;
  const calc = parseCalc(c);
  return calc.type === 'field' ? { path: calc.path } : { path: c.textFrom(from), calc };
}

function projection(c: QueryCursor): Projection {
  const f = value(c);
  return { ...f, name: alias(c, f.path) };
}

function alias(c: QueryCursor, fallback: string): string {
  if (!c.takeWord('as')) return fallback;
  const t = c.peek();
  if (t.type !== 'ident') return c.fail(['an alias name']);
  c.next();
  return t.text;
}

function agg(c: QueryCursor): Agg {
  const t = c.peek();
  const fn = t.type === 'ident' ? (t.text.toLowerCase() as AggFn) : undefined;
  if (!fn || !AGGS.includes(fn)) return c.fail(AGGS.map((a) => `${a}()`));
  c.next();
  c.expectPunct('(');
  const a = aggArguments(c, fn);
  c.expectPunct(')');
  a.name = alias(c, a.name);
  return a;
}

/** What is between an aggregate's parentheses: `*` or nothing (count), a value, and pct's percentile. */
function aggArguments(c: QueryCursor, fn: AggFn): Agg {
  if (fn === 'count' && (c.isPunct(c.peek(), '*') || c.isPunct(c.peek(), ')'))) {
    if (c.isPunct(c.peek(), '*')) c.next();
    return { fn, name: 'count(*)' };
  }
  const f = value(c);
  const calc = f.calc ? { calc: f.calc } : {};
  if (fn !== 'pct') return { fn, field: f.path, ...calc, name: `${fn}(${f.path})` };
  c.expectPunct(',');
  const n = c.peek();
  if (n.type !== 'number' || n.value! < 0 || n.value! > 100)
    return c.fail(['a percentile between 0 and 100']);
  c.next();
  return { fn, field: f.path, ...calc, p: n.value!, name: `pct(${f.path}, ${n.text})` };
}

/** `by key, ...` after the aggregates, or none. */
function groupKeys(c: QueryCursor): GroupKey[] {
  return c.takeWord('by') ? commaList(c, groupKey) : [];
}

function groupKey(c: QueryCursor): GroupKey {
  const t = c.peek();
  if (c.isWord(t, 'bin') && c.isPunct(c.peekSecond(), '(')) {
    c.next();
    c.next();
    const d = c.peek();
    if (d.type !== 'duration' || !UNIT_MS[d.flags!.toLowerCase()] || !(d.value! > 0)) {
      return c.fail(['a duration like 30s, 5m, 1h or 1d']);
    }
    c.next();
    c.expectPunct(')');
    return { type: 'bin', ms: d.value! * UNIT_MS[d.flags!.toLowerCase()]!, name: alias(c, `bin(${d.text})`) };
  }
  const f = c.field();
  return { type: 'field', path: f.path, name: alias(c, f.path) };
}

function sortItem(c: QueryCursor): { path: string; desc: boolean; calc?: Calc } {
  const key = sortKey(c);
  const desc = c.takeWord('desc');
  if (!desc) c.takeWord('asc');
  return { ...key, desc };
}

/** A sort key: a field or arithmetic, or an aggregate's column text such as `count(*)`. */
function sortKey(c: QueryCursor): { path: string; calc?: Calc } {
  const t = c.peek();
  if (t.type !== 'ident' || !c.isPunct(c.peekSecond(), '(')) return value(c);
  while (!c.isPunct(c.peek(), ')')) {
    if (c.peek().type === 'eof') c.fail(["')'"]);
    c.next();
  }
  const end = c.next().end;
  return { path: tidy(c.src.slice(t.pos, end).replace(/\s*,\s*/g, ', ')) };
}

function limit(c: QueryCursor): number {
  const n = c.peek();
  if (n.type !== 'number' || !Number.isInteger(n.value) || n.value! < 1 || n.value! > MAX_LIMIT) {
    return c.fail([`a whole number from 1 to ${MAX_LIMIT}`]);
  }
  c.next();
  return n.value!;
}
