import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { type RuntimeServer, createRuntimeServer } from '@agentrt/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../main.js';

const fixtures = resolve(fileURLToPath(import.meta.url), '../../../../runtime/test-fixtures');

function capture(env: Record<string, string>, stdin?: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: {
      stdout: (t: string) => void out.push(t),
      stderr: (t: string) => void err.push(t),
      env,
      cwd: process.cwd(),
      ...(stdin ? { stdin: Readable.from(stdin) } : {}),
    },
    out: () => out.join(''),
    err: () => err.join(''),
  };
}

describe('agentrt invoke --mcp / --exec / --ws', () => {
  let server: RuntimeServer;
  let dir: string;
  let env: Record<string, string>;
  const session = 'cli-protocols-session-000000000000000000001';
  beforeAll(async () => {
    dir = mkdtempSync(join(os.tmpdir(), 'agentrt-cli-protocols-'));
    server = await createRuntimeServer({
      port: 0,
      dataDir: join(dir, 'data'),
      logSink: () => undefined,
      stopGraceMs: 500,
    });
    env = { AGENTRT_RUNTIME_URL: server.url };
    for (const [name, fixture, protocol] of [
      ['cli_mcp', 'mcp', 'MCP'],
      ['cli_ws', 'ws-echo', 'HTTP'],
    ] as const) {
      const c = capture(env);
      const code = await main(
        ['runtime', 'create', name, '--dir', join(fixtures, fixture), '--protocol', protocol],
        c.io,
      );
      expect(c.out() + c.err()).toContain('READY');
      expect(code).toBe(0);
    }
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('lists and calls MCP tools through the runtime', async () => {
    let c = capture(env);
    expect(await main(['invoke', 'cli_mcp', '--mcp', 'list-tools'], c.io)).toBe(0);
    expect(c.out()).toMatch(/^add\tAdds two numbers$/m);
    expect(c.err()).toMatch(/mcp session [0-9a-f-]{36}/);
    c = capture(env);
    expect(await main(['invoke', 'cli_mcp', '--mcp', 'call-tool', 'add', '{"a":20,"b":22}'], c.io)).toBe(0);
    expect(c.out()).toBe('42\n');
    c = capture(env);
    expect(await main(['invoke', 'cli_mcp', '--mcp', 'call-tool', 'add', '{bad'], c.io)).toBe(2);
    expect(c.err()).toContain('not valid JSON');
  });

  it('runs a command in a live session and exits with its code', async () => {
    let c = capture(env);
    expect(await main(['invoke', 'cli_ws', '{}', '--session', session], c.io)).toBe(0);
    c = capture(env);
    expect(
      await main(
        ['invoke', 'cli_ws', '--exec', 'echo out; echo err >&2; exit 4', '--session', session],
        c.io,
      ),
    ).toBe(4);
    expect(c.out()).toBe('out\n');
    expect(c.err()).toBe('err\n');
    c = capture(env);
    expect(
      await main(['invoke', 'cli_ws', '--exec', 'sleep 30', '--session', session, '--timeout', '1'], c.io),
    ).toBe(137);
    expect(c.err()).toContain('timed out');
    c = capture(env);
    expect(await main(['invoke', 'cli_ws', '--exec', 'true'], c.io)).toBe(2);
    expect(c.err()).toContain('--session');
  });

  it('bridges typed lines to a WebSocket and prints the frames', async () => {
    const c = capture(env, ['hello\n', 'world\n']);
    expect(await main(['invoke', 'cli_ws', '--ws', '--session', session], c.io)).toBe(0);
    const lines = c.out().trim().split('\n');
    expect(JSON.parse(lines[0]!)).toMatchObject({ hello: true });
    expect(lines.slice(1)).toEqual(['hello', 'world']);
    expect(c.err()).toContain('closed 1000');
  });
});
