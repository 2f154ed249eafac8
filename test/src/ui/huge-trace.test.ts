// A 50,001-span trace, sent by the official OTel SDK and OTLP exporter, in Chromium's trace view:
// the waterfall keeps only the rows in view in the page, so it opens and scrolls like a small
// one; next error lands on the first error span in tree order; a filter, re-rooting at a span
// and collapse all work, with the filter and the root in the URL. Timings go to the test output.
import { ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCollector, type Collector } from '@agentrt/collector';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildUiIfStale, hasChromium, launchBrowser, openPage, reportPageOnFailure } from './browser.js';

const STEPS = 100;
const TOOLS_PER_STEP = 499; // 1 + 100 + 49,900 = 50,001 spans
let collector: Collector;
let browser: Browser;
let page: Page;
let dataDir: string;
const sent = { traceId: '', firstError: '', secondError: '', step7: '' };

async function sendHugeTrace(url: string): Promise<void> {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'huge-agent' }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter({ url: `${url}/v1/traces`, timeoutMillis: 60_000 }), {
        maxQueueSize: 60_000,
        maxExportBatchSize: 5_000,
        scheduledDelayMillis: 100,
      }),
    ],
  });
  const tracer = provider.getTracer('huge');
  const root = tracer.startSpan('invoke_agent huge', {}, ROOT_CONTEXT);
  const rootContext = trace.setSpan(ROOT_CONTEXT, root);
  sent.traceId = root.spanContext().traceId;
  for (let i = 0; i < STEPS; i++) {
    const step = tracer.startSpan(`step-${i}`, {}, rootContext);
    if (i === 7) sent.step7 = step.spanContext().spanId;
    const stepContext = trace.setSpan(ROOT_CONTEXT, step);
    for (let j = 0; j < TOOLS_PER_STEP; j++) {
      const tool = tracer.startSpan(
        `execute_tool tool-${j}`,
        { attributes: { 'tool.index': j } },
        stepContext,
      );
      if ((i === 37 && j === 250) || (i === 80 && j === 10)) {
        tool.setStatus({ code: SpanStatusCode.ERROR, message: 'tool failed' });
        sent[i === 37 ? 'firstError' : 'secondError'] = tool.spanContext().spanId;
      }
      tool.end();
    }
    step.end();
  }
  root.end();
  await provider.shutdown();
}

beforeAll(async () => {
  if (!hasChromium) return;
  buildUiIfStale();
  dataDir = mkdtempSync(join(tmpdir(), 'agentrt-huge-'));
  collector = await createCollector({ dataDir, port: 0, host: '127.0.0.1', store: 'sqlite' });
  await sendHugeTrace(collector.url);
  browser = await launchBrowser();
  page = await openPage(browser);
}, 240_000);

reportPageOnFailure('huge-trace', () => page);

afterAll(async () => {
  await browser?.close();
  await collector?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const count = () => page.locator('[data-testid=wf-count]').textContent();

describe.skipIf(!hasChromium)('a 50,001-span trace in the trace view', { timeout: 180_000 }, () => {
  it('opens, scrolls and jumps to the next error with only the rows in view in the page', async () => {
    const traceUrl = `${collector.url}/#/traces/${sent.traceId}`;
    const t0 = Date.now();
    await page.goto(traceUrl);
    await page.locator('[data-testid=waterfall-row]').first().waitFor({ timeout: 120_000 });
    const firstPaintMs = Date.now() - t0;
    expect(await count()).toBe('50001 of 50001 spans');
    const inPage = await page.locator('[data-testid=waterfall-row]').count();
    expect(inPage).toBeLessThan(200);

    // Scroll to the bottom, then 60 frames of scrolling up: frame times measured in the page.
    const s0 = Date.now();
    await page.evaluate('window.scrollTo(0, document.documentElement.scrollHeight)');
    await page.locator('[data-row-index="50000"]').waitFor({ timeout: 30_000 });
    const toBottomMs = Date.now() - s0;
    const frames = (await page.evaluate(`new Promise((resolve) => {
      const times = [];
      let last = performance.now();
      const step = (n) => {
        const now = performance.now();
        times.push(now - last);
        last = now;
        if (n === 0) return resolve(times.slice(1));
        window.scrollBy(0, -3000);
        requestAnimationFrame(() => step(n - 1));
      };
      requestAnimationFrame(() => step(60));
    })`)) as number[];
    const sorted = [...frames].sort((a, b) => a - b);
    const p95Frame = sorted[Math.floor(sorted.length * 0.95)]!;
    console.log(
      `huge trace (50,001 spans): first row painted ${firstPaintMs} ms after navigation; ` +
        `scroll to the last row ${toBottomMs} ms; scrolling frames p50 ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} ms, p95 ${p95Frame.toFixed(1)} ms; rows in the page ${inPage}`,
    );
    expect(await page.locator('[data-testid=waterfall-row]').count()).toBeLessThan(200);

    await page.evaluate('window.scrollTo(0, 0)');
    await page.locator('[data-testid=next-error]').click();
    await page.waitForURL(new RegExp(`span=${sent.firstError}`));
    await page.locator(`[data-span-id="${sent.firstError}"].selected`).waitFor();
    await page.locator('[data-testid=next-error]').click();
    await page.waitForURL(new RegExp(`span=${sent.secondError}`));
    await page.locator(`[data-span-id="${sent.secondError}"].selected`).waitFor();
  });

  it('filters, re-roots and collapses, the filter and the root kept in the URL', async () => {
    // A shared view: the filter in the URL (the filter box writes it there; see trace-explorer tests).
    await page.goto(`${collector.url}/#/traces/${sent.traceId}?filter=tool.index%3D250`);
    await expect.poll(count, { timeout: 60_000 }).toBe(`${STEPS} of 50001 spans`);
    expect(await page.locator('[data-testid=wf-filter]').inputValue()).toBe('tool.index=250');
    await page.goto(`${collector.url}/#/traces/${sent.traceId}?root=${sent.step7}`);
    await expect.poll(count, { timeout: 60_000 }).toBe(`${TOOLS_PER_STEP + 1} of 50001 spans`);
    await page.locator('[data-testid=collapse-all]').click();
    await expect.poll(count).toBe('1 of 50001 spans');
    await page.locator('[data-testid=unroot]').click();
    await expect.poll(() => page.url()).not.toContain('root=');
    await page.locator('[data-testid=collapse-all]').click();
    await expect.poll(count).toBe('1 of 50001 spans');
    await page.locator('[data-testid=expand-all]').click();
    await expect.poll(count).toBe('50001 of 50001 spans');
  });
});
