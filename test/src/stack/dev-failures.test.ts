import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { freePort } from '@agentrt/kit';
import { processesMentioning, startCli } from './dev-process.js';
import { repoRoot } from './repo.js';

/**
 * `agentrt dev` when a service misbehaves, run against a copy of the repo whose collector, runtime
 * and instrumentation are the real built ones but whose weather service is a small script we control:
 * one that never becomes healthy, and one that dies after it started. The reference agents are the
 * real ones too. Every process of a run has the copy's path in its argv or environment, so the
 * orphan scan finds anything left behind; every case must end with none.
 */
describe('agentrt dev when a service fails', () => {
  let root: string;
  let dataDir: string;
  let marker: string;

  async function makeRepo(weatherProgram: string): Promise<void> {
    root = await mkdtemp(join(tmpdir(), 'agentrt-dev-fail-'));
    dataDir = join(root, '.data');
    marker = root;
    // Every example but the weather service is the real one: `agentrt dev` hosts several of them,
    // and a new example it registers must not need this list edited.
    const examples = (await readdir(join(repoRoot, 'examples'), { withFileTypes: true }))
      .filter((e) => e.isDirectory() && e.name !== 'weather')
      .map((e) => `examples/${e.name}`);
    for (const path of ['package.json', 'node_modules', 'collector', 'packages', ...examples]) {
      await mkdir(join(root, path, '..'), { recursive: true });
      await symlink(join(repoRoot, path), join(root, path));
    }
    await mkdir(join(root, 'examples/weather/dist'), { recursive: true });
    await writeFile(join(root, 'examples/weather/dist/main.js'), weatherProgram);
  }

  const cli = (extra: string[] = []) =>
    startCli(['dev', '--data-dir', dataDir, '--stop-grace-ms', '2000', ...extra], {
      ...process.env,
      CI: '1',
      AGENTRT_MODEL_PROVIDER: 'offline',
      NODE_OPTIONS: '',
      AGENTRT_E2E_MARKER: marker,
    });

  const ports = async () => [
    '--collector-port',
    String(await freePort()),
    '--runtime-port',
    String(await freePort()),
    '--weather-port',
    String(await freePort()),
  ];

  beforeEach(() => {
    root = '';
  });

  afterEach(async () => {
    for (const pid of await processesMentioning([marker])) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('gives up on a service that never becomes healthy, shows its last output and stops the rest', async () => {
    await makeRepo(`console.log('weather: loading a very slow model'); setInterval(() => {}, 1000);`);
    const dev = cli([...(await ports()), '--ready-timeout-ms', '15000', '--repo-root', root]);
    const { code } = await dev.exited;
    expect(code).toBe(1);
    const out = dev.output();
    expect(out).toContain('✖ weather service');
    expect(out).toContain('agentrt dev: weather was not ready after 15 s');
    expect(out).toContain('weather: loading a very slow model');
    expect(out).toContain(`full log: ${join(dataDir, 'logs', 'weather.log')}`);
    expect(await processesMentioning([marker])).toEqual([]);
  }, 120_000);

  it('stops at once on SIGTERM while a service is still starting', async () => {
    await makeRepo(`console.log('weather: starting'); setInterval(() => {}, 1000);`);
    const dev = cli([...(await ports()), '--ready-timeout-ms', '120000', '--repo-root', root]);
    await dev.waitFor(/… weather service/, 60_000);
    await dev.waitFor(/✔ hosting runtime/, 60_000);
    const sent = Date.now();
    dev.child.kill('SIGTERM');
    const { code } = await dev.exited;
    expect(code).toBe(0);
    expect(Date.now() - sent).toBeLessThan(20_000);
    expect(await processesMentioning([marker])).toEqual([]);
  }, 120_000);

  it('stops everything when a service dies after it started, saying which and why', async () => {
    await makeRepo(`
      import http from 'node:http';
      http.createServer((req, res) => res.end('ok')).listen(Number(process.env.PORT), process.env.HOST);
      setTimeout(() => { console.error('weather: out of memory (simulated)'); process.exit(9); }, 8000);`);
    const dev = cli([...(await ports()), '--repo-root', root]);
    const { code } = await dev.exited;
    expect(code).toBe(1);
    expect(dev.output()).toContain('agentrt dev: weather stopped unexpectedly (code 9); stopping the rest.');
    expect(dev.output()).toContain('  last output of weather:\n    weather: out of memory (simulated)\n');
    expect(dev.output()).toContain(`full log: ${join(dataDir, 'logs', 'weather.log')}`);
    expect(await processesMentioning([marker])).toEqual([]);
  }, 180_000);
});
