// The first page a newcomer sees after sending spans from an instrumented app, with no runtime in
// front of it (so no runtime metrics): it lists what arrived, and none of its requests fail.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCollector, type Collector } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildUiIfStale, hasChromium, usePage } from './browser.js';
import { createTelemetry, sendWeatherTurn, type Telemetry } from './weather-telemetry.js';

const SESSION = 'sess-landing-1';
let collector: Collector;
let telemetry: Telemetry;
let dataDir: string;

beforeAll(async () => {
  if (!hasChromium) return;
  buildUiIfStale();
  dataDir = mkdtempSync(join(tmpdir(), 'agentrt-landing-'));
  collector = await createCollector({ dataDir, port: 0, host: '127.0.0.1', store: 'sqlite' });
  telemetry = createTelemetry(collector.url, 'my-agent');
  sendWeatherTurn(telemetry, { sessionId: SESSION, city: 'Lyon', startMs: Date.now() - 5000 });
  await telemetry.flush();
}, 60_000);

const page = usePage('landing');

afterAll(async () => {
  await telemetry?.shutdown();
  await collector?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe.skipIf(!hasChromium)('the first page with spans and no runtime metrics', { timeout: 60_000 }, () => {
  it('lists the latest sessions and traces, and no request answers an error', async () => {
    const failed: string[] = [];
    page().on('response', (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
    });
    await page().goto(`${collector.url}/`);
    const sessions = page().locator('[data-testid=recent-sessions]');
    await expect.poll(() => sessions.textContent(), { timeout: 20_000 }).toContain(SESSION);
    await expect
      .poll(() => page().locator('[data-testid=recent-traces]').textContent())
      .toContain('invoke_agent weather');
    await page().locator('[data-testid=recent-sessions] a', { hasText: SESSION }).click();
    await expect.poll(() => page().url()).toContain(`#/sessions/${SESSION}`);
    expect(failed).toEqual([]);
  });
});
