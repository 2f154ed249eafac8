import { describe, expect, it } from 'vitest';
import { criticalPath, traceCriticalPath } from './critical-path.js';
import { buildSpanTree } from './span-tree.js';
import { testSpan } from './test-spans.test-util.js';

const MS = 1_000_000;
const seg = (spanId: string, startMs: number, endMs: number) => ({
  spanId,
  startTimeUnixNano: startMs * MS,
  endTimeUnixNano: endMs * MS,
});

describe('criticalPath', () => {
  it('follows sequential children and gives the gaps to the parent', () => {
    const [root] = buildSpanTree([
      testSpan({ id: 'agent', startMs: 0, endMs: 100 }),
      testSpan({ id: 'chat1', parent: 'agent', startMs: 10, endMs: 40 }),
      testSpan({ id: 'tool', parent: 'agent', startMs: 45, endMs: 60 }),
      testSpan({ id: 'chat2', parent: 'agent', startMs: 60, endMs: 95 }),
    ]);
    const path = criticalPath(root!);
    expect(path.segments).toEqual([
      seg('agent', 0, 10),
      seg('chat1', 10, 40),
      seg('agent', 40, 45),
      seg('tool', 45, 60),
      seg('chat2', 60, 95),
      seg('agent', 95, 100),
    ]);
    expect(path.durationBySpanNano.get('agent')).toBe(20 * MS);
    const covered = path.segments.reduce((s, x) => s + x.endTimeUnixNano - x.startTimeUnixNano, 0);
    expect(covered).toBe(100 * MS);
  });

  it('takes only the longest of parallel children and descends into it', () => {
    const [root] = buildSpanTree([
      testSpan({ id: 'root', startMs: 0, endMs: 50 }),
      testSpan({ id: 'fast', parent: 'root', startMs: 0, endMs: 20 }),
      testSpan({ id: 'slow', parent: 'root', startMs: 0, endMs: 50 }),
      testSpan({ id: 'slow-db', parent: 'slow', startMs: 10, endMs: 45 }),
    ]);
    const path = criticalPath(root!);
    expect([...path.spanIds].sort()).toEqual(['slow', 'slow-db']);
    expect(path.segments).toEqual([seg('slow', 0, 10), seg('slow-db', 10, 45), seg('slow', 45, 50)]);
  });

  it('clips a child that outlives its parent', () => {
    const [root] = buildSpanTree([
      testSpan({ id: 'root', startMs: 0, endMs: 30 }),
      testSpan({ id: 'async', parent: 'root', startMs: 20, endMs: 80 }),
    ]);
    expect(criticalPath(root!).segments).toEqual([seg('root', 0, 20), seg('async', 20, 30)]);
  });

  it('picks the main root of a partial trace and returns nothing for an empty one', () => {
    const roots = buildSpanTree([
      testSpan({ id: 'orphan', parent: 'gone', startMs: 0, endMs: 500 }),
      testSpan({ id: 'root', startMs: 0, endMs: 10 }),
    ]);
    expect([...traceCriticalPath(roots).spanIds]).toEqual(['root']);
    expect(traceCriticalPath([]).segments).toEqual([]);
  });
});
