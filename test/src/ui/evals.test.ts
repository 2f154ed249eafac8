// The evaluation views in Chromium: runs of `agentrt eval run` over stored weather sessions, one
// run's results with the judge's explanations, the sessions list's score column and filter, and two
// runs compared side by side.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Collector, createCollector, spansToOtlpJson } from '@agentrt/collector';
import { main } from '@agentrt/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FORECAST_TURN,
  weatherSession,
} from '../../../packages/runtime/src/evaluate/weather-sessions.test-util.js';
import { buildUiIfStale, hasChromium, usePage, screenshot } from './browser.js';

let collector: Collector;
let args: string[];
const dir = mkdtempSync(join(tmpdir(), 'agentrt-ui-evals-'));
const io = { stdout: () => undefined, stderr: () => undefined, env: {}, cwd: dir };
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
  args = [
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
}, 120_000);

const page = usePage('evals');

afterAll(async () => {
  await collector?.close();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe.skipIf(!hasChromium)('evaluation views (needs /usr/bin/chromium)', { timeout: 90_000 }, () => {
  it('lists the run, opens it: per-item results with scores and the explanations', async () => {
    await page().goto(`${collector.url}/#/evals`);
    const run = page().locator('[data-testid=eval-runs] tbody tr').first();
    await expect.poll(() => run.count(), { timeout: 30_000 }).toBe(1);
    const cells = await run.locator('td').allTextContents();
    expect(cells[1]).toMatch(/^eval-/); // after the compare tick box
    expect(cells[2]).toBe('12'); // 6 sessions × 2 evaluators
    await run.locator('a').click();
    const rows = page().locator('[data-testid=eval-results] tbody tr');
    await expect.poll(() => rows.count()).toBe(12);
    const trajectory = rows.filter({ hasText: 'Builtin.TrajectoryExactOrderMatch' }).first();
    expect(await trajectory.locator('td.explanation').textContent()).toMatch(/called \[http_request/);
    const helpful = rows.filter({ hasText: 'Builtin.Helpfulness' }).filter({ hasText: 'ui-eval-session-0' });
    expect(await helpful.locator('.score').textContent()).toBe('0.00');
    expect(await helpful.locator('td.explanation').textContent()).toContain('no answer');
    await screenshot(page(), 'eval-run');
  });

  it('shows each session its mean score and filters the list by it', async () => {
    await page().goto(`${collector.url}/#/sessions`);
    const scored = page().locator('tr', { has: page().locator('a:text-is("ui-eval-session-0")') });
    await expect
      .poll(() => scored.locator('[data-testid=session-score]').textContent(), { timeout: 30_000 })
      .toMatch(/^\d\.\d\d$/);
    const all = await page().locator('[data-testid=sessions-table] tbody tr').count();
    await page().locator('[data-testid=score-filter] input').fill('0.5');
    const low = page().locator('[data-testid=sessions-table] tbody tr');
    await expect.poll(() => low.count()).toBeLessThan(all);
    const names = await low.locator('td:first-child a').allTextContents();
    expect(names).toContain('ui-eval-session-0');
    expect(names).not.toContain('ui-eval-session-1');
    await screenshot(page(), 'sessions-scores');
  });

  it('compares two runs: per-evaluator deltas, per-session rows, regressions first and marked', async () => {
    // A second run after a "change": sessions 1 and 3 are now expected to call weather_alerts (their
    // exact-order match falls 1 → 0), session 0 to make the one call it made (0 → 1).
    const expected = (i: number) =>
      i === 1 || i === 3 ? ['weather_alerts'] : i === 0 ? ['http_request'] : FORECAST_TURN.tools;
    writeFileSync(
      join(dir, 'changed.jsonl'),
      SESSIONS.map((s, i) => JSON.stringify({ sessionId: s, expectedTrajectory: expected(i) })).join('\n'),
    );
    const changed = args.map((a) => (a === 'set.jsonl' ? 'changed.jsonl' : a));
    expect(await main([...changed, '--evaluator', 'Builtin.TrajectoryExactOrderMatch'], io)).toBe(0);

    await page().goto(`${collector.url}/#/evals`);
    const runs = page().locator('[data-testid=eval-runs] tbody tr');
    await expect.poll(() => runs.count(), { timeout: 30_000 }).toBe(2);
    // Newest first: tick the older run first, the base.
    await runs.nth(1).locator('input[type=checkbox]').check();
    await runs.nth(0).locator('input[type=checkbox]').check();
    await page().locator('[data-testid=eval-compare-link]').click();

    const summary = page().locator('[data-testid=eval-compare-summary]');
    await expect
      .poll(() => summary.textContent(), { timeout: 30_000 })
      .toBe('6 items · 2 regressed · 1 improved');
    const evaluators = page().locator('[data-testid=eval-compare-evaluators] tbody tr');
    const trajectory = evaluators.filter({ hasText: 'Builtin.TrajectoryExactOrderMatch' });
    expect(await trajectory.locator('td.num').textContent()).toBe('0.50 → 0.33 −0.17');
    expect(await trajectory.getAttribute('class')).toBe('regression');
    const helpful = evaluators.filter({ hasText: 'Builtin.Helpfulness' });
    expect(await helpful.locator('td.num').textContent()).toMatch(/^(\d\.\d\d) → \1 ±0$/);

    const items = page().locator('[data-testid=eval-compare-items] tbody tr');
    expect(await items.count()).toBe(6);
    const first = await items.nth(0).locator('td').allTextContents();
    const second = await items.nth(1).locator('td').allTextContents();
    expect([first[0], second[0]]).toEqual(['ui-eval-session-1', 'ui-eval-session-3']);
    for (const row of [items.nth(0), items.nth(1)])
      expect(await row.getAttribute('class')).toBe('regression');
    const cell = items.nth(0).locator('td[data-evaluator="Builtin.TrajectoryExactOrderMatch"]');
    expect(await cell.textContent()).toBe('1.00 → 0.00 −1.00');
    expect(await cell.locator('.delta.down').count()).toBe(1);
    const improved = items.filter({ hasText: 'ui-eval-session-0' });
    expect(await improved.getAttribute('class')).toBe('');
    expect(
      await improved
        .locator('td[data-evaluator="Builtin.TrajectoryExactOrderMatch"] .delta.up')
        .textContent(),
    ).toBe('+1.00');
    await screenshot(page(), 'eval-compare');
  });
});
