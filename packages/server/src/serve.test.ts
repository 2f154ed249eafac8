import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { type TimedFrame, dataOf, readFrames, until } from './testing.test.util.js';

const here = dirname(fileURLToPath(import.meta.url));
const fixture = join(here, '..', 'test-fixtures', 'stream-agent.mjs');
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

interface Agent {
  child: ChildProcess;
  port: number;
  lines: Array<Record<string, unknown>>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

async function startAgent(env: Record<string, string>): Promise<Agent> {
  if (!existsSync(join(here, '..', 'dist', 'index.js'))) {
    throw new Error('packages/server/dist is missing: run `npx tsc -b packages/server` first');
  }
  const child = spawn(process.execPath, [fixture], {
    env: { ...process.env, PORT: '0', AGENTRT_HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const lines: Array<Record<string, unknown>> = [];
  let buffered = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buffered.slice(0, nl)) as Record<string, unknown>);
      buffered = buffered.slice(nl + 1);
    }
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  void exited.then(() => clearTimeout(timer));
  await until(() => {
    if (child.exitCode !== null) throw new Error(`agent exited early: ${stderr}`);
    return lines.some((l) => l.msg === 'listening');
  }, 15_000);
  const port = lines.find((l) => l.msg === 'listening')!.port as number;
  return { child, port, lines, exited };
}

const refusesConnections = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });

describe('serve() as a real process (dist/)', () => {
  it('on SIGTERM stops accepting, finishes the open stream, then exits 0', async () => {
    const agent = await startAgent({ FRAMES: '6', GAP_MS: '150' });
    expect(agent.lines[0]).toMatchObject({ level: 'info', msg: 'listening', host: '127.0.0.1' });
    const url = `http://127.0.0.1:${agent.port}`;
    expect(await (await fetch(`${url}/ping`)).json()).toMatchObject({ status: 'Healthy' });

    const res = await fetch(`${url}/invocations`, { method: 'POST', body: '{}' });
    const reading = readFrames(res);
    await until(
      async () =>
        ((await (await fetch(`${url}/ping`)).json()) as { status: string }).status === 'HealthyBusy',
    );
    agent.child.kill('SIGTERM');
    await until(() => agent.lines.some((l) => l.msg === 'draining'));
    await until(() => refusesConnections(agent.port));
    const frames = await reading;
    expect(frames.map(dataOf)).toEqual([0, 1, 2, 3, 4, 5].map((i) => ({ i })));
    expect(await agent.exited).toEqual({ code: 0, signal: null });
    expect(agent.lines.map((l) => l.msg)).toEqual(['listening', 'draining', 'onShutdown ran', 'stopped']);
  });

  it('aborts streams still open at the drain deadline and exits', async () => {
    const agent = await startAgent({ FRAMES: '-1', GAP_MS: '50', AGENTRT_DRAIN_TIMEOUT_MS: '400' });
    const res = await fetch(`http://127.0.0.1:${agent.port}/invocations`, { method: 'POST', body: '{}' });
    const frames: TimedFrame[] = [];
    const reading = readFrames(res, Infinity, frames);
    await until(() => frames.length >= 1);
    const signalledAt = performance.now();
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toEqual({ code: 0, signal: null });
    expect(performance.now() - signalledAt).toBeGreaterThanOrEqual(350);
    await reading;
    expect(dataOf(frames[0]!)).toEqual({ i: 0 });
    const last = frames.at(-1)!;
    expect(last.text.split('\n')[0]).toBe('event: error');
    expect(dataOf(last)).toMatchObject({ error: 'server shutting down: drain timeout of 400 ms reached' });
    expect(
      agent.lines.find((l) => l.msg === 'drain timeout reached; aborting in-flight invocations'),
    ).toMatchObject({
      level: 'warn',
      inFlight: 1,
      drainTimeoutMs: 400,
    });
  });

  it('warns about a bad environment value and uses the default', async () => {
    const agent = await startAgent({ AGENTRT_DRAIN_TIMEOUT_MS: 'soon' });
    expect(agent.lines[0]).toMatchObject({
      level: 'warn',
      msg: expect.stringContaining('AGENTRT_DRAIN_TIMEOUT_MS'),
    });
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toEqual({ code: 0, signal: null });
  });
});
