import type { Calc } from './calc.js';
import type { Pattern } from './pattern.js';

/** Query AST. Every node keeps the offset it came from, for errors raised while running. */
export type Literal = string | number | boolean | null;

export type Expr =
  | { type: 'field'; path: string; pos: number }
  | { type: 'literal'; value: Literal; pos: number }
  | { type: 'cmp'; op: CmpOp; field: string; value: Literal; pos: number }
  | { type: 'like'; field: string; pattern: Pattern; negate: boolean; pos: number }
  | { type: 'in'; field: string; values: Literal[]; negate: boolean; pos: number }
  | { type: 'present'; field: string; negate: boolean; pos: number }
  | { type: 'empty'; field: string; pos: number }
  | { type: 'and' | 'or'; left: Expr; right: Expr; pos: number }
  | { type: 'not'; expr: Expr; pos: number };

/**
 * A value a `fields` item or `sort` key reads: a field path, or arithmetic (`calc`) whose `path`
 * is its text as written (`durationNano / 1e6`), the column's name unless aliased.
 */
export interface Projection {
  path: string;
  name: string;
  calc?: Calc;
}

export type CmpOp = '=' | '!=' | '<' | '<=' | '>' | '>=';

export type AggFn = 'count' | 'count_distinct' | 'sum' | 'avg' | 'min' | 'max' | 'pct';

export interface Agg {
  fn: AggFn;
  /** Field path (an arithmetic one's text, with `calc`); absent for count(*). */
  field?: string;
  /** Set when the argument is arithmetic (`avg(durationNano / 1e6)`). */
  calc?: Calc;
  /** Percentile for pct(). */
  p?: number;
  /** Output column name: the alias, or the canonical text like `avg(durationNano)`. */
  name: string;
}

export type GroupKey =
  { type: 'field'; path: string; name: string } | { type: 'bin'; ms: number; name: string };

export type Command =
  | { type: 'filter'; expr: Expr; pos: number }
  | { type: 'fields'; items: Projection[]; pos: number }
  | { type: 'stats'; aggs: Agg[]; by: GroupKey[]; pos: number }
  | { type: 'sort'; keys: { path: string; desc: boolean; calc?: Calc }[]; pos: number }
  | { type: 'limit'; n: number; pos: number };
