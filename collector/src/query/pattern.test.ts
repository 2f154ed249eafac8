import { describe, expect, it } from 'vitest';
import { MAX_REGEX_INPUT_CHARS, regexPattern, substringPattern } from './pattern.js';
import { QueryError } from './query-error.js';

describe('like patterns', () => {
  it('matches catastrophic-backtracking patterns in linear time (RE2)', () => {
    // /^(a+)+$/ on 34 a's and a b: exponential for a backtracking engine (the issue's 150 s stall).
    const bomb = regexPattern('^(a+)+$', '', 0);
    const started = performance.now();
    expect(bomb.test(`${'a'.repeat(34)}b`)).toBe(false);
    expect(bomb.test('a'.repeat(100_000))).toBe(true);
    expect(regexPattern('^(\\w+\\s?)*$', '', 0).test(`${'word '.repeat(10_000)}!`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('keeps the flags a filter can use, and JS regex syntax', () => {
    expect(regexPattern('^chat', 'i', 0).test('CHAT claude')).toBe(true);
    expect(regexPattern('^b', 'm', 0).test('a\nb')).toBe(true);
    expect(regexPattern('a.b', 's', 0).test('a\nb')).toBe(true);
    expect(regexPattern('\\d{3}-\\d+', '', 0).test('id 123-4')).toBe(true);
    expect(regexPattern('(?<year>\\d{4})', '', 0).test('2026')).toBe(true);
    expect(substringPattern('a.b').test('xa.by')).toBe(true);
    expect(substringPattern('a.b').test('axb')).toBe(false);
  });

  it('refuses what has no linear-time match, odd flags and over-long values with a QueryError', () => {
    for (const [source, flags] of [
      ['(a)\\1', ''],
      ['a(?=b)', ''],
      ['(?<!a)b', ''],
      ['x', 'g'],
      ['x', 'ii'],
    ] as const) {
      const error = (() => {
        try {
          regexPattern(source, flags, 7);
        } catch (e) {
          return e;
        }
      })();
      expect(error, `/${source}/${flags}`).toBeInstanceOf(QueryError);
      expect((error as QueryError).position).toBe(7);
    }
    expect(() => regexPattern('(a)\\1', '', 0)).toThrow(/no backreferences or lookaround/);
    expect(() => regexPattern('a', '', 3).test('a'.repeat(MAX_REGEX_INPUT_CHARS + 1))).toThrow(
      /too long for a regular expression/,
    );
  });

  it('does not grow without bound over many distinct patterns (compiled patterns are freed)', () => {
    for (let i = 0; i < 6000; i++)
      expect(regexPattern(`(a|b|c)+x[0-9]*y${i}`, 'i', 0).test('abcx1y')).toBe(false);
  });
});
