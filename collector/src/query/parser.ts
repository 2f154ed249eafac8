import type { Agg, AggFn, CmpOp, Command, Expr, GroupKey, Literal, Projection } from './ast.js';
import { type Calc, parseCalc } from './calc.js';
import { type Token, tokenize } from './lexer.js';
import { MAX_REGEXES, type Pattern, regexPattern, substringPattern } from './pattern.js';
import { QueryError } from './query-error.js';

const COMMANDS = ['filter', 'fields', 'display', 'stats', 'sort', 'limit'];
const AGGS: AggFn[] = ['count', 'count_distinct', 'sum', 'avg', 'min', 'max', 'pct'];
const CMP_OPS = ['=', '!=', '<', '<=', '>', '>='];
const RESERVED = new Set(['and', 'or', 'not', 'like', 'in', 'by', 'as', 'asc', 'desc', ...COMMANDS]);
/** Largest `limit` accepted. */
export const MAX_LIMIT = 10_000;
/** Deepest nesting of parentheses and `not` in a filter (deeper is no query a person writes). */
export const MAX_NESTING = 64;
/** Most values (literals) in one query, `in` lists included: each is a bound SQL parameter. */
export const MAX_VALUES = 5000;
/** Most conditions in one query. */
export const MAX_CONDITIONS = 1000;

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

function describe(t: Token): string {
  if (t.type === 'eof') return 'end of query';
  if (t.type === 'string') return `string "${t.text}"`;
  return `'${t.text}'`;
}

/** Parses a query (commands separated by `|`) into its command list. Throws QueryError. */
export function parseQuery(src: string): Command[] {
  const tokens = tokenize(src);
  let i = 0;
  let depth = 0;
  let values = 0;
  let conditions = 0;
  const regexes = new Set<string>();
  const peek = (): Token => tokens[i]!;
  const next = (): Token => tokens[i++]!;
  const isWord = (t: Token, w: string): boolean => t.type === 'ident' && t.text.toLowerCase() === w;
  const isPunct = (t: Token, p: string): boolean => t.type === 'punct' && t.text === p;
  const fail = (expected: string[], t = peek()): never => {
    throw new QueryError(`expected ${expected.join(' or ')} but found ${describe(t)}`, t.pos, expected);
  };
  const expectPunct = (p: string): Token => (isPunct(peek(), p) ? next() : fail([`'${p}'`]));

  function field(): { path: string; pos: number } {
    const t = peek();
    if (t.type !== 'ident' || RESERVED.has(t.text.toLowerCase())) return fail(['a field name']);
    next();
    return { path: t.text, pos: t.pos };
  }

  function literal(): Literal {
    const t = peek();
    if (++values > MAX_VALUES)
      throw new QueryError(`query has more than ${MAX_VALUES} values`, t.pos, [], 'QueryError');
    if (t.type === 'string' || t.type === 'number') {
      next();
      return t.type === 'string' ? t.text : t.value!;
    }
    if (t.type === 'ident' && ['true', 'false', 'null'].includes(t.text.toLowerCase())) {
      next();
      const w = t.text.toLowerCase();
      return w === 'null' ? null : w === 'true';
    }
    return fail(['a string', 'a number', 'true', 'false', 'null']);
  }

  function likePattern(): Pattern {
    const t = peek();
    if (t.type === 'regex') {
      next();
      regexes.add(`${t.flags}/${t.text}`);
      if (regexes.size > MAX_REGEXES)
        throw new QueryError(
          `query has more than ${MAX_REGEXES} regular expressions`,
          t.pos,
          [],
          'QueryError',
        );
      return regexPattern(t.text, t.flags ?? '', t.pos);
    }
    if (t.type === 'string') {
      next();
      return substringPattern(t.text);
    }
    return fail(['a string', 'a /regex/']);
  }

  /** Counts a level of nesting while `fn` parses it. */
  function nested<T>(t: Token, fn: () => T): T {
    if (++depth > MAX_NESTING)
      throw new QueryError(`expression nests deeper than ${MAX_NESTING} levels`, t.pos, [], 'QueryError');
    try {
      return fn();
    } finally {
      depth--;
    }
  }

  function primary(): Expr {
    const t = peek();
    if (isPunct(t, '(')) {
      next();
      const e = nested(t, orExpr);
      expectPunct(')');
      return e;
    }
    if (++conditions > MAX_CONDITIONS)
      throw new QueryError(`query has more than ${MAX_CONDITIONS} conditions`, t.pos, [], 'QueryError');
    if (t.type === 'ident' && isPunct(tokens[i + 1]!, '(')) {
      const fn = t.text.toLowerCase();
      if (fn === 'ispresent' || fn === 'isempty' || fn === 'isblank') {
        next();
        next();
        const f = field();
        expectPunct(')');
        return fn === 'ispresent'
          ? { type: 'present', field: f.path, negate: false, pos: t.pos }
          : { type: 'empty', field: f.path, pos: t.pos };
      }
      throw new QueryError(`unknown function '${t.text}' in filter`, t.pos, ['ispresent', 'isempty']);
    }
    const f = field();
    const op = peek();
    if (op.type === 'punct' && CMP_OPS.includes(op.text)) {
      next();
      return { type: 'cmp', op: op.text as CmpOp, field: f.path, value: literal(), pos: f.pos };
    }
    if (isPunct(op, '=~')) {
      next();
      return { type: 'like', field: f.path, pattern: likePattern(), negate: false, pos: f.pos };
    }
    let negate = false;
    if (isWord(op, 'not')) {
      next();
      negate = true;
    }
    if (isWord(peek(), 'like')) {
      next();
      return { type: 'like', field: f.path, pattern: likePattern(), negate, pos: f.pos };
    }
    if (isWord(peek(), 'in')) {
      next();
      expectPunct('[');
      const values: Literal[] = [];
      if (!isPunct(peek(), ']')) {
        values.push(literal());
        while (isPunct(peek(), ',')) {
          next();
          values.push(literal());
        }
      }
      expectPunct(']');
      return { type: 'in', field: f.path, values, negate, pos: f.pos };
    }
    return fail(negate ? ["'like'", "'in'"] : ['a comparison (= != < <= > >=)', "'like'", "'in'", "'=~'"]);
  }

  function notExpr(): Expr {
    const t = peek();
    if (isWord(t, 'not') || isPunct(t, '!')) {
      next();
      return { type: 'not', expr: nested(t, notExpr), pos: t.pos };
    }
    return primary();
  }

  function andExpr(): Expr {
    let left = notExpr();
    while (isWord(peek(), 'and') || isPunct(peek(), '&&')) {
      const t = next();
      left = { type: 'and', left, right: notExpr(), pos: t.pos };
    }
    return left;
  }

  function orExpr(): Expr {
    let left = andExpr();
    while (isWord(peek(), 'or') || isPunct(peek(), '||')) {
      const t = next();
      left = { type: 'or', left, right: andExpr(), pos: t.pos };
    }
    return left;
  }

  /** Source text from token `from` up to (not including) the current token, spaced as written once. */
  function textFrom(from: number): string {
    return src
      .slice(tokens[from]!.pos, tokens[i - 1]!.end)
      .replace(/\s+/g, ' ')
      .replace(/\(\s+/g, '(')
      .replace(/\s+\)/g, ')');
  }

  /** A field, or arithmetic over fields and numbers (`calc` set, `path` its text). */
  function value(): { path: string; calc?: Calc } {
    const from = i;
    const calc = parseCalc({ peek, next, field, nested, expectPunct });
    return calc.type === 'field' ? { path: calc.path } : { path: textFrom(from), calc };
  }

  function alias(fallback: string): string {
    if (isWord(peek(), 'as')) {
      next();
      const t = peek();
      if (t.type !== 'ident') return fail(['an alias name']);
      next();
      return t.text;
    }
    return fallback;
  }

  function agg(): Agg {
    const t = peek();
    const fn = t.type === 'ident' ? (t.text.toLowerCase() as AggFn) : undefined;
    if (!fn || !AGGS.includes(fn)) return fail(AGGS.map((a) => `${a}()`));
    next();
    expectPunct('(');
    let a: Agg;
    if (fn === 'count' && isPunct(peek(), '*')) {
      next();
      a = { fn, name: 'count(*)' };
    } else if (fn === 'count' && isPunct(peek(), ')')) {
      a = { fn, name: 'count(*)' };
    } else {
      const f = value();
      const calc = f.calc ? { calc: f.calc } : {};
      if (fn === 'pct') {
        expectPunct(',');
        const n = peek();
        if (n.type !== 'number' || n.value! < 0 || n.value! > 100)
          return fail(['a percentile between 0 and 100']);
        next();
        a = { fn, field: f.path, ...calc, p: n.value!, name: `pct(${f.path}, ${n.text})` };
      } else {
        a = { fn, field: f.path, ...calc, name: `${fn}(${f.path})` };
      }
    }
    expectPunct(')');
    a.name = alias(a.name);
    return a;
  }

  function groupKey(): GroupKey {
    const t = peek();
    if (isWord(t, 'bin') && isPunct(tokens[i + 1]!, '(')) {
      next();
      next();
      const d = peek();
      if (d.type !== 'duration' || !UNIT_MS[d.flags!.toLowerCase()] || !(d.value! > 0)) {
        return fail(['a duration like 30s, 5m, 1h or 1d']);
      }
      next();
      expectPunct(')');
      return { type: 'bin', ms: d.value! * UNIT_MS[d.flags!.toLowerCase()]!, name: alias(`bin(${d.text})`) };
    }
    const f = field();
    return { type: 'field', path: f.path, name: alias(f.path) };
  }

  /** A sort key: a field or arithmetic, or an aggregate's column text such as `count(*)`. */
  function sortKey(): { path: string; calc?: Calc } {
    const t = peek();
    if (t.type === 'ident' && isPunct(tokens[i + 1]!, '(')) {
      const start = t.pos;
      while (!isPunct(peek(), ')')) {
        if (peek().type === 'eof') fail(["')'"]);
        next();
      }
      const end = next().end;
      return {
        path: src
          .slice(start, end)
          .replace(/\s*,\s*/g, ', ')
          .replace(/\s+/g, ' ')
          .replace(/\(\s+/g, '(')
          .replace(/\s+\)/g, ')'),
      };
    }
    return value();
  }

  function command(): Command {
    const t = peek();
    const word = t.type === 'ident' ? t.text.toLowerCase() : '';
    if (!COMMANDS.includes(word)) return fail(COMMANDS.filter((c) => c !== 'display'));
    next();
    switch (word) {
      case 'filter':
        return { type: 'filter', expr: orExpr(), pos: t.pos };
      case 'fields':
      case 'display': {
        const items: Projection[] = [];
        do {
          if (items.length) next();
          const f = value();
          items.push({ ...f, name: alias(f.path) });
        } while (isPunct(peek(), ','));
        return { type: 'fields', items, pos: t.pos };
      }
      case 'stats': {
        const aggs: Agg[] = [agg()];
        while (isPunct(peek(), ',')) {
          next();
          aggs.push(agg());
        }
        const by: GroupKey[] = [];
        if (isWord(peek(), 'by')) {
          next();
          by.push(groupKey());
          while (isPunct(peek(), ',')) {
            next();
            by.push(groupKey());
          }
        }
        return { type: 'stats', aggs, by, pos: t.pos };
      }
      case 'sort': {
        const keys: { path: string; desc: boolean; calc?: Calc }[] = [];
        do {
          if (keys.length) next();
          const key = sortKey();
          let desc = false;
          if (isWord(peek(), 'desc')) {
            next();
            desc = true;
          } else if (isWord(peek(), 'asc')) next();
          keys.push({ ...key, desc });
        } while (isPunct(peek(), ','));
        return { type: 'sort', keys, pos: t.pos };
      }
      default: {
        const n = peek();
        if (n.type !== 'number' || !Number.isInteger(n.value) || n.value! < 1 || n.value! > MAX_LIMIT) {
          return fail([`a whole number from 1 to ${MAX_LIMIT}`]);
        }
        next();
        return { type: 'limit', n: n.value!, pos: t.pos };
      }
    }
  }

  const commands: Command[] = [];
  if (peek().type === 'eof') return commands;
  commands.push(command());
  while (peek().type !== 'eof') {
    if (!isPunct(peek(), '|')) fail(["'|'", 'end of query']);
    next();
    commands.push(command());
  }
  return commands;
}
