import { describe, expect, it } from 'vitest';
import { buildSpanTree, flattenSpanTree, traceBounds, walkSpanTree } from './span-tree.js';
import { testSpan } from './test-spans.test-util.js';

const ids = (nodes: { span: { spanId: string } }[]): string[] => nodes.map((n) => n.span.spanId);

describe('buildSpanTree', () => {
  it('nests children under parents and orders siblings by start time, whatever the input order', () => {
    const spans = [
      testSpan({ id: 'tool', parent: 'agent', startMs: 30, endMs: 40 }),
      testSpan({ id: 'chat2', parent: 'agent', startMs: 45, endMs: 90 }),
      testSpan({ id: 'agent', startMs: 0, endMs: 100 }),
      testSpan({ id: 'chat1', parent: 'agent', startMs: 5, endMs: 25 }),
      testSpan({ id: 'http', parent: 'tool', startMs: 31, endMs: 39 }),
    ];
    const roots = buildSpanTree(spans);
    expect(ids(roots)).toEqual(['agent']);
    expect(ids(roots[0]!.children)).toEqual(['chat1', 'tool', 'chat2']);
    expect(roots[0]!.children[1]!.children[0]!.depth).toBe(2);
    expect(ids(buildSpanTree([...spans].reverse())[0]!.children)).toEqual(['chat1', 'tool', 'chat2']);
  });

  it('breaks start-time ties by name then id so the order is stable', () => {
    const roots = buildSpanTree([
      testSpan({ id: 'b2', parent: 'r', name: 'b', startMs: 1, endMs: 2 }),
      testSpan({ id: 'a1', parent: 'r', name: 'b', startMs: 1, endMs: 2 }),
      testSpan({ id: 'z', parent: 'r', name: 'a', startMs: 1, endMs: 2 }),
      testSpan({ id: 'r', startMs: 0, endMs: 3 }),
    ]);
    expect(ids(roots[0]!.children)).toEqual(['z', 'a1', 'b2']);
  });

  it('keeps spans whose parent is missing as orphan roots', () => {
    const roots = buildSpanTree([
      testSpan({ id: 'late-child', parent: 'not-arrived', startMs: 10, endMs: 20 }),
      testSpan({ id: 'root', startMs: 0, endMs: 5 }),
    ]);
    expect(ids(roots)).toEqual(['root', 'late-child']);
    expect(roots.map((r) => r.orphan)).toEqual([false, true]);
  });

  it('survives hostile input: duplicate ids, self-parents and parent cycles', () => {
    const roots = buildSpanTree([
      testSpan({ id: 'x', parent: 'y', startMs: 2, endMs: 3 }),
      testSpan({ id: 'y', parent: 'x', startMs: 1, endMs: 4 }),
      testSpan({ id: 'self', parent: 'self', startMs: 0, endMs: 1 }),
      testSpan({ id: 'dup', startMs: 5, endMs: 6 }),
      testSpan({ id: 'dup', startMs: 7, endMs: 8 }),
    ]);
    const seen: string[] = [];
    walkSpanTree(roots, (n) => seen.push(n.span.spanId));
    expect(seen.sort()).toEqual(['dup', 'self', 'x', 'y']);
    expect(ids(roots)).toEqual(['self', 'y', 'dup']);
    expect(ids(roots[1]!.children)).toEqual(['x']);
  });

  it('handles a chain deeper than the call stack', () => {
    const spans = Array.from({ length: 20_000 }, (_, i) =>
      testSpan({ id: `s${i}`, parent: i === 0 ? undefined : `s${i - 1}`, startMs: i, endMs: 40_000 - i }),
    );
    const rows = flattenSpanTree(buildSpanTree(spans));
    expect(rows).toHaveLength(20_000);
    expect(rows[19_999]!.depth).toBe(19_999);
  });
});

describe('flattenSpanTree', () => {
  const roots = buildSpanTree([
    testSpan({ id: 'r', startMs: 0, endMs: 10 }),
    testSpan({ id: 'a', parent: 'r', startMs: 1, endMs: 5 }),
    testSpan({ id: 'a1', parent: 'a', startMs: 2, endMs: 3 }),
    testSpan({ id: 'b', parent: 'r', startMs: 6, endMs: 9 }),
  ]);
  it('lists rows in pre-order (waterfall order)', () => {
    expect(ids(flattenSpanTree(roots))).toEqual(['r', 'a', 'a1', 'b']);
  });
  it('hides the descendants of collapsed spans but keeps the span', () => {
    expect(ids(flattenSpanTree(roots, new Set(['a'])))).toEqual(['r', 'a', 'b']);
    expect(ids(flattenSpanTree(roots, new Set(['r'])))).toEqual(['r']);
  });
});

describe('traceBounds', () => {
  it('spans the earliest start to the latest end', () => {
    const b = traceBounds([
      testSpan({ id: 'a', startMs: 5, endMs: 9 }),
      testSpan({ id: 'b', startMs: 2, endMs: 7 }),
    ]);
    expect(b).toEqual({ startTimeUnixNano: 2_000_000, endTimeUnixNano: 9_000_000 });
    expect(traceBounds([])).toEqual({ startTimeUnixNano: 0, endTimeUnixNano: 0 });
  });
});
