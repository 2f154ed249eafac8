// A 50,001-span trace, sent by the official OTel SDK and OTLP exporter, in Chromium's trace view:
// the waterfall keeps only the rows in view in the page, so it opens and scrolls like a small
// one; its first rows paint from the first records streamed, before the rest arrive; next error
// lands on the first error span in tree order; a filter typed in the box, re-rooting at a span,
// collapse all, expand to depth and a span opened are all in the URL. Timings go to the output.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCollector, type Collector } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildUiIfStale, hasChromium, usePage } from './browser.js';
import { holdStream, type HeldStreamProxy } from './held-stream.js';
import { SCROLL_FRAMES, sendHugeTrace, STEPS, TOOLS_PER_STEP } from './huge-trace-spans.js';

let collector: Collector;
let dataDir: string;
let sent: Awaited<ReturnType<typeof sendHugeTrace>>;
let proxy: HeldStreamProxy | undefined;

beforeAll(async () => {
  if (!hasChromium) return;
  buildUiIfStale();
  dataDir = mkdtempSync(join(tmpdir(), 'agentrt-huge-'));
  collector = await createCollector({ dataDir, port: 0, host: '127.0.0.1', store: 'sqlite' });
  sent = await sendHugeTrace(collector.url);
}, 240_000);

const page = usePage('huge-trace');

afterAll(async () => {
  await proxy?.close();
  await collector?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const count = () => page().locator('[data-testid=wf-count]').textContent();

const percentile = (sorted: number[], p: number): number => sorted[Math.floor(sorted.length * p)]!;

describe.skipIf(!hasChromium)('a 50,001-span trace in the trace view', { timeout: 180_000 }, () => {
  it('paints its first rows before the rest has arrived, scrolls, and jumps to the next error', async () => {
    // Through a proxy that holds the span stream after its first 1 MB until the test has looked.
    proxy = await holdStream(collector.url, /^\/api\/traces\/[^/]+\/spans/, 1_000_000);
    const t0 = Date.now();
    let firstPaintMs: number;
    try {
      await page().goto(`${proxy.url}/#/traces/${sent.traceId}`);
      await page().locator('[data-testid=waterfall-row]').first().waitFor({ timeout: 120_000 });
      firstPaintMs = Date.now() - t0;
      // Painted from the first records: the rest of the trace is still arriving.
      expect(await page().locator('[data-testid=trace-loading]').count()).toBe(1);
      expect(parseInt((await count())!.split(' of ')[1]!, 10)).toBeLessThan(50001);
    } finally {
      proxy.release();
    }
    await expect.poll(count, { timeout: 120_000 }).toBe('50001 of 50001 spans');
    const wholeMs = Date.now() - t0;
    expect(await page().locator('[data-testid=trace-loading]').count()).toBe(0);
    const inPage = await page().locator('[data-testid=waterfall-row]').count();
    expect(inPage).toBeLessThan(200);

    // Scroll to the bottom, then 60 frames of scrolling up: frame times measured in the page.
    const s0 = Date.now();
    await page().evaluate('window.scrollTo(0, document.documentElement.scrollHeight)');
    await page().locator('[data-row-index="50000"]').waitFor({ timeout: 30_000 });
    const toBottomMs = Date.now() - s0;
    const frames = [...((await page().evaluate(SCROLL_FRAMES(60, -3000))) as number[])].sort((a, b) => a - b);
    console.log(
      `huge trace (50,001 spans): first row painted ${firstPaintMs} ms after navigation, whole after ${wholeMs} ms; ` +
        `scroll to the last row ${toBottomMs} ms; scrolling frames p50 ${percentile(frames, 0.5).toFixed(1)} ms, ` +
        `p95 ${percentile(frames, 0.95).toFixed(1)} ms; rows in the page ${inPage}`,
    );
    expect(await page().locator('[data-testid=waterfall-row]').count()).toBeLessThan(200);

    await page().evaluate('window.scrollTo(0, 0)');
    await page().locator('[data-testid=next-error]').click();
    await page().waitForURL(new RegExp(`span=${sent.firstError}`));
    await page().locator(`[data-span-id="${sent.firstError}"].selected`).waitFor();
    await page().locator('[data-testid=next-error]').click();
    await page().waitForURL(new RegExp(`span=${sent.secondError}`));
    await page().locator(`[data-span-id="${sent.secondError}"].selected`).waitFor();
  });

  it('writes the filter typed in the box into the URL, and a shared URL opens the same filter', async () => {
    await page().goto(`${collector.url}/#/traces/${sent.traceId}`);
    await expect.poll(count, { timeout: 120_000 }).toBe('50001 of 50001 spans');
    // Typed in two parts with a scroll between (the waterfall renders again): nothing typed is lost,
    // and a pause in typing puts the filter in the URL, without Enter.
    await page().locator('[data-testid=wf-filter]').click();
    await page().keyboard.type('tool');
    await page().evaluate('window.scrollBy(0, 3000)');
    await page().locator('[data-row-index="120"]').waitFor();
    await page().locator('[data-testid=wf-filter]').focus();
    await page().keyboard.press('End');
    await page().keyboard.type('.index=250');
    expect(await page().locator('[data-testid=wf-filter]').inputValue()).toBe('tool.index=250');
    await expect.poll(() => page().url()).toContain('filter=tool.index%3D250');
    await expect.poll(count).toBe(`${STEPS} of 50001 spans`);
    const shared = page().url();
    await page().goto('about:blank');
    await page().goto(shared);
    await expect.poll(count, { timeout: 120_000 }).toBe(`${STEPS} of 50001 spans`);
    expect(await page().locator('[data-testid=wf-filter]').inputValue()).toBe('tool.index=250');
    await page().locator('[data-testid=wf-filter]').fill('');
    await page().locator('[data-testid=wf-filter]').press('Enter');
    await expect.poll(() => page().url()).not.toContain('filter=');
    await expect.poll(count).toBe('50001 of 50001 spans');
  });

  it('keeps collapse all, expand to depth, a span opened and the root in the URL', async () => {
    await page().goto(`${collector.url}/#/traces/${sent.traceId}?root=${sent.step7}`);
    await expect.poll(count, { timeout: 120_000 }).toBe(`${TOOLS_PER_STEP + 1} of 50001 spans`);
    await page().locator('[data-testid=collapse-all]').click();
    await expect.poll(count).toBe('1 of 50001 spans');
    await page().locator('[data-testid=unroot]').click();
    await expect.poll(() => page().url()).not.toContain('root=');
    await page().locator('[data-testid=collapse-all]').click();
    await page().waitForURL(/depth=0/);
    await expect.poll(count).toBe('1 of 50001 spans');
    // The root opened by its caret: its steps show, each closed.
    await page().locator('[data-row-index="0"] .caret').click();
    await page().waitForURL(/fold=[0-9a-f]{16}/);
    await expect.poll(count).toBe(`${STEPS + 1} of 50001 spans`);
    const shared = page().url();
    await page().goto('about:blank');
    await page().goto(shared);
    await expect.poll(count, { timeout: 120_000 }).toBe(`${STEPS + 1} of 50001 spans`);
    await page().locator('[data-testid=wf-depth]').selectOption('2');
    await page().waitForURL(/depth=2/);
    expect(page().url()).not.toContain('fold=');
    await expect.poll(count).toBe('50001 of 50001 spans');
    await page().locator('[data-testid=wf-depth]').selectOption('1');
    await expect.poll(count).toBe(`${STEPS + 1} of 50001 spans`);
    await page().locator('[data-testid=expand-all]').click();
    await expect.poll(count).toBe('50001 of 50001 spans');
    expect(page().url()).not.toContain('depth=');
  });
});
