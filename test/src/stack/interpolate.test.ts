import { describe, expect, it } from 'vitest';
import { expandOtelValue, interpolateCompose } from './interpolate.js';

describe('interpolateCompose', () => {
  const env = { SET: 'v', EMPTY: '' };

  it.each([
    ['${SET}', 'v'],
    ['$SET/x', 'v/x'],
    ['${MISSING}', ''],
    ['${MISSING:-d}', 'd'],
    ['${EMPTY:-d}', 'd'],
    ['${EMPTY-d}', ''],
    ['${SET:+r}', 'r'],
    ['${EMPTY:+r}', ''],
    ['${EMPTY+r}', 'r'],
    ['[a${SET:+, b}]', '[a, b]'],
    ['[a${MISSING:+, b}]', '[a]'],
    ['${MISSING:-${SET}}', 'v'],
    ['$$SET', '$SET'],
  ])('%s → %s', (text, expected) => {
    expect(interpolateCompose(text, env)).toBe(expected);
  });

  it('fails on a required variable that is missing, with its message', () => {
    expect(() => interpolateCompose('${MISSING:?set MISSING}', env)).toThrow(/MISSING.*set MISSING/);
  });

  it('fails on an unterminated reference', () => {
    expect(() => interpolateCompose('${SET', env)).toThrow(/unterminated/);
  });
});

describe('expandOtelValue', () => {
  it('gives a whole-value reference the YAML type of its expansion', () => {
    expect(expandOtelValue('${env:L:-[a]}', { L: '[a, b]' })).toEqual(['a', 'b']);
    expect(expandOtelValue('${env:L:-[a]}', {})).toEqual(['a']);
  });

  it('substitutes references inside text', () => {
    expect(expandOtelValue('https://x.${env:R:-us-east-1}.y', { R: 'eu-west-1' })).toBe(
      'https://x.eu-west-1.y',
    );
    expect(expandOtelValue('https://x.${env:R:-us-east-1}.y', {})).toBe('https://x.us-east-1.y');
  });
});
