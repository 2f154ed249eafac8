import { describe, expect, it } from 'vitest';
import { main } from './main.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: {
      stdout: (t: string) => out.push(t),
      stderr: (t: string) => err.push(t),
      env: {},
      cwd: process.cwd(),
    },
    out: () => out.join(''),
    err: () => err.join(''),
  };
}

describe('agentrt', () => {
  it('prints usage and exits 2 without a command', async () => {
    const c = capture();
    expect(await main([], c.io)).toBe(2);
    expect(c.out()).toContain('Usage: agentrt <command>');
  });

  it('names an unknown command and exits 2', async () => {
    const c = capture();
    expect(await main(['nope'], c.io)).toBe(2);
    expect(c.err()).toContain("unknown command 'nope'");
  });
});
