import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type RuntimeServer, createRuntimeServer } from '@agentrt/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../main.js';

/** A tiny agent: JSON answers with a per-session counter, SSE frames 100 ms apart when asked. */
const AGENT = `
import { createServer } from 'node:http';
let count = 0;
createServer((req, res) => {
  if (req.url === '/ping') return res.end('{"status":"Healthy"}');
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    count++;
    if ((req.headers.accept ?? '').startsWith('text/event-stream')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let i = 0;
      const t = setInterval(() => {
        res.write('data: ' + JSON.stringify({ delta: 'part' + i }) + '\\n\\n');
        if (++i === 3) { clearInterval(t); res.end(); }
      }, 100);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ count, got: JSON.parse(body) }));
  });
}).listen(Number(process.env.PORT), '0.0.0.0');
`;

function capture() {
  const out: { at: number; text: string }[] = [];
  const err: string[] = [];
  return {
    io: (env: Record<string, string>) => ({
      stdout: (t: string) => void out.push({ at: Date.now(), text: t }),
      stderr: (t: string) => void err.push(t),
      env,
      cwd: process.cwd(),
    }),
    out: () => out.map((o) => o.text).join(''),
    chunks: out,
    err: () => err.join(''),
  };
}

describe('agentrt runtime / invoke', () => {
  let server: RuntimeServer;
  let dir: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    dir = mkdtempSync(join(os.tmpdir(), 'agentrt-cli-runtime-'));
    const agent = join(dir, 'agent');
    rmSync(agent, { recursive: true, force: true });
    await import('node:fs/promises').then((fs) => fs.mkdir(agent));
    writeFileSync(join(agent, 'server.mjs'), AGENT);
    writeFileSync(join(agent, 'agentrt.json'), JSON.stringify({ command: ['node', 'server.mjs'] }));
    server = await createRuntimeServer({
      port: 0,
      dataDir: join(dir, 'data'),
      logSink: () => undefined,
      stopGraceMs: 500,
    });
    env = { AGENTRT_RUNTIME_URL: server.url };
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('creates, lists, gets, updates and deletes a runtime with readable output', async () => {
    let c = capture();
    expect(
      await main(['runtime', 'create', 'cli_agent', '--dir', join(dir, 'agent'), '--env', 'A=1'], c.io(env)),
    ).toBe(0);
    expect(c.out()).toMatch(/^cli_agent {2}READY {2}version 1\n {2}id {8}cli_agent-\w{10}\n/);
    c = capture();
    expect(await main(['runtime', 'list'], c.io(env))).toBe(0);
    expect(c.out()).toMatch(/cli_agent\s+READY\s+v1/);
    c = capture();
    expect(await main(['runtime', 'update', 'cli_agent', '--dir', join(dir, 'agent')], c.io(env))).toBe(0);
    expect(c.out()).toContain('version 2');
    c = capture();
    expect(await main(['runtime', 'get', 'cli_agent', '--json'], c.io(env))).toBe(0);
    expect((JSON.parse(c.out()) as { agentRuntimeVersion: string }).agentRuntimeVersion).toBe('2');
    c = capture();
    expect(
      await main(['runtime', 'create', 'broken_agent', '--uri', 'public.ecr.aws/x/agent:1'], c.io(env)),
    ).toBe(1);
    expect(c.out()).toContain('CREATE_FAILED');
    expect(c.out()).toMatch(/needs a container engine|pull: /);
    c = capture();
    expect(await main(['runtime', 'delete', 'broken_agent'], c.io(env))).toBe(0);
    expect(c.out()).toBe('broken_agent DELETING\n');
  });

  it('invokes with a session, keeps state and streams SSE frames as they arrive', async () => {
    let c = capture();
    expect(await main(['runtime', 'create', 'cli_invoke', '--dir', join(dir, 'agent')], c.io(env))).toBe(0);
    const session = 'cli-session-0000000000000000000000000001';
    c = capture();
    const code = await main(['invoke', 'cli_invoke', '{"prompt":"hi"}', '--session', session], c.io(env));
    expect(code).toBe(0);
    expect(JSON.parse(c.out())).toEqual({ count: 1, got: { prompt: 'hi' } });
    expect(c.err()).toBe(`session ${session}\n`);
    c = capture();
    await main(['invoke', 'cli_invoke', '{}', '--session', session, '--json'], c.io(env));
    expect(c.out()).toBe('{"count":2,"got":{}}');
    c = capture();
    expect(await main(['invoke', 'cli_invoke', '{}', '--stream'], c.io(env))).toBe(0);
    expect(c.out()).toBe('{"delta":"part0"}\n{"delta":"part1"}\n{"delta":"part2"}\n');
    expect(c.chunks.at(-1)!.at - c.chunks[0]!.at).toBeGreaterThanOrEqual(150);
  });

  it('explains usage mistakes and server errors', async () => {
    let c = capture();
    expect(await main(['invoke', 'cli_invoke', '{not json'], c.io(env))).toBe(2);
    expect(c.err()).toContain('payload is not valid JSON');
    c = capture();
    expect(await main(['runtime', 'create', 'x'], c.io(env))).toBe(2);
    expect(c.err()).toContain('--dir');
    c = capture();
    expect(await main(['invoke', 'nope', '{}'], c.io(env))).toBe(1);
    expect(c.err()).toContain('No agent runtime named nope');
    c = capture();
    expect(await main(['invoke', 'cli_invoke', '{}', '--session', 'short'], c.io(env))).toBe(1);
    expect(c.err()).toContain('ValidationException (400): runtimeSessionId');
  });
});

describe('agentrt runtime start (dist/bin.js)', () => {
  it('serves until SIGTERM, then stops cleanly', async () => {
    const bin = resolve(fileURLToPath(import.meta.url), '..', '..', '..', 'dist', 'bin.js');
    const dataDir = mkdtempSync(join(os.tmpdir(), 'agentrt-cli-start-'));
    const child = spawn(process.execPath, [bin, 'runtime', 'start', '--port', '0', '--data-dir', dataDir], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    try {
      let err = '';
      child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
      const deadline = Date.now() + 20_000;
      while (!/listening on (http:\S+)/.test(err) && Date.now() < deadline && child.exitCode === null)
        await new Promise((r) => setTimeout(r, 50));
      const url = /listening on (http:\S+)/.exec(err)?.[1];
      expect(url, err).toBeDefined();
      expect(err).toMatch(/isolation: (bwrap|process-group)/);
      const c = capture();
      expect(await main(['runtime', 'list', '--url', url!], c.io({}))).toBe(0);
      expect(c.out()).toBe('no runtimes\n');
      const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
