// The cost alert banner in Chromium: a rule crossed by a weather turn's model calls (sent with the
// official OTel SDK) shows above the page, naming the rule, the session and the sum, without a
// reload; it goes once the window ages out and the alert resolves.
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCollector, type Collector } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildUiIfStale, hasChromium, usePage } from './browser.js';
import { createTelemetry, sendWeatherTurn, type Telemetry } from './weather-telemetry.js';

const SESSION = 'sess-alerted-1';
let collector: Collector;
let telemetry: Telemetry;
let dataDir: string;
const webhook = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(204).end());
});

beforeAll(async () => {
  if (!hasChromium) return;
  buildUiIfStale();
  dataDir = mkdtempSync(join(tmpdir(), 'agentrt-alert-ui-'));
  collector = await createCollector({ dataDir, port: 0, host: '127.0.0.1', store: 'sqlite' });
  await new Promise<void>((r) => webhook.listen(0, '127.0.0.1', r));
  telemetry = createTelemetry(collector.url, 'alerted-agent');
}, 60_000);

const page = usePage('alerts');

afterAll(async () => {
  await telemetry?.shutdown();
  await collector?.close();
  webhook.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe.skipIf(!hasChromium)('the cost alert banner', { timeout: 60_000 }, () => {
  it('shows a firing rule without a reload, and drops it once resolved', async () => {
    const address = webhook.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const set = await fetch(`${collector.url}/api/alerts/rules`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        rules: [
          {
            name: 'session-tokens',
            measure: 'tokens',
            threshold: 100,
            windowSeconds: 6,
            webhook: `http://127.0.0.1:${port}/`,
          },
        ],
      }),
    });
    expect(set.status).toBe(200);
    await page().goto(`${collector.url}/#/sessions`);
    await expect.poll(() => page().locator('[data-testid=alert-banner]').count()).toBe(0);
    sendWeatherTurn(telemetry, { sessionId: SESSION, city: 'Lyon', startMs: Date.now() - 2000 });
    await telemetry.flush();
    await expect
      .poll(() => page().locator('[data-testid=alert-banner]').textContent(), { timeout: 10_000 })
      .toMatch(/1 cost alert firing\s*session-tokens: session sess-alerted-1 at \d+ \/ 100 tokens over 6s/);
    await expect
      .poll(() => page().locator('[data-testid=alert-banner]').count(), { timeout: 20_000 })
      .toBe(0);
  });
});
