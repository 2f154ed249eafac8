/**
 * Span-tree building: turns a flat list of spans (any order, possibly incomplete) into a forest
 * ordered by start time. Pure; shared by the collector API, the CLI waterfall and the web UI.
 */

/** The fields tree building and timing need; `SpanRecord` satisfies it. */
export interface SpanTiming {
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: number;
  endTimeUnixNano: number;
}

export interface SpanTreeNode<S extends SpanTiming = SpanTiming> {
  span: S;
  children: SpanTreeNode<S>[];
  /** Depth from its root (roots are 0). */
  depth: number;
  /**
   * True when the span names a parent that is not in the set (not arrived yet, dropped, or in
   * another process that did not export): it is shown as a root instead of being lost.
   */
  orphan: boolean;
}

/** Start time, then name, then id: the same input always gives the same order. */
export function compareSpans(a: SpanTiming, b: SpanTiming): number {
  return (
    a.startTimeUnixNano - b.startTimeUnixNano ||
    (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) ||
    (a.spanId < b.spanId ? -1 : a.spanId > b.spanId ? 1 : 0)
  );
}

function byStart<S extends SpanTiming>(a: SpanTreeNode<S>, b: SpanTreeNode<S>): number {
  return compareSpans(a.span, b.span);
}

/**
 * Builds the forest of a trace. A span whose parent is missing becomes an orphan root; a span id
 * seen twice (an exporter retry) keeps its first copy; parent cycles from hostile input are broken
 * by promoting the earliest span of the cycle to a root, so every span appears exactly once.
 */
export function buildSpanTree<S extends SpanTiming>(spans: readonly S[]): SpanTreeNode<S>[] {
  const nodes = new Map<string, SpanTreeNode<S>>();
  for (const span of spans) {
    if (!nodes.has(span.spanId)) nodes.set(span.spanId, { span, children: [], depth: 0, orphan: false });
  }
  const roots: SpanTreeNode<S>[] = [];
  for (const node of nodes.values()) {
    const parentId = node.span.parentSpanId;
    const parent = parentId && parentId !== node.span.spanId ? nodes.get(parentId) : undefined;
    if (parent) parent.children.push(node);
    else {
      node.orphan = Boolean(parentId);
      roots.push(node);
    }
  }
  const reached = new Set<SpanTreeNode<S>>();
  const settle = (root: SpanTreeNode<S>): void => {
    // Iterative: a hostile trace can nest deeper than the call stack.
    const stack: SpanTreeNode<S>[] = [root];
    root.depth = 0;
    while (stack.length > 0) {
      const node = stack.pop()!;
      reached.add(node);
      node.children.sort(byStart);
      for (const child of node.children) {
        child.depth = node.depth + 1;
        stack.push(child);
      }
    }
  };
  for (const root of roots) settle(root);
  if (reached.size < nodes.size) {
    // Whatever was not reached hangs in a parent cycle: cut each cycle at its earliest span.
    const unreached = [...nodes.values()].filter((n) => !reached.has(n)).sort(byStart);
    for (const node of unreached) {
      if (reached.has(node)) continue;
      const parent = nodes.get(node.span.parentSpanId ?? '');
      if (parent) parent.children = parent.children.filter((c) => c !== node);
      node.orphan = true;
      roots.push(node);
      settle(node);
    }
  }
  return roots.sort(byStart);
}

/** Depth-first, pre-order visit (parents before children, siblings by start time). */
export function walkSpanTree<S extends SpanTiming>(
  roots: readonly SpanTreeNode<S>[],
  visit: (node: SpanTreeNode<S>) => void,
): void {
  const stack = [...roots].reverse();
  while (stack.length > 0) {
    const node = stack.pop()!;
    visit(node);
    for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]!);
  }
}

/**
 * The tree as waterfall rows in display order. Children of a span id in `collapsed` are left out
 * (the collapsed span itself stays).
 */
export function flattenSpanTree<S extends SpanTiming>(
  roots: readonly SpanTreeNode<S>[],
  collapsed: ReadonlySet<string> = new Set(),
): SpanTreeNode<S>[] {
  const rows: SpanTreeNode<S>[] = [];
  const stack = [...roots].reverse();
  while (stack.length > 0) {
    const node = stack.pop()!;
    rows.push(node);
    if (collapsed.has(node.span.spanId)) continue;
    for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]!);
  }
  return rows;
}

/** Earliest start and latest end over all spans (0/0 for none). */
export function traceBounds(spans: readonly SpanTiming[]): {
  startTimeUnixNano: number;
  endTimeUnixNano: number;
} {
  if (spans.length === 0) return { startTimeUnixNano: 0, endTimeUnixNano: 0 };
  let start = Infinity;
  let end = -Infinity;
  for (const s of spans) {
    if (s.startTimeUnixNano < start) start = s.startTimeUnixNano;
    if (s.endTimeUnixNano > end) end = s.endTimeUnixNano;
  }
  return { startTimeUnixNano: start, endTimeUnixNano: Math.max(start, end) };
}
