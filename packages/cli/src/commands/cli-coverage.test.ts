import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type RuntimeServer, createRuntimeServer } from '@agentrt/runtime';
import { startIdp } from '@agentrt/runtime/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../main.js';

/** An agent that answers its version (from its env) and a per-session count. */
const AGENT = `
import { createServer } from 'node:http';
let count = 0;
createServer((req, res) => {
  if (req.url === '/ping') return res.end('{"status":"Healthy"}');
  req.resume();
  req.on('end', () => {
    count++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ count, release: process.env.RELEASE ?? null }));
  });
}).listen(Number(process.env.PORT), '0.0.0.0');
`;

async function run(args: string[], env: Record<string, string>) {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    env,
    cwd: process.cwd(),
  });
  return { code, stdout, stderr };
}

/**
 * The runtime API from the CLI (issue #19 findings 3 and 10): a positional artifact URI, JWT
 * authorizer and protocol flags, versions and endpoints, bearer tokens and qualifiers on invoke,
 * the local runtime's live sessions and stopping one. Real runtime, real workers, a real IdP.
 */
describe('agentrt runtime / invoke / sessions: what the API can do', () => {
  let server: RuntimeServer;
  let idp: Awaited<ReturnType<typeof startIdp>>;
  let dir: string;
  let agentDir: string;
  let env: Record<string, string>;
  const session = 'cov-session-00000000000000000000000000001';

  beforeAll(async () => {
    dir = mkdtempSync(join(os.tmpdir(), 'agentrt-cli-coverage-'));
    agentDir = join(dir, 'agent');
    mkdirSync(agentDir);
    writeFileSync(join(agentDir, 'server.mjs'), AGENT);
    writeFileSync(join(agentDir, 'agentrt.json'), JSON.stringify({ command: ['node', 'server.mjs'] }));
    [server, idp] = await Promise.all([
      createRuntimeServer({
        host: '127.0.0.1',
        port: 0,
        dataDir: join(dir, 'data'),
        logSink: () => undefined,
        stopGraceMs: 500,
        lifecycleMinSeconds: 1,
      }),
      startIdp(),
    ]);
    env = { AGENTRT_RUNTIME_URL: server.url };
  });
  afterAll(async () => {
    await Promise.all([server?.close(), idp?.close()]);
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('create takes the artifact as a positional file:// URI or folder; a taken name says what to do', async () => {
    const uri = pathToFileURL(agentDir).href;
    const created = await run(['runtime', 'create', 'pos_agent', uri], env);
    expect(created.stderr).toBe('');
    expect(created).toMatchObject({ code: 0 });
    expect(created.stdout).toContain(`artifact  ${uri}`);
    const byDir = await run(['runtime', 'create', 'dir_agent', agentDir, '--json'], env);
    expect(byDir.code).toBe(0);
    expect(JSON.parse(byDir.stdout).agentRuntimeArtifact.containerConfiguration.containerUri).toBe(uri);
    const both = await run(['runtime', 'create', 'x_agent', uri, '--dir', agentDir], env);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give the artifact once');
    const none = await run(['runtime', 'create', 'x_agent'], env);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('missing the artifact: a <uri>');
    const taken = await run(['runtime', 'create', 'pos_agent', uri], env);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain('An agent runtime named pos_agent already exists');
    expect(taken.stderr).toContain('agentrt runtime update pos_agent <uri>');
    const updated = await run(['runtime', 'update', 'pos_agent', uri, '--env', 'RELEASE=two'], env);
    expect(updated.code).toBe(0);
    expect(updated.stdout).toContain('version 2');
  });

  it('create sets the JWT authorizer, protocol, env and lifecycle; invoke sends --bearer / --bearer-env', async () => {
    const created = await run(
      [
        'runtime',
        'create',
        'jwt_agent',
        '--dir',
        agentDir,
        '--jwt-discovery-url',
        `${idp.base}/.well-known/openid-configuration`,
        '--jwt-audience',
        'agents,tools',
        '--jwt-client',
        'web-app',
        '--protocol',
        'http',
        '--env',
        'RELEASE=one',
        '--idle-timeout',
        '120',
        '--max-lifetime',
        '3600',
        '--json',
      ],
      env,
    );
    expect(created.stderr).toBe('');
    const detail = JSON.parse(created.stdout) as Record<string, unknown>;
    expect(detail).toMatchObject({
      status: 'READY',
      authorizerConfiguration: {
        customJWTAuthorizer: {
          discoveryUrl: `${idp.base}/.well-known/openid-configuration`,
          allowedAudience: ['agents', 'tools'],
          allowedClients: ['web-app'],
        },
      },
      protocolConfiguration: { serverProtocol: 'HTTP' },
      environmentVariables: { RELEASE: 'one' },
      lifecycleConfiguration: { idleRuntimeSessionTimeout: 120, maxLifetime: 3600 },
    });
    const without = await run(['invoke', 'jwt_agent', '{}', '--session', session], env);
    expect(without.code).toBe(1);
    expect(without.stderr).toMatch(/UnauthorizedException \(401\)/);
    const token = await idp.sign({ aud: 'agents', client_id: 'web-app', sub: 'user-1' });
    const withToken = await run(['invoke', 'jwt_agent', '{}', '--session', session, '--bearer', token], env);
    expect(withToken.stderr).toBe(`session ${session}\n`);
    expect(JSON.parse(withToken.stdout)).toEqual({ count: 1, release: 'one' });
    const fromEnv = await run(
      ['invoke', 'jwt_agent', '{}', '--session', session, '--bearer-env', 'MY_TOKEN'],
      {
        ...env,
        MY_TOKEN: token,
      },
    );
    expect(JSON.parse(fromEnv.stdout)).toEqual({ count: 2, release: 'one' });
    const unset = await run(['invoke', 'jwt_agent', '{}', '--bearer-env', 'NO_SUCH_TOKEN'], env);
    expect(unset.code).toBe(2);
    expect(unset.stderr).toContain(
      '--bearer-env NO_SUCH_TOKEN: the environment variable NO_SUCH_TOKEN is not set',
    );
    const both = await run(['invoke', 'jwt_agent', '{}', '--bearer', 'a', '--bearer-env', 'MY_TOKEN'], env);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give --bearer <token> or --bearer-env <var>, not both');
  });

  it('flag mistakes are usage errors that name the flag', async () => {
    const cases: [string[], string][] = [
      [['--protocol', 'FTP'], "--protocol must be HTTP, MCP, A2A or AGUI, got 'FTP'"],
      [['--jwt-audience', 'a'], '--jwt-audience needs --jwt-discovery-url <url>'],
      [['--jwt-client', 'c'], '--jwt-client needs --jwt-discovery-url <url>'],
      [['--jwt-discovery-url', 'http://x/oidc'], '--jwt-discovery-url must be an http(s) URL ending in'],
      [
        ['--jwt-discovery-url', `${idp.base}/.well-known/openid-configuration`],
        '--jwt-discovery-url needs --jwt-audience',
      ],
      [
        ['--jwt-discovery-url', `${idp.base}/.well-known/openid-configuration`, '--jwt-audience', ','],
        '--jwt-audience needs a value',
      ],
      [['--idle-timeout', 'soon'], "--idle-timeout must be a whole number, got 'soon'"],
      [['--env', 'NOEQUALS'], "--env expects KEY=VALUE, got 'NOEQUALS'"],
    ];
    for (const [flags, message] of cases) {
      const r = await run(['runtime', 'create', 'bad_agent', '--dir', agentDir, ...flags], env);
      expect({ flags, code: r.code, has: r.stderr.includes(message) }).toEqual({ flags, code: 2, has: true });
    }
    const endpoints = await run(['runtime', 'endpoints', 'pos_agent', '--pin', 'stable'], env);
    expect(endpoints.code).toBe(2);
    expect(endpoints.stderr).toContain('--pin needs --version <n>');
    const version = await run(['runtime', 'endpoints', 'pos_agent', '--version', '1'], env);
    expect(version.stderr).toContain('--version needs --pin <endpoint name>');
  });

  it('versions and endpoints list; --pin holds a named endpoint on a version; invoke --qualifier uses it', async () => {
    const versions = await run(['runtime', 'versions', 'pos_agent'], env);
    expect(versions.code).toBe(0);
    expect(versions.stdout).toMatch(/^version\s+status/);
    expect(versions.stdout).toMatch(/\n2\s+READY[^\n]*\n1\s+READY/);
    const versionsJson = JSON.parse((await run(['runtime', 'versions', 'pos_agent', '--json'], env)).stdout);
    expect(versionsJson.agentRuntimes).toHaveLength(2);
    const pinned = await run(['runtime', 'endpoints', 'pos_agent', '--pin', 'stable', '--version', '1'], env);
    expect(pinned.stdout).toBe('pos_agent endpoint stable → version 1\n');
    const list = await run(['runtime', 'endpoints', 'pos_agent'], env);
    expect(list.stdout).toMatch(/DEFAULT\s+2\s+2\s+READY/);
    expect(list.stdout).toMatch(/stable\s+1\s+1\s+READY/);
    const onStable = await run(['invoke', 'pos_agent', '{}', '--qualifier', 'stable'], env);
    expect(JSON.parse(onStable.stdout)).toEqual({ count: 1, release: null });
    const onDefault = await run(['invoke', 'pos_agent', '{}'], env);
    expect(JSON.parse(onDefault.stdout)).toEqual({ count: 1, release: 'two' });
    const moved = await run(
      ['runtime', 'endpoints', 'pos_agent', '--pin', 'stable', '--version', '2', '--json'],
      env,
    );
    expect(JSON.parse(moved.stdout)).toMatchObject({ name: 'stable', liveVersion: '2' });
    const deleted = await run(['runtime', 'endpoints', 'pos_agent', '--delete', 'stable'], env);
    expect(deleted.stdout).toBe('pos_agent endpoint stable DELETING\n');
  });

  it('sessions --active lists the live sessions with state, runtime, times, CPU and memory; stop ends one', async () => {
    const active = await run(['sessions', '--active'], env);
    expect(active.code).toBe(0);
    expect(active.stdout).toMatch(
      /^session\s+runtime\s+state\s+started\s+last activity\s+cpu\s+memory\s+pid/,
    );
    const row = active.stdout.split('\n').find((l) => l.startsWith(session));
    expect(row).toMatch(
      /jwt_agent v1\s+ready\s+\d{4}-\d\d-\d\d [\d:.]+\s+\d+s ago\s+[\d.]+s\s+[\d.]+ MiB\s+\d+/,
    );
    const json = JSON.parse(
      (await run(['sessions', '--active', '--runtime', 'jwt_agent', '--json'], env)).stdout,
    );
    expect(json.sessions).toHaveLength(1);
    expect(json.sessions[0]).toMatchObject({
      sessionId: session,
      runtimeName: 'jwt_agent',
      state: 'ready',
      version: 1,
    });
    expect(json.sessions[0].rssBytes).toBeGreaterThan(1_000_000);
    expect(json.sessions[0].cpuSeconds).toBeGreaterThanOrEqual(0);
    const token = await idp.sign({ aud: 'agents', client_id: 'web-app', sub: 'user-1' });
    const unauthorized = await run(['sessions', 'stop', session], env);
    expect(unauthorized.code).toBe(1);
    expect(unauthorized.stderr).toMatch(/UnauthorizedException \(401\)/);
    const stopped = await run(['sessions', 'stop', session, '--bearer', token], env);
    expect(stopped.stdout).toBe(`stopped session ${session} of jwt_agent\n`);
    await expect
      .poll(async () => (await run(['sessions', '--active', '--json'], env)).stdout)
      .not.toContain(session);
    const again = await run(['sessions', 'stop', session, '--bearer', token], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`no active session ${session} in the runtime`);
    const misuse = await run(['sessions', '--runtime', 'jwt_agent'], env);
    expect(misuse.code).toBe(2);
    expect(misuse.stderr).toContain('--runtime goes with --active or stop');
  });

  it('--help of each command names its new flags', async () => {
    const help = async (command: string) => (await run([command, '--help'], {})).stdout;
    const runtime = await help('runtime');
    for (const flag of [
      '--jwt-discovery-url',
      '--jwt-audience',
      '--jwt-client',
      '--protocol',
      '--env',
      '--idle-timeout',
      '--max-lifetime',
      'versions',
      'endpoints',
      '--pin',
    ])
      expect(runtime).toContain(flag);
    const invoke = await help('invoke');
    for (const flag of ['--bearer <token>', '--bearer-env <var>', '--qualifier'])
      expect(invoke).toContain(flag);
    const sessions = await help('sessions');
    for (const flag of ['--active', 'stop <sessionId>', '--runtime-url']) expect(sessions).toContain(flag);
  });
});
