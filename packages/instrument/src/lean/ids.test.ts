import { describe, expect, it } from 'vitest';
import { newSpanId, newTraceId } from './ids.js';

describe('lean ids', () => {
  it('are random lowercase hex of the W3C lengths, across several refills of the pool', () => {
    // 2,000 trace ids and span ids draw 48 kB: the 8 kB pool is refilled several times
    const traces = Array.from({ length: 2000 }, newTraceId);
    const spans = Array.from({ length: 2000 }, newSpanId);
    expect(traces.every((id) => /^[0-9a-f]{32}$/.test(id) && !/^0+$/.test(id))).toBe(true);
    expect(spans.every((id) => /^[0-9a-f]{16}$/.test(id) && !/^0+$/.test(id))).toBe(true);
    expect(new Set(traces).size).toBe(traces.length);
    expect(new Set(spans).size).toBe(spans.length);
  });
});
