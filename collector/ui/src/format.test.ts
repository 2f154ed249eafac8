import { describe, expect, it } from 'vitest';
import { formatAgo, formatCount, formatDuration, formatTimestamp } from './format.js';

describe('format', () => {
  it('formats durations with a unit that fits', () => {
    expect(formatDuration(0.42)).toBe('420 µs');
    expect(formatDuration(5)).toBe('5 ms');
    expect(formatDuration(12.34)).toBe('12.3 ms');
    expect(formatDuration(1534)).toBe('1.53 s');
    expect(formatDuration(125_000)).toBe('2m 5s');
    expect(formatDuration(-1)).toBe('–');
  });
  it('formats counts and ages', () => {
    expect(formatCount(950)).toBe('950');
    expect(formatCount(12_345)).toBe('12.3k');
    expect(formatCount(4_200_000)).toBe('4.2M');
    expect(formatAgo(1000, 1500)).toBe('just now');
    expect(formatAgo(0, 180_000)).toBe('3 min ago');
    expect(formatTimestamp(new Date(2026, 0, 2, 3, 4, 5, 67).getTime())).toBe('2026-01-02 03:04:05.067');
  });
});
