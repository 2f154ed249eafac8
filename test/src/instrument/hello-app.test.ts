/**
 * The README's smallest app (examples/hello), run as the README says against a real collector: its
 * trace is one a user sees in the default trace list (under its package's name), not a health probe
 * the list hides.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Collector, type TraceSummary, createCollector } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../stack/repo.js';
import { childEnv } from './app-process.js';

const run = promisify(execFile);

describe('examples/hello under @agentrt/instrument', { timeout: 60_000 }, () => {
  let dataDir: string;
  let collector: Collector;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'agentrt-hello-'));
    collector = await createCollector({ dataDir, port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await collector?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it.each([
    ['--require', 'examples/hello/app.cjs'],
    ['--import', 'examples/hello/app.mjs'],
  ])(
    'node %s @agentrt/instrument %s: a trace of service hello in the default trace list',
    async (flag, app) => {
      const { stdout } = await run(process.execPath, [flag, '@agentrt/instrument', app], {
        cwd: repoRoot,
        env: childEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }),
        timeout: 30_000,
      });
      const url = /GET (\S+) → hello from \/hello/.exec(stdout)?.[1];
      expect(url, stdout).toBeDefined();
      await expect
        .poll(
          async () => {
            const res = await fetch(`${collector.url}/api/traces?limit=20`);
            const { traces } = (await res.json()) as { traces: TraceSummary[] };
            return traces.filter((t) => t.serviceName === 'hello' && t.spanCount === 2 && !t.noise).length;
          },
          { timeout: 15_000, interval: 200 },
        )
        .toBeGreaterThanOrEqual(flag === '--require' ? 1 : 2);
    },
  );
});
