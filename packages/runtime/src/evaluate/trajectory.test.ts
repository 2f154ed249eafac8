import { describe, expect, it } from 'vitest';
import { matchTrajectory } from './trajectory.js';

const called = ['search', 'fetch', 'fetch', 'summarize'];

describe('matchTrajectory', () => {
  it('exact order: the same names in the same order and nothing else', () => {
    expect(matchTrajectory('exact', called, called).value).toBe(1);
    expect(matchTrajectory('exact', called, ['search', 'fetch', 'summarize']).value).toBe(0);
    expect(matchTrajectory('exact', [], []).value).toBe(1);
  });

  it('in order: a subsequence, extras allowed, repeats counted', () => {
    expect(matchTrajectory('in-order', called, ['search', 'summarize']).value).toBe(1);
    expect(matchTrajectory('in-order', called, ['fetch', 'fetch', 'fetch']).value).toBe(0);
    expect(matchTrajectory('in-order', called, ['summarize', 'search']).value).toBe(0);
  });

  it('any order: every expected name as often as expected', () => {
    expect(matchTrajectory('any-order', called, ['summarize', 'fetch', 'search', 'fetch']).value).toBe(1);
    expect(matchTrajectory('any-order', called, ['search', 'search']).value).toBe(0);
  });

  it('explains the verdict with both lists, the same bytes every time', () => {
    const a = matchTrajectory('exact', called, ['search']);
    expect(a).toEqual({
      value: 0,
      label: 'No',
      explanation:
        'No match (the same tools in the same order, nothing else): called [search, fetch, fetch, summarize], expected [search].',
    });
    expect(JSON.stringify(matchTrajectory('exact', called, ['search']))).toBe(JSON.stringify(a));
  });
});
