// Charts of the search view in Chromium: a time series with an empty bucket is drawn broken there,
// and nanosecond aggregates read as durations (the raw value in the tooltip).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Collector, createCollector } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildUiIfStale, hasChromium, screenshot, usePage } from './browser.js';

const dataDir = mkdtempSync(join(tmpdir(), 'agentrt-ui-charts-'));
let collector: Collector;
const MINUTE = 60_000;
// Whole minutes, so each span sits inside one bin(1m); the bucket 3 minutes ago has no span.
const base = Math.floor(Date.now() / MINUTE) * MINUTE - 5 * MINUTE;

function span(i: number, minute: number, durationMs: number) {
  const start = BigInt(base + minute * MINUTE + 1000) * 1_000_000n;
  return {
    traceId: (i + 1).toString(16).padStart(32, '0'),
    spanId: (i + 1).toString(16).padStart(16, '0'),
    name: 'work',
    kind: 1,
    startTimeUnixNano: String(start),
    endTimeUnixNano: String(start + BigInt(durationMs) * 1_000_000n),
    status: {},
  };
}

beforeAll(async () => {
  if (!hasChromium) return;
  buildUiIfStale();
  collector = await createCollector({ dataDir, port: 0, host: '127.0.0.1' });
  const spans = [span(0, 0, 400), span(1, 1, 400), span(2, 1, 800), span(3, 3, 200), span(4, 4, 400)];
  const res = await fetch(`${collector.url}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'charts' } }] },
          scopeSpans: [{ scope: { name: 'test' }, spans }],
        },
      ],
    }),
  });
  expect(res.status).toBe(200);
}, 60_000);

afterAll(async () => {
  await collector?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe.skipIf(!hasChromium)('search charts (needs /usr/bin/chromium)', { timeout: 60_000 }, () => {
  const page = usePage('charts');
  it('draws a series with an empty bucket as two lines, not one across the gap', async () => {
    await page().goto(`${collector.url}/#/search?q=${encodeURIComponent('stats count(*) by bin(1m)')}`);
    const chart = page().locator('[data-testid=stats-chart][data-chart=line]');
    await chart.waitFor();
    // Minutes 0, 1 | (2 empty) | 3, 4: two segments.
    await expect.poll(() => chart.locator('[data-testid=chart-line]').count()).toBe(2);
    expect(await chart.locator('circle').count()).toBe(4);
    await screenshot(page(), 'chart-gap');
  });

  it('reads nanosecond aggregates as durations on the axis and in the table, raw in the tooltip', async () => {
    await page().goto(
      `${collector.url}/#/search?q=${encodeURIComponent('stats avg(durationNano) by bin(1m)')}`,
    );
    // This query's chart, not the previous test's still on the page while the new answer loads.
    const chart = page().locator('[data-testid=stats-chart][data-metric="avg(durationNano)"]');
    await chart.waitFor();
    const ticks = await chart.locator('text.axis').allTextContents();
    expect(ticks.some((t) => / ms$/.test(t))).toBe(true);
    expect(ticks.filter((t) => /M$/.test(t))).toEqual([]);
    const cell = page().locator('[data-testid=results-table] td.num .cell').filter({ hasText: '600 ms' });
    await cell.waitFor();
    expect(await cell.getAttribute('title')).toBe('600000000');
  });
});
