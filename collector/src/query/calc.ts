/**
 * Arithmetic of the query language: `fields durationNano / 1e6 as ms`, `stats avg(durationNano /
 * 1e6)`, `sort attributes.gen_ai.usage.input_tokens + attributes.gen_ai.usage.output_tokens desc`.
 * Numbers and fields with + - * / and parentheses; `-` needs spaces around it (`a-b` is a field
 * name). Evaluated per row in JS after the store's scan: a missing or non-numeric operand, or a
 * division by zero, gives null.
 */
import type { Command } from './ast.js';
import type { Getter } from './evaluate.js';
import type { Token } from './lexer.js';

export type CalcOp = '+' | '-' | '*' | '/';

export type Calc =
  | { type: 'num'; value: number }
  | { type: 'field'; path: string }
  | { type: 'op'; op: CalcOp; left: Calc; right: Calc };

/** What the parser lends the arithmetic parser: its tokens and its rules for fields and nesting. */
export interface CalcCursor {
  peek(): Token;
  next(): Token;
  field(): { path: string };
  nested<T>(t: Token, fn: () => T): T;
  expectPunct(p: string): Token;
}

const isOp = (t: Token, ops: readonly string[]): boolean => t.type === 'punct' && ops.includes(t.text);

/** `operand (op operand)*`, left-associative, for the ops of one precedence level. */
function binary(c: CalcCursor, ops: readonly CalcOp[], operand: (c: CalcCursor) => Calc): Calc {
  let left = operand(c);
  while (isOp(c.peek(), ops)) {
    const op = c.next().text as CalcOp;
    left = { type: 'op', op, left, right: operand(c) };
  }
  return left;
}

/** Parses `term (('+' | '-') term)*`; a single field comes back as `{ type: 'field' }`. */
export function parseCalc(c: CalcCursor): Calc {
  return binary(c, ['+', '-'], term);
}

function term(c: CalcCursor): Calc {
  return binary(c, ['*', '/'], factor);
}

function factor(c: CalcCursor): Calc {
  const t = c.peek();
  if (t.type === 'number') {
    c.next();
    return { type: 'num', value: t.value! };
  }
  if (isOp(t, ['('])) {
    c.next();
    const inner = c.nested(t, () => parseCalc(c));
    c.expectPunct(')');
    return inner;
  }
  return { type: 'field', path: c.field().path };
}

/** The fields a calculation reads. */
export function calcFields(calc: Calc, out: string[] = []): string[] {
  if (calc.type === 'field') out.push(calc.path);
  else if (calc.type === 'op') {
    calcFields(calc.left, out);
    calcFields(calc.right, out);
  }
  return out;
}

function toNumber(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

/** The value of a calculation on one row, read through `get`; null when it has none. */
export function evaluateCalc(calc: Calc, row: unknown, get: Getter): number | null {
  if (calc.type === 'num') return calc.value;
  if (calc.type === 'field') return toNumber(get(row, calc.path));
  const a = evaluateCalc(calc.left, row, get);
  const b = evaluateCalc(calc.right, row, get);
  if (a === null || b === null) return null;
  const v =
    calc.op === '+' ? a + b : calc.op === '-' ? a - b : calc.op === '*' ? a * b : b === 0 ? null : a / b;
  return v === null || !Number.isFinite(v) ? null : v;
}

/** The arithmetic of a query's `fields` items, aggregates and sort keys, by their text. */
export function calcsOf(commands: readonly Command[]): Map<string, Calc> {
  const out = new Map<string, Calc>();
  for (const cmd of commands) {
    const withCalc =
      cmd.type === 'fields'
        ? cmd.items
        : cmd.type === 'stats'
          ? cmd.aggs
          : cmd.type === 'sort'
            ? cmd.keys
            : [];
    for (const v of withCalc) if (v.calc) out.set('path' in v ? v.path : v.field!, v.calc);
  }
  return out;
}

/**
 * A getter that also reads arithmetic by its text: a value the rows hold under that name (a
 * projected column) first, else the calculation over the row's fields.
 */
export function withCalcs(get: Getter, calcs: ReadonlyMap<string, Calc>): Getter {
  if (calcs.size === 0) return get;
  return (row, path) => {
    const held = get(row, path);
    if (held !== undefined) return held;
    const calc = calcs.get(path);
    return calc ? evaluateCalc(calc, row, get) : undefined;
  };
}
