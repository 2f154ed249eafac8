import { describe, expect, it } from 'vitest';
import type { SpanTreeNode } from '../../src/trace-model/index.js';
import type { SpanRecord } from '../../src/wire-types.js';
import type { SpanView } from './view-types.js';
import { toSpanView, traceFromSpans, toTraceSummaryView } from './convert.js';
import { closedIds, isClosed, rootsAt, toggled, visibleRows } from './waterfall-model.js';

const record = (spanId: string, parentSpanId: string | undefined, start: number): SpanRecord => ({
  resource: { attributes: { 'service.name': 'svc' } },
  scope: { name: 'test' },
  traceId: 'f'.repeat(32),
  spanId,
  ...(parentSpanId ? { parentSpanId } : {}),
  name: spanId,
  kind: 'INTERNAL',
  startTimeUnixNano: start * 1e6,
  endTimeUnixNano: (start + 1) * 1e6,
  durationNano: 1e6,
  attributes: {},
  status: { code: 'UNSET' },
  events: [],
  links: [],
});

// r → a → (a1 → a1x, a2), r → b
const trace = traceFromSpans(
  toTraceSummaryView({
    traceId: 'f'.repeat(32),
    rootName: 'r',
    serviceName: 'svc',
    startTimeUnixNano: 0,
    endTimeUnixNano: 0,
    durationNano: 0,
    spanCount: 6,
    errorCount: 0,
    tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0, total: 0 },
    inProgress: false,
  } as never),
  [
    record('r', undefined, 0),
    record('a', 'r', 1),
    record('a1', 'a', 2),
    record('a1x', 'a1', 3),
    record('a2', 'a', 4),
    record('b', 'r', 5),
  ].map((r) => toSpanView(r)),
);
const names = (
  roots: readonly SpanTreeNode<SpanView>[] = trace.roots,
  folding = { fold: [] as string[] },
  depth?: number,
) => visibleRows(roots, closedIds(roots, { depth, fold: folding.fold }), undefined).map((n) => n.span.spanId);

describe('the waterfall folding (kept in the URL)', () => {
  it('closes every span at a depth or deeper, the folded spans the other way round', () => {
    expect(names()).toEqual(['r', 'a', 'a1', 'a1x', 'a2', 'b']);
    expect(names(trace.roots, { fold: [] }, 0)).toEqual(['r']);
    expect(names(trace.roots, { fold: [] }, 1)).toEqual(['r', 'a', 'b']);
    expect(names(trace.roots, { fold: ['r'] }, 0)).toEqual(['r', 'a', 'b']);
    expect(names(trace.roots, { fold: ['r', 'a'] }, 0)).toEqual(['r', 'a', 'a1', 'a2', 'b']);
    expect(names(trace.roots, { fold: ['a'] })).toEqual(['r', 'a', 'b']);
  });

  it('counts depth from the shown root when re-rooted', () => {
    expect(names(rootsAt(trace.roots, 'a'), { fold: [] }, 1)).toEqual(['a', 'a1', 'a2']);
  });

  it('opens, closes and switches a span', () => {
    const all = { depth: 0, fold: [] };
    expect(isClosed(all, 'r', 0)).toBe(true);
    const opened = toggled(all, 'r', 0, true);
    expect(opened).toEqual({ depth: 0, fold: ['r'] });
    expect(toggled(opened, 'r', 0, true)).toBe(opened);
    expect(toggled(opened, 'r', 0)).toEqual({ depth: 0, fold: [] });
    expect(toggled({ fold: [] }, 'a', 1, false)).toEqual({ depth: undefined, fold: ['a'] });
    expect(toggled({ fold: [] }, 'a', 1, true)).toEqual({ fold: [] });
  });
});
