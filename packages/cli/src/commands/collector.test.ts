// `agentrt collector` as users run it: the built bin in a child process.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../main.js';

const BIN = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('agentrt collector', () => {
  it('starts on the given port and data dir, takes OTLP, and stops cleanly on SIGINT', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentrt-cli-collector-'));
    dirs.push(dir);
    const child = spawn(
      process.execPath,
      [BIN, 'collector', '--port', '0', '--data-dir', join(dir, 'data'), '--trace-index-percent', '50'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, AGENTRT_COLLECTOR_PORT: '1' },
      },
    );
    children.push(child);
    let out = '';
    let err = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const deadline = Date.now() + 20_000;
    while (
      !(out.includes('"listening"') && err.includes('collector on')) &&
      Date.now() < deadline &&
      child.exitCode === null
    ) {
      await new Promise((r) => setTimeout(r, 25));
    }
    const listening = out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'listening');
    expect(listening, `stdout: ${out}\nstderr: ${err}`).toMatchObject({
      dataDir: join(dir, 'data'),
      traceIndexPercent: 50,
    });
    const url = listening!.url as string;
    expect(err).toContain(`collector on ${url}`);
    const res = await fetch(`${url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(200);
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(out).toContain('"msg":"stopped"');
  });

  it('rejects bad flags with usage and exit code 2', async () => {
    const err: string[] = [];
    const io = { stdout: () => {}, stderr: (t: string) => err.push(t), env: {}, cwd: process.cwd() };
    expect(await main(['collector', '--port', 'x'], io)).toBe(2);
    expect(err.join('')).toMatch(/--port must be 0–65535[\s\S]*Usage: agentrt collector/);
    expect(await main(['collector', '--forward', 'ftp://x'], io)).toBe(2);
    expect(await main(['collector', '--nope'], io)).toBe(2);
  });
});
