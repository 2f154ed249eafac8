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

describe('agentrt dev --help', () => {
  it('names every reference agent it registers and the calls --demo sends', async () => {
    const c = capture();
    expect(await main(['dev', '--help'], c.io)).toBe(0);
    expect(c.out()).toContain(
      'registers 4 reference agents in the runtime: sdk_agent, custom_agent, weather_mcp, weather_a2a',
    );
    expect(c.out()).toContain(
      '--demo                   send 8 sample invocations: single, streaming, multi-turn, weather question, failing tool, A2A message, MCP tool call',
    );
  });
});
