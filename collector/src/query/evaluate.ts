import type { Agg, Expr, Literal } from './ast.js';

/** Reads a field of a row; rows are span records, extracted columns or projected objects. */
export type Getter = (row: unknown, path: string) => unknown;

function toNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v);
    return Number.isNaN(n) ? undefined : n;
  }
  if (typeof v === 'boolean') return v ? 1 : 0;
  return undefined;
}

export function looseEquals(a: unknown, b: Literal): boolean {
  if (a === undefined || a === null) return b === null;
  if (Array.isArray(a)) return a.some((x) => looseEquals(x, b));
  if (typeof a === typeof b) return a === b;
  if (typeof a === 'number' && typeof b === 'string') return b.trim() !== '' && Number(b) === a;
  if (typeof a === 'string' && typeof b === 'number') return a.trim() !== '' && Number(a) === b;
  return String(a) === String(b);
}

/** Ordering of two values: numbers numerically, else strings; undefined when incomparable. */
export function compareValues(a: unknown, b: unknown): number | undefined {
  if (a === undefined || a === null || b === undefined || b === null) return undefined;
  const na = toNumber(a);
  const nb = toNumber(b);
  if (na !== undefined && nb !== undefined && (typeof a === 'number' || typeof b === 'number'))
    return na - nb;
  const sa = typeof a === 'string' ? a : JSON.stringify(a);
  const sb = typeof b === 'string' ? b : JSON.stringify(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

/** Sort order used by `sort`: missing values last, numbers before strings. */
export function sortCompare(a: unknown, b: unknown): number {
  const am = a === undefined || a === null;
  const bm = b === undefined || b === null;
  if (am || bm) return am === bm ? 0 : am ? 1 : -1;
  const na = typeof a === 'number';
  const nb = typeof b === 'number';
  if (na !== nb) return na ? -1 : 1;
  return compareValues(a, b) ?? 0;
}

function text(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** Evaluates a filter expression against one row. */
export function evaluate(expr: Expr, row: unknown, get: Getter): boolean {
  switch (expr.type) {
    case 'and':
      return evaluate(expr.left, row, get) && evaluate(expr.right, row, get);
    case 'or':
      return evaluate(expr.left, row, get) || evaluate(expr.right, row, get);
    case 'not':
      return !evaluate(expr.expr, row, get);
    case 'cmp': {
      const v = get(row, expr.field);
      if (expr.op === '=') return looseEquals(v, expr.value);
      if (expr.op === '!=') return !looseEquals(v, expr.value);
      const c = Array.isArray(v) ? undefined : compareValues(v, expr.value);
      if (c === undefined) return false;
      return expr.op === '<' ? c < 0 : expr.op === '<=' ? c <= 0 : expr.op === '>' ? c > 0 : c >= 0;
    }
    case 'like': {
      const v = get(row, expr.field);
      const hit = v !== undefined && v !== null && expr.pattern.test(text(v));
      return hit !== expr.negate;
    }
    case 'in': {
      const v = get(row, expr.field);
      return expr.values.some((x) => looseEquals(v, x)) !== expr.negate;
    }
    case 'present': {
      const v = get(row, expr.field);
      return (v !== undefined && v !== null) !== expr.negate;
    }
    case 'empty': {
      const v = get(row, expr.field);
      return v === undefined || v === null || v === '';
    }
    default:
      return false;
  }
}

/** One aggregate's running state. */
export interface Accumulator {
  add(row: unknown): void;
  result(): number | null;
}

export function accumulator(agg: Agg, get: Getter): Accumulator {
  const field = agg.field;
  switch (agg.fn) {
    case 'count': {
      let n = 0;
      return {
        add: (row) => {
          if (!field) n++;
          else {
            const v = get(row, field);
            if (v !== undefined && v !== null) n++;
          }
        },
        result: () => n,
      };
    }
    case 'count_distinct': {
      const seen = new Set<string>();
      return {
        add: (row) => {
          const v = get(row, field!);
          if (v !== undefined && v !== null) seen.add(text(v));
        },
        result: () => seen.size,
      };
    }
    case 'pct': {
      const values: number[] = [];
      return {
        add: (row) => {
          const n = toNumber(get(row, field!));
          if (n !== undefined) values.push(n);
        },
        result: () => {
          if (!values.length) return null;
          values.sort((a, b) => a - b);
          // Nearest rank.
          const rank = Math.max(1, Math.ceil((agg.p! / 100) * values.length));
          return values[Math.min(values.length, rank) - 1]!;
        },
      };
    }
    default: {
      let n = 0;
      let sum = 0;
      let min = Infinity;
      let max = -Infinity;
      return {
        add: (row) => {
          const v = toNumber(get(row, field!));
          if (v === undefined) return;
          n++;
          sum += v;
          if (v < min) min = v;
          if (v > max) max = v;
        },
        result: () => {
          if (agg.fn === 'sum') return sum;
          if (!n) return null;
          return agg.fn === 'avg' ? sum / n : agg.fn === 'min' ? min : max;
        },
      };
    }
  }
}
