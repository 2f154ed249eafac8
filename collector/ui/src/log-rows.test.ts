import { describe, expect, it } from 'vitest';
import type { LogRowView } from './api.js';
import { mergeNewestFirst } from './log-rows.js';

const row = (cursor: number, timeMs: number): LogRowView => ({
  cursor,
  timeMs,
  severityNumber: 9,
  severityText: 'INFO',
  body: `record ${cursor}`,
  service: 'svc',
});

describe('the Logs view rows', () => {
  it('are newest first by their own time, however they arrived, and keep the newest when full', () => {
    // Arrival (cursor) order differs from time order: two services export a second apart.
    const first = mergeNewestFirst([], [row(3, 3000), row(2, 1000), row(1, 2000)], 4);
    expect(first.map((r) => r.cursor)).toEqual([3, 1, 2]);
    const tail = mergeNewestFirst(first, [row(4, 1500), row(5, 4000)], 4);
    expect(tail.map((r) => r.timeMs)).toEqual([4000, 3000, 2000, 1500]);
    // Same time: the later arrival first.
    expect(mergeNewestFirst([], [row(1, 5), row(2, 5)], 9).map((r) => r.cursor)).toEqual([2, 1]);
  });
});
