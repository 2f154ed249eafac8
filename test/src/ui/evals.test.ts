// The evaluation views in Chromium: runs of `agentrt eval run` over stored weather sessions, one
// run's results with the judge's explanations, and the sessions list's score column and filter.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Collector, createCollector, spansToOtlpJson } from '@agentrt/collector';
import { main } from '@agentrt/cli';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FORECAST_TURN,
  weatherSession,
} from '../../../packages/runtime/src/evaluate/weather-sessions.test-util.js';
import {
  buildUiIfStale,
  hasChromium,
  launchBrowser,
  openPage,
  reportPageOnFailure,
  screenshot,
} from './browser.js';

let collector: Collector;
let browser: Browser;
let page: Page;
const dir = mkdtempSync(join(tmpdir(), 'agentrt-ui-evals-'));
const SESSIONS = Array.from({ length: 6 }, (_, i) => `ui-eval-session-${i}`);

beforeAll(async () => {
  if (!hasChromium) return;
  buildUiIfStale();
  collector = await createCollector({ dataDir: join(dir, 'collector'), host: '127.0.0.1', port: 0 });
  // Every other session has a failed tool call and no answer: the offline judge scores it 0, and its
  // trajectory does not match the forecast's.
  const spans = SESSIONS.flatMap((id, i) =>
    weatherSession(
      id,
      [i % 2 ? FORECAST_TURN : { ...FORECAST_TURN, tools: ['!http_request'], answer: '' }],
      500 + i,
    ),
  );
  await fetch(`${collector.url}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(spansToOtlpJson(spans)),
  });
  for (let i = 0; i < 300; i++) {
    if ((await fetch(`${collector.url}/api/sessions/${SESSIONS.at(-1)}`)).ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  writeFileSync(
    join(dir, 'set.jsonl'),
    SESSIONS.map((s) => JSON.stringify({ sessionId: s, expectedTrajectory: FORECAST_TURN.tools })).join('\n'),
  );
  const io = { stdout: () => undefined, stderr: () => undefined, env: {}, cwd: dir };
  const args = [
    'eval',
    'run',
    '--dataset',
    'set.jsonl',
    '--url',
    collector.url,
    '--evaluator',
    'Builtin.Helpfulness',
  ];
  expect(await main([...args, '--evaluator', 'Builtin.TrajectoryExactOrderMatch'], io)).toBe(0);
  browser = await launchBrowser();
  page = await openPage(browser);
}, 120_000);

reportPageOnFailure('evals', () => page);

afterAll(async () => {
  await browser?.close();
  await collector?.close();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe.skipIf(!hasChromium)('evaluation views (needs /usr/bin/chromium)', { timeout: 90_000 }, () => {
  it('lists the run, opens it: per-item results with scores and the explanations', async () => {
    await page.goto(`${collector.url}/#/evals`);
    const run = page.locator('[data-testid=eval-runs] tbody tr').first();
    await expect.poll(() => run.count(), { timeout: 30_000 }).toBe(1);
    const cells = await run.locator('td').allTextContents();
    expect(cells[0]).toMatch(/^eval-/);
    expect(cells[1]).toBe('12'); // 6 sessions × 2 evaluators
    await run.locator('a').click();
    const rows = page.locator('[data-testid=eval-results] tbody tr');
    await expect.poll(() => rows.count()).toBe(12);
    const trajectory = rows.filter({ hasText: 'Builtin.TrajectoryExactOrderMatch' }).first();
    expect(await trajectory.locator('td.explanation').textContent()).toMatch(/called \[http_request/);
    const helpful = rows.filter({ hasText: 'Builtin.Helpfulness' }).filter({ hasText: 'ui-eval-session-0' });
    expect(await helpful.locator('.score').textContent()).toBe('0.00');
    expect(await helpful.locator('td.explanation').textContent()).toContain('no answer');
    await screenshot(page, 'eval-run');
  });

  it('shows each session its mean score and filters the list by it', async () => {
    await page.goto(`${collector.url}/#/sessions`);
    const scored = page.locator('tr', { has: page.locator('a:text-is("ui-eval-session-0")') });
    await expect
      .poll(() => scored.locator('[data-testid=session-score]').textContent(), { timeout: 30_000 })
      .toMatch(/^\d\.\d\d$/);
    const all = await page.locator('[data-testid=sessions-table] tbody tr').count();
    await page.locator('[data-testid=score-filter] input').fill('0.5');
    const low = page.locator('[data-testid=sessions-table] tbody tr');
    await expect.poll(() => low.count()).toBeLessThan(all);
    const names = await low.locator('td:first-child a').allTextContents();
    expect(names).toContain('ui-eval-session-0');
    expect(names).not.toContain('ui-eval-session-1');
    await screenshot(page, 'sessions-scores');
  });
});
