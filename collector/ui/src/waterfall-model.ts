/**
 * What the waterfall shows of a trace of any size: the rows of the tree (re-rooted at a span,
 * collapsed where asked) or, with a filter, every span matching it in tree order; the error spans
 * in tree order for next / previous error; the ancestors to expand so a span shows.
 */
import { flattenSpanTree } from '../../src/trace-model/index.js';
import type { SpanTreeNode } from '../../src/trace-model/index.js';
import type { SpanView } from './view-types.js';

type Node = SpanTreeNode<SpanView>;

/** The tree node of a span anywhere under `roots`. */
export function findNode(roots: readonly Node[], spanId: string): Node | undefined {
  const stack = [...roots];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node.span.spanId === spanId) return node;
    stack.push(...node.children);
  }
  return undefined;
}

/** The subtree at `root` (the whole trace when unset or not found). */
export function rootsAt(roots: readonly Node[], root: string | undefined): readonly Node[] {
  if (!root) return roots;
  const found = flattenSpanTree(roots).find((n) => n.span.spanId === root);
  return found ? [found] : roots;
}

/**
 * A filter's test of a span: `key=value` compares an attribute (or `status=error`, `service=`),
 * anything else is a case-insensitive part of the span's name.
 */
export function spanMatcher(filter: string): (s: SpanView) => boolean {
  const eq = /^([\w.@-]+)\s*=\s*(.*)$/.exec(filter.trim());
  if (eq) {
    const [, key, value] = eq as unknown as [string, string, string];
    if (key === 'status') return (s) => s.status === value;
    if (key === 'service') return (s) => s.service === value;
    return (s) => s.attributes[key] !== undefined && String(s.attributes[key]) === value;
  }
  const part = filter.trim().toLowerCase();
  return (s) => s.name.toLowerCase().includes(part);
}

/** The rows shown: the filter's matches (flat, tree order), else the tree with `collapsed` closed. */
export function visibleRows(
  roots: readonly Node[],
  collapsed: ReadonlySet<string>,
  filter: string | undefined,
): Node[] {
  if (!filter?.trim()) return flattenSpanTree(roots, collapsed);
  const match = spanMatcher(filter);
  return flattenSpanTree(roots).filter((n) => match(n.span));
}

/**
 * Which spans are closed (their children hidden): every span `depth` or more levels below the
 * shown root (none when unset; all with 0), the spans in `fold` the other way round. Kept in the
 * URL (router.ts TraceRoute).
 */
export interface Folding {
  depth?: number | undefined;
  fold: readonly string[];
}

/** Whether the span at `level` below the shown root is closed. */
export function isClosed(folding: Folding, spanId: string, level: number): boolean {
  const byDepth = folding.depth !== undefined && level >= folding.depth;
  return byDepth !== folding.fold.includes(spanId);
}

/** The ids of the closed spans that have children (flattenSpanTree's `collapsed`). */
export function closedIds(roots: readonly Node[], folding: Folding): Set<string> {
  const base = roots[0]?.depth ?? 0;
  const fold = new Set(folding.fold);
  const closed = new Set<string>();
  const stack = [...roots];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node.children.length === 0) continue;
    const byDepth = folding.depth !== undefined && node.depth - base >= folding.depth;
    if (byDepth !== fold.has(node.span.spanId)) closed.add(node.span.spanId);
    else stack.push(...node.children);
  }
  return closed;
}

/** The folding with the span opened (`open` true), closed (false) or switched (undefined). */
export function toggled(folding: Folding, spanId: string, level: number, open?: boolean): Folding {
  const closed = isClosed(folding, spanId, level);
  if (open !== undefined && open !== closed) return folding;
  const fold = folding.fold.includes(spanId)
    ? folding.fold.filter((id) => id !== spanId)
    : [...folding.fold, spanId];
  return { depth: folding.depth, fold };
}

/** The error span after (or before, `step` -1) `from` in tree order, wrapping round. */
export function nextError(
  roots: readonly Node[],
  from: string | undefined,
  step: 1 | -1,
): string | undefined {
  const order = flattenSpanTree(roots);
  const errors = order.filter((n) => n.span.status === 'error').map((n) => n.span.spanId);
  if (!errors.length) return undefined;
  const at = from ? order.findIndex((n) => n.span.spanId === from) : -1;
  const position = new Map(order.map((n, i) => [n.span.spanId, i]));
  const after = errors.filter((id) => (step === 1 ? position.get(id)! > at : position.get(id)! < at));
  if (step === 1) return after[0] ?? errors[0];
  return after.at(-1) ?? errors.at(-1);
}

/** The span's ancestors (to expand so it shows). */
export function ancestorsOf(spans: readonly SpanView[], spanId: string): string[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const out: string[] = [];
  for (let s = byId.get(spanId); s?.parentSpanId && byId.has(s.parentSpanId); s = byId.get(s.parentSpanId))
    out.push(s.parentSpanId);
  return out;
}
