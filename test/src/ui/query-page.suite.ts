/**
 * The query page, part of the trace explorer suite (trace-explorer.suite.ts): registered inside its
 * describe on either store, these tests use its collector and Chromium page after its two weather
 * turns are in — a syntax error's position, keys completed from /api/keys, stats drawn as charts,
 * span results linked to their trace.
 */
import { type Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { poll } from './browser.js';

/** What the suite lends these tests: its page, its collector's URL and its screenshot namer. */
export interface QueryPageContext {
  page: () => Page;
  collectorUrl: () => string;
  shot: (name: string) => Promise<void>;
}

/** Registers the query page's tests (in the suite's describe, after its conversation tests). */
export function queryPageTests({ page, collectorUrl, shot }: QueryPageContext): void {
  it('points at the position of a query syntax error', async () => {
    await page().goto(`${collectorUrl()}/#/search`);
    const query = 'filter durationNano > | limit 5';
    const api = await fetch(`${collectorUrl()}/api/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    expect(api.status).toBe(400);
    const { position } = (await api.json()) as { position: number };
    const box = page().locator('textarea.query-input');
    await box.fill(query);
    await page().locator('[data-testid=run-query]').click();
    const error = page().locator('[data-testid=query-error]');
    await error.waitFor();
    expect(await error.locator('.query-error-title').innerText()).toContain(`column ${position + 1}`);
    expect(await error.locator('mark').innerText()).toBe(query[position]);
    await shot('06-query-error');
  });

  it('completes keys from /api/keys in the query box', async () => {
    const box = page().locator('textarea.query-input');
    await box.fill('');
    await box.pressSequentially('filter attributes.gen_ai.tool.na');
    const completions = page().locator('[data-testid=completions] li');
    await poll(() => completions.allInnerTexts()).toContain('attributes.gen_ai.tool.name');
    await shot('07-query-completion');
    // Tab takes the highlighted suggestion: this one, once the list has settled.
    await poll(() => page().locator('[data-testid=completions] li[aria-selected=true]').innerText()).toBe(
      'attributes.gen_ai.tool.name',
    );
    await page().keyboard.press('Tab');
    await poll(() => box.inputValue()).toBe('filter attributes.gen_ai.tool.name');

    // The caret is placed as the accepted text renders, not a frame later: a selection made
    // right after accepting (select-all, then typing: what `fill` does) is kept, and typing
    // replaces the text instead of being appended to it.
    await box.fill('filter attributes.gen_ai.tool.na');
    await poll(() => page().locator('[data-testid=completions] li[aria-selected=true]').innerText()).toBe(
      'attributes.gen_ai.tool.name',
    );
    const selection = await box.evaluate(async (element) => {
      // The page's DOM, typed here (this project's TypeScript has no DOM library).
      const win = globalThis as unknown as {
        KeyboardEvent: new (type: string, init: object) => Event;
        requestAnimationFrame: (callback: () => void) => void;
      };
      const el = element as unknown as {
        value: string;
        selectionStart: number;
        selectionEnd: number;
        select: () => void;
        dispatchEvent: (event: Event) => boolean;
      };
      el.dispatchEvent(new win.KeyboardEvent('keydown', { key: 'Tab', bubbles: true, cancelable: true }));
      // The accepted text renders in a microtask; no frame passes before the select-all.
      for (let i = 0; i < 5; i++) await Promise.resolve();
      const accepted = el.value;
      el.select();
      await new Promise<void>((r) => win.requestAnimationFrame(() => win.requestAnimationFrame(r)));
      return { accepted, start: el.selectionStart, end: el.selectionEnd };
    });
    expect(selection.accepted).toBe('filter attributes.gen_ai.tool.name');
    expect(selection).toMatchObject({ start: 0, end: selection.accepted.length });
  });

  it('runs stats queries and draws them: a time series for bin(), bars by group', async () => {
    const box = page().locator('textarea.query-input');
    await box.fill('stats count(*), sum(attributes.gen_ai.usage.output_tokens) by bin(1m)');
    await page().locator('[data-testid=run-query]').click();
    // Every aggregate is plotted, each on its own axis with titles and a legend.
    const charts = page().locator('[data-testid=stats-chart]');
    await charts.first().waitFor();
    expect(await charts.evaluateAll((els) => els.map((e) => [e.dataset.chart, e.dataset.metric]))).toEqual([
      ['line', 'count(*)'],
      ['line', 'sum(attributes.gen_ai.usage.output_tokens)'],
    ]);
    expect(await charts.first().locator('polyline').count()).toBeGreaterThanOrEqual(1);
    expect(await charts.first().locator('[data-testid=y-title]').textContent()).toBe('count(*)');
    expect(await charts.first().locator('[data-testid=x-title]').textContent()).toBe('time (bin(1m))');
    expect(await page().locator('[data-testid=results-table] tbody tr').count()).toBeGreaterThanOrEqual(1);
    await shot('08-stats-time-series');

    await box.fill(
      'filter attributes.session.id = "sess-weather-ui-1" | stats count(*) as spans, avg(durationNano) by name',
    );
    await page().locator('[data-testid=run-query]').click();
    await page().locator('[data-testid=stats-chart][data-chart=bar]').first().waitFor();
    expect(await page().locator('[data-testid=stats-chart][data-chart=bar]').count()).toBe(2);
    expect(await page().locator('[data-testid=stats-chart][data-metric=spans] rect.bar').count()).toBe(3);
    expect(
      await page().locator('[data-testid=stats-chart][data-metric="avg(durationNano)"] rect.bar').count(),
    ).toBe(3);
    const table = await page().locator('[data-testid=results-table]').innerText();
    expect(table).toContain('execute_tool get_weather');
    expect(page().url()).toContain('#/search?q=');
    await shot('09-stats-bars');
  });

  it('links span results to their trace', async () => {
    await page()
      .locator('textarea.query-input')
      .fill('filter attributes.gen_ai.operation.name = "execute_tool" | limit 10');
    await page().locator('[data-testid=run-query]').click();
    const link = page().locator('[data-testid=results-table] tbody tr a').first();
    await link.waitFor();
    expect(await page().locator('[data-testid=results-table] tbody tr').count()).toBe(2);
    // The whole record (`@message`) is folded away as expandable JSON.
    const record = page().locator('[data-testid=results-table] details.cell-json').first();
    await record.locator('summary').click();
    expect(await record.innerText()).toContain('"gen_ai.tool.name": "get_weather"');
    await shot('10-span-results');
    await link.click();
    await page().waitForURL(/#\/traces\/[0-9a-f]{32}\?span=/);
    await page().locator('.span-panel .tool-call').waitFor();
  });
}
