/**
 * Critical path: the chain of work that determines a trace's end-to-end latency. Walking back from
 * the end of a span, the child that finished last before the cursor was what the span waited for;
 * the time between children is the span's own work. Same idea as Jaeger's critical path, as a pure
 * function over the span tree.
 */
import type { SpanTiming, SpanTreeNode } from './span-tree.js';

/** A stretch of time during which `spanId` was the span holding up the trace. */
export interface CriticalSegment {
  spanId: string;
  startTimeUnixNano: number;
  endTimeUnixNano: number;
}

export interface CriticalPath {
  /** Segments in time order; together they cover the root from its start to its end. */
  segments: CriticalSegment[];
  /** Every span that owns at least one segment. */
  spanIds: Set<string>;
  /** Critical-path time per span id. */
  durationBySpanNano: Map<string, number>;
}

/** The critical path under one root span. */
export function criticalPath<S extends SpanTiming>(root: SpanTreeNode<S>): CriticalPath {
  const reversed: CriticalSegment[] = [];
  const push = (spanId: string, start: number, end: number): void => {
    if (end > start) reversed.push({ spanId, startTimeUnixNano: start, endTimeUnixNano: end });
  };
  // Explicit stack of pending "explain this span up to this cursor" frames, so deep traces are fine.
  type Frame = { node: SpanTreeNode<S>; cursor: number; children: SpanTreeNode<S>[]; next: number };
  const frame = (node: SpanTreeNode<S>, end: number): Frame => ({
    node,
    cursor: Math.min(node.span.endTimeUnixNano, end),
    // Latest end first; a child outliving its parent is clipped to the parent's end.
    children: [...node.children].sort(
      (a, b) =>
        b.span.endTimeUnixNano - a.span.endTimeUnixNano ||
        b.span.startTimeUnixNano - a.span.startTimeUnixNano,
    ),
    next: 0,
  });
  const stack: Frame[] = [frame(root, root.span.endTimeUnixNano)];
  while (stack.length > 0) {
    const f = stack[stack.length - 1]!;
    const start = f.node.span.startTimeUnixNano;
    let descended = false;
    while (f.next < f.children.length && f.cursor > start) {
      const child = f.children[f.next++]!;
      const childEnd = Math.min(child.span.endTimeUnixNano, f.cursor);
      // A child that ends after the cursor ran in parallel with the one already on the path.
      if (child.span.endTimeUnixNano > f.cursor && f.next > 1) continue;
      if (child.span.startTimeUnixNano >= f.cursor || childEnd <= start) continue;
      push(f.node.span.spanId, childEnd, f.cursor);
      f.cursor = Math.max(child.span.startTimeUnixNano, start);
      stack.push(frame(child, childEnd));
      descended = true;
      break;
    }
    if (descended) continue;
    push(f.node.span.spanId, start, f.cursor);
    stack.pop();
  }
  const segments = reversed.reverse();
  const durationBySpanNano = new Map<string, number>();
  for (const s of segments) {
    durationBySpanNano.set(
      s.spanId,
      (durationBySpanNano.get(s.spanId) ?? 0) + s.endTimeUnixNano - s.startTimeUnixNano,
    );
  }
  return { segments, spanIds: new Set(durationBySpanNano.keys()), durationBySpanNano };
}

/**
 * The critical path of a whole trace: that of the root that ends last (a trace normally has one
 * root; orphans from a partial trace are side roots). Empty for an empty forest.
 */
export function traceCriticalPath<S extends SpanTiming>(roots: readonly SpanTreeNode<S>[]): CriticalPath {
  let main: SpanTreeNode<S> | undefined;
  for (const r of roots) {
    const better =
      !main ||
      (main.orphan && !r.orphan) ||
      (main.orphan === r.orphan &&
        r.span.endTimeUnixNano - r.span.startTimeUnixNano >
          main.span.endTimeUnixNano - main.span.startTimeUnixNano);
    if (better) main = r;
  }
  return main ? criticalPath(main) : { segments: [], spanIds: new Set(), durationBySpanNano: new Map() };
}
