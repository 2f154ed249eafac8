/**
 * The expression of `filter`: comparisons, `like` / `=~` patterns, `in` lists and the presence
 * functions, joined by `and` / `or` / `not` and parentheses.
 */
import type { CmpOp, Expr, Literal } from './ast.js';
import type { QueryCursor } from './cursor.js';
import type { Token } from './lexer.js';
import { MAX_REGEXES, type Pattern, regexPattern, substringPattern } from './pattern.js';
import { QueryError } from './query-error.js';

const CMP_OPS = ['=', '!=', '<', '<=', '>', '>='];
/** Most values (literals) in one query, `in` lists included: each is a bound SQL parameter. */
export const MAX_VALUES = 5000;
/** Most conditions in one query. */
export const MAX_CONDITIONS = 1000;

/** `a or b`, `a || b`: the whole expression of a filter. */
export function orExpr(c: QueryCursor): Expr {
  return chain(c, 'or', '||', andExpr);
}

function andExpr(c: QueryCursor): Expr {
  return chain(c, 'and', '&&', notExpr);
}

/** `operand (op operand)*`, left-associative, `op` the word or its punctuation. */
function chain(c: QueryCursor, word: 'and' | 'or', punct: string, operand: (c: QueryCursor) => Expr): Expr {
  let left = operand(c);
  while (c.isWord(c.peek(), word) || c.isPunct(c.peek(), punct)) {
    const t = c.next();
    left = { type: word, left, right: operand(c), pos: t.pos };
  }
  return left;
}

function notExpr(c: QueryCursor): Expr {
  const t = c.peek();
  if (c.isWord(t, 'not') || c.isPunct(t, '!')) {
    c.next();
    return { type: 'not', expr: c.nested(t, () => notExpr(c)), pos: t.pos };
  }
  return primary(c);
}

function primary(c: QueryCursor): Expr {
  const t = c.peek();
  if (c.isPunct(t, '(')) {
    c.next();
    const e = c.nested(t, () => orExpr(c));
    c.expectPunct(')');
    return e;
  }
  if (++c.used.conditions > MAX_CONDITIONS)
    throw new QueryError(`query has more than ${MAX_CONDITIONS} conditions`, t.pos, [], 'QueryError');
  if (t.type === 'ident' && c.isPunct(c.peekSecond(), '(')) return call(c, t);
  return condition(c);
}

/** `ispresent(f)`, `isempty(f)`, `isblank(f)`. */
function call(c: QueryCursor, t: Token): Expr {
  const fn = t.text.toLowerCase();
  if (fn !== 'ispresent' && fn !== 'isempty' && fn !== 'isblank')
    throw new QueryError(`unknown function '${t.text}' in filter`, t.pos, ['ispresent', 'isempty']);
  c.next();
  c.next();
  const f = c.field();
  c.expectPunct(')');
  return fn === 'ispresent'
    ? { type: 'present', field: f.path, negate: false, pos: t.pos }
    : { type: 'empty', field: f.path, pos: t.pos };
}

/** A field, then a comparison, `=~`, `[not] like` or `[not] in [...]`. */
function condition(c: QueryCursor): Expr {
  const f = c.field();
  const op = c.peek();
  if (op.type === 'punct' && CMP_OPS.includes(op.text)) {
    c.next();
    return { type: 'cmp', op: op.text as CmpOp, field: f.path, value: literal(c), pos: f.pos };
  }
  if (c.isPunct(op, '=~')) {
    c.next();
    return { type: 'like', field: f.path, pattern: likePattern(c), negate: false, pos: f.pos };
  }
  const negate = c.takeWord('not');
  if (c.takeWord('like')) return { type: 'like', field: f.path, pattern: likePattern(c), negate, pos: f.pos };
  if (c.takeWord('in')) return { type: 'in', field: f.path, values: list(c), negate, pos: f.pos };
  return c.fail(negate ? ["'like'", "'in'"] : ['a comparison (= != < <= > >=)', "'like'", "'in'", "'=~'"]);
}

/** `[literal, ...]`, possibly empty. */
function list(c: QueryCursor): Literal[] {
  c.expectPunct('[');
  const values: Literal[] = [];
  if (!c.isPunct(c.peek(), ']')) {
    values.push(literal(c));
    while (c.isPunct(c.peek(), ',')) {
      c.next();
      values.push(literal(c));
    }
  }
  c.expectPunct(']');
  return values;
}

function literal(c: QueryCursor): Literal {
  const t = c.peek();
  if (++c.used.values > MAX_VALUES)
    throw new QueryError(`query has more than ${MAX_VALUES} values`, t.pos, [], 'QueryError');
  if (t.type === 'string' || t.type === 'number') {
    c.next();
    return t.type === 'string' ? t.text : t.value!;
  }
  if (t.type === 'ident' && ['true', 'false', 'null'].includes(t.text.toLowerCase())) {
    c.next();
    const w = t.text.toLowerCase();
    return w === 'null' ? null : w === 'true';
  }
  return c.fail(['a string', 'a number', 'true', 'false', 'null']);
}

function likePattern(c: QueryCursor): Pattern {
  const t = c.peek();
  if (t.type === 'regex') {
    c.next();
    c.used.regexes.add(`${t.flags}/${t.text}`);
    if (c.used.regexes.size > MAX_REGEXES)
      throw new QueryError(`query has more than ${MAX_REGEXES} regular expressions`, t.pos, [], 'QueryError');
    return regexPattern(t.text, t.flags ?? '', t.pos);
  }
  if (t.type === 'string') {
    c.next();
    return substringPattern(t.text);
  }
  return c.fail(['a string', 'a /regex/']);
}
