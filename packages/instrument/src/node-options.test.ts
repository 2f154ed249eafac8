import { describe, expect, it } from 'vitest';
import { buildNodeOptions } from './node-options.js';

describe('buildNodeOptions', () => {
  it('appends --import to existing options', () => {
    expect(buildNodeOptions(undefined, '/p/register.js')).toBe('--import /p/register.js');
    expect(buildNodeOptions('--max-old-space-size=512', '/p/register.js')).toBe(
      '--max-old-space-size=512 --import /p/register.js',
    );
  });
  it('quotes paths with spaces and does not add the preload twice', () => {
    const withSpace = buildNodeOptions('', '/my apps/register.js');
    expect(withSpace).toBe('--import "/my apps/register.js"');
    expect(buildNodeOptions(withSpace, '/my apps/register.js')).toBe(withSpace);
  });
});
