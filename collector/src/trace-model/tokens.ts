/**
 * Token usage per span and its roll-up per trace and session without double counting: an agent
 * span (invoke_agent) often reports the sum of its model calls, which also report their own usage.
 * Rule: a span's own usage counts only when none of its descendants carry usage.
 */
import type { AttributeValue, Attributes, SpanRecord, TokenTotals } from '../wire-types.js';
import { buildSpanTree, type SpanTiming, type SpanTreeNode } from './span-tree.js';

/** Attribute keys read for usage, most current convention first. */
export const INPUT_TOKEN_KEYS = [
  'gen_ai.usage.input_tokens',
  'gen_ai.usage.prompt_tokens',
  'llm.token_count.prompt',
] as const;
export const OUTPUT_TOKEN_KEYS = [
  'gen_ai.usage.output_tokens',
  'gen_ai.usage.completion_tokens',
  'llm.token_count.completion',
] as const;
export const TOTAL_TOKEN_KEYS = [
  'gen_ai.usage.total_tokens',
  'llm.usage.total_tokens',
  'llm.token_count.total',
] as const;

export const ZERO_TOKENS: Readonly<TokenTotals> = Object.freeze({ input: 0, output: 0, total: 0 });

/** A token count from an attribute value: numbers or int64-as-string; anything else is absent. */
function tokenCount(value: AttributeValue | undefined): number | undefined {
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && value.trim() !== ''
        ? Number(value)
        : NaN;
  return Number.isFinite(n) && n >= 0 ? Math.floor(n) : undefined;
}

function firstCount(attributes: Attributes, keys: readonly string[]): number | undefined {
  for (const key of keys) {
    const n = tokenCount(attributes[key]);
    if (n !== undefined) return n;
  }
  return undefined;
}

/** The usage a span reports itself, or undefined when it carries no usage attribute. */
export function spanTokenUsage(attributes: Attributes): TokenTotals | undefined {
  const input = firstCount(attributes, INPUT_TOKEN_KEYS);
  const output = firstCount(attributes, OUTPUT_TOKEN_KEYS);
  const total = firstCount(attributes, TOTAL_TOKEN_KEYS);
  if (input === undefined && output === undefined && total === undefined) return undefined;
  return { input: input ?? 0, output: output ?? 0, total: total ?? (input ?? 0) + (output ?? 0) };
}

export function addTokens(a: TokenTotals, b: TokenTotals): TokenTotals {
  return { input: a.input + b.input, output: a.output + b.output, total: a.total + b.total };
}

export function sumTokens(list: Iterable<TokenTotals>): TokenTotals {
  let sum: TokenTotals = { ...ZERO_TOKENS };
  for (const t of list) sum = addTokens(sum, t);
  return sum;
}

export interface TokenRollup {
  /** Usage the span reports itself (undefined: none). */
  own: Map<string, TokenTotals>;
  /** Usage counted for the span's subtree, without double counting. Absent when nothing in it has usage. */
  rolledUp: Map<string, TokenTotals>;
  /** Spans whose own usage is counted (the leaves of usage). */
  counted: Set<string>;
  /** Sum over the whole forest. */
  total: TokenTotals;
}

/** Rolls usage up a span forest (spans from `buildSpanTree`). */
export function rollUpTokens<S extends SpanTiming & { attributes: Attributes }>(
  roots: readonly SpanTreeNode<S>[],
): TokenRollup {
  const own = new Map<string, TokenTotals>();
  const rolledUp = new Map<string, TokenTotals>();
  const counted = new Set<string>();
  // Post-order without recursion: children are settled before their parent.
  const order: SpanTreeNode<S>[] = [];
  const stack = [...roots];
  while (stack.length > 0) {
    const node = stack.pop()!;
    order.push(node);
    stack.push(...node.children);
  }
  for (let i = order.length - 1; i >= 0; i--) {
    const node = order[i]!;
    const id = node.span.spanId;
    const mine = spanTokenUsage(node.span.attributes);
    if (mine) own.set(id, mine);
    const fromChildren = node.children.map((c) => rolledUp.get(c.span.spanId)).filter((t) => t !== undefined);
    if (fromChildren.length > 0) rolledUp.set(id, sumTokens(fromChildren));
    else if (mine) {
      rolledUp.set(id, mine);
      counted.add(id);
    }
  }
  const total = sumTokens(roots.map((r) => rolledUp.get(r.span.spanId)).filter((t) => t !== undefined));
  return { own, rolledUp, counted, total };
}

/** Token totals of one trace from its spans in any order (orphans included). */
export function traceTokenTotals(spans: readonly SpanRecord[]): TokenTotals {
  return rollUpTokens(buildSpanTree(spans)).total;
}

/** The model a span's usage was billed for: the response's model, else the requested one ('' if unsaid). */
export function usageModel(attributes: Attributes): string {
  for (const key of ['gen_ai.response.model', 'gen_ai.request.model', 'llm.model_name']) {
    const v = attributes[key];
    if (typeof v === 'string' && v !== '') return v;
  }
  return '';
}

/**
 * Usage per model below `nodes` (their whole subtrees), counting only the spans whose usage the
 * roll-up counts, so per-model sums add up to the roll-up's totals (no double counting).
 */
export function tokensByModel<S extends SpanTiming & { attributes: Attributes }>(
  nodes: readonly SpanTreeNode<S>[],
  rollup: Pick<TokenRollup, 'own' | 'counted'>,
): Record<string, TokenTotals> {
  const out: Record<string, TokenTotals> = {};
  const stack = [...nodes];
  while (stack.length > 0) {
    const node = stack.pop()!;
    stack.push(...node.children);
    const id = node.span.spanId;
    const own = rollup.own.get(id);
    if (!own || !rollup.counted.has(id)) continue;
    const model = usageModel(node.span.attributes);
    out[model] = addTokens(out[model] ?? ZERO_TOKENS, own);
  }
  return out;
}

/** Per-model usage maps added together (a session's traces). */
export function sumTokensByModel(
  list: Iterable<Record<string, TokenTotals> | undefined>,
): Record<string, TokenTotals> {
  const out: Record<string, TokenTotals> = {};
  for (const byModel of list)
    for (const [model, t] of Object.entries(byModel ?? {}))
      out[model] = addTokens(out[model] ?? ZERO_TOKENS, t);
  return out;
}

/** A trace's usage: totals, and per model (for cost). */
export function traceTokenUsage(spans: readonly SpanRecord[]): {
  total: TokenTotals;
  byModel: Record<string, TokenTotals>;
} {
  const roots = buildSpanTree(spans);
  const rollup = rollUpTokens(roots);
  return { total: rollup.total, byModel: tokensByModel(roots, rollup) };
}
