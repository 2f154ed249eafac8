import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { type RuntimeServer, createRuntimeServer } from '@agentrt/runtime';
import { startIdp } from '@agentrt/runtime/test-support';
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
  let idp: Awaited<ReturnType<typeof startIdp>>;
  const session = 'cli-protocols-session-000000000000000000001';
  beforeAll(async () => {
    dir = mkdtempSync(join(os.tmpdir(), 'agentrt-cli-protocols-'));
    [server, idp] = await Promise.all([
      createRuntimeServer({
        port: 0,
        dataDir: join(dir, 'data'),
        logSink: () => undefined,
        stopGraceMs: 500,
      }),
      startIdp(),
    ]);
    env = { AGENTRT_RUNTIME_URL: server.url };
    const jwt = [
      '--jwt-discovery-url',
      `${idp.base}/.well-known/openid-configuration`,
      '--jwt-client',
      'cli',
    ];
    for (const [name, fixture, protocol, auth] of [
      ['cli_mcp', 'mcp', 'MCP', []],
      ['cli_ws', 'ws-echo', 'HTTP', []],
      ['cli_jwt_mcp', 'mcp', 'MCP', jwt],
      ['cli_jwt_ws', 'ws-echo', 'HTTP', jwt],
    ] as const) {
      const c = capture(env);
      const code = await main(
        ['runtime', 'create', name, '--dir', join(fixtures, fixture), '--protocol', protocol, ...auth],
        c.io,
      );
      expect(c.out() + c.err(), c.err()).toContain('READY');
      expect(c.err()).toBe('');
      expect(code).toBe(0);
    }
  }, 60_000);
  afterAll(async () => {
    await Promise.all([server?.close(), idp?.close()]);
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

  it('sends --bearer / --bearer-env with --mcp, --exec and --ws to a JWT runtime', async () => {
    const token = await idp.sign({ sub: 'cli-user', client_id: 'cli' });
    const jwtSession = 'cli-protocols-jwt-session-000000000000000001';
    // Without the token every mode is refused with the runtime's 401.
    for (const args of [
      ['cli_jwt_mcp', '--mcp', 'list-tools'],
      ['cli_jwt_ws', '--exec', 'true', '--session', jwtSession],
      ['cli_jwt_ws', '--ws', '--session', jwtSession],
    ]) {
      const c = capture(env, []);
      expect(await main(['invoke', ...args], c.io)).toBe(1);
      expect(c.err()).toMatch(/401|Unauthorized|Missing bearer token/);
    }
    let c = capture(env);
    expect(
      await main(
        ['invoke', 'cli_jwt_mcp', '--mcp', 'call-tool', 'add', '{"a":1,"b":2}', '--bearer', token],
        c.io,
      ),
    ).toBe(0);
    expect(c.out()).toBe('3\n');
    const withEnv = { ...env, CLI_TOKEN: token };
    c = capture(withEnv);
    expect(
      await main(['invoke', 'cli_jwt_mcp', '--mcp', 'list-tools', '--bearer-env', 'CLI_TOKEN'], c.io),
    ).toBe(0);
    expect(c.out()).toMatch(/^add\t/m);
    c = capture(withEnv);
    expect(
      await main(['invoke', 'cli_jwt_ws', '{}', '--session', jwtSession, '--bearer-env', 'CLI_TOKEN'], c.io),
    ).toBe(0);
    c = capture(withEnv);
    expect(
      await main(
        ['invoke', 'cli_jwt_ws', '--exec', 'echo in-jwt; exit 5', '--session', jwtSession, '--bearer', token],
        c.io,
      ),
    ).toBe(5);
    expect(c.out()).toBe('in-jwt\n');
    c = capture(withEnv, ['over jwt\n']);
    expect(
      await main(
        ['invoke', 'cli_jwt_ws', '--ws', '--session', jwtSession, '--bearer-env', 'CLI_TOKEN'],
        c.io,
      ),
    ).toBe(0);
    expect(c.out().trim().split('\n').slice(1)).toEqual(['over jwt']);
    c = capture(env);
    expect(
      await main(['invoke', 'cli_jwt_mcp', '--mcp', 'list-tools', '--bearer-env', 'UNSET_TOKEN'], c.io),
    ).toBe(2);
  });
});
