// Benchmarks the trace view on a 50,001-span trace (collector/ui trace-stream.ts + the virtualized
// waterfall): time from navigation to the first waterfall row painted and to the whole trace in,
// and scroll frame times (requestAnimationFrame deltas in Chromium) for jumps of 100 rows and for
// wheel-sized steps, beside the frames of the same page standing still (the loaded machine's floor). Baselines in the same run and the same page: the whole trace as one JSON
// answer (GET /api/traces/{id}, fetched and parsed: what the view waited for before its first row
// until #31), and the raw streams (first line and last line of GET /api/traces/{id}/spans).
// Goal (#31): first paint < 1 s. Writes its table into docs/benchmarks.md. Build first (tsc -b).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { chromium } from 'playwright-core';
import { createCollector } from '@agentrt/collector';
import { ms, pct } from '../lib/measure.mjs';
import { loadAverage, table, writeSection } from '../lib/report.mjs';
// The trace of the huge-trace UI test (test/src/ui/huge-trace-spans.ts, built by tsc -b).
import { SCROLL_FRAMES, sendHugeTrace } from '../../test/dist/ui/huge-trace-spans.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const repo = join(import.meta.dirname, '..', '..');

/** In the page: the full JSON answer fetched and parsed, and the span stream's first and last line. */
const RAW_FETCHES = (traceId) => `(async () => {
  const t0 = performance.now();
  await (await fetch('/api/traces/${traceId}')).json();
  const full = performance.now() - t0;
  const t1 = performance.now();
  const reader = (await fetch('/api/traces/${traceId}/spans')).body.getReader();
  let first;
  for (let r = await reader.read(); !r.done; r = await reader.read())
    if (first === undefined && r.value.includes(10)) first = performance.now() - t1;
  return { full, first, last: performance.now() - t1 };
})()`;

const COUNT = '[data-testid=wf-count]';

/** One opening of the trace view: first row painted, whole trace in, then the scroll frames. */
async function openView(page, url, traceId) {
  await page.goto('about:blank');
  const t0 = Date.now();
  await page.goto(`${url}/#/traces/${traceId}`);
  await page.locator('[data-testid=waterfall-row]').first().waitFor({ timeout: 120_000 });
  const firstPaint = Date.now() - t0;
  await page.waitForFunction(
    `document.querySelector('${COUNT}')?.textContent === '50001 of 50001 spans'`,
    undefined,
    { timeout: 120_000, polling: 50 },
  );
  const whole = Date.now() - t0;
  await page.evaluate('window.scrollTo(0, document.documentElement.scrollHeight)');
  await page.locator('[data-row-index="50000"]').waitFor({ timeout: 30_000 });
  const jumps = await page.evaluate(SCROLL_FRAMES(60, -3000));
  const wheel = await page.evaluate(SCROLL_FRAMES(60, 120));
  const idle = await page.evaluate(SCROLL_FRAMES(60, 0));
  return { firstPaint, whole, jumps, wheel, idle };
}

execFileSync(process.execPath, [join(repo, 'collector', 'ui', 'build.mjs'), '--if-stale']);
const dataDir = mkdtempSync(join(tmpdir(), 'agentrt-bench-huge-'));
const collector = await createCollector({ dataDir, port: 0, host: '127.0.0.1', store: 'sqlite' });
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});
try {
  const { traceId } = await sendHugeTrace(collector.url);
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const loadBefore = loadAverage();
  const r = { firstPaint: [], whole: [], jumps: [], wheel: [], idle: [], full: [], first: [], last: [] };
  for (let i = 0; i < RUNS; i++) {
    const view = await openView(page, collector.url, traceId);
    const raw = await page.evaluate(RAW_FETCHES(traceId));
    for (const k of ['firstPaint', 'whole']) r[k].push(view[k]);
    r.jumps.push(...view.jumps);
    r.wheel.push(...view.wheel);
    r.idle.push(...view.idle);
    for (const k of ['full', 'first', 'last']) r[k].push(raw[k]);
    console.log(
      `run ${i + 1}: first row ${view.firstPaint} ms, whole ${view.whole} ms; full JSON ${raw.full.toFixed(0)} ms`,
    );
  }
  const row = (what, values, note) => [what, ms(pct(values, 50)), ms(pct(values, 95)), note];
  const md = `${table(
    ['', 'p50', 'p95', ''],
    [
      row('trace view: first waterfall row painted (from navigation)', r.firstPaint, 'goal < 1 s'),
      row('trace view: whole trace in (50,001 rows)', r.whole, ''),
      row(
        'baseline: GET /api/traces/{id} fetched + parsed (before #31 the first row waited for this, then its conversion)',
        r.full,
        `first paint ${(pct(r.full, 50) / pct(r.firstPaint, 50)).toFixed(1)}× faster`,
      ),
      row('raw: GET /api/traces/{id}/spans first line', r.first, ''),
      row('raw: GET /api/traces/{id}/spans last line', r.last, ''),
      row('scroll frame, jumps of 100 rows (3,000 px a frame)', r.jumps, 'rAF deltas; 16.7 ms = 60 fps'),
      row('scroll frame, wheel steps (120 px a frame)', r.wheel, ''),
      row("baseline: frame of the same page not scrolling (the machine's frame floor now)", r.idle, ''),
    ],
  )}

${RUNS} openings of a 50,001-span trace (1 root, 100 steps of 499 tool calls) sent by the OTel SDK's
OTLP exporter to a SQLite collector, in headless Chromium (1440×900, no GPU), on the same page
as the baselines. Load average before: ${loadBefore}; after: ${loadAverage()}.`;
  console.log(md);
  console.log(
    `written to ${writeSection('huge-trace', 'Trace view: a 50,001-span trace (bench/huge-trace)', md)}`,
  );
} finally {
  await browser.close();
  await collector.close();
  rmSync(dataDir, { recursive: true, force: true });
}
