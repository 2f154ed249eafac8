/**
 * The trace explorer in real headless Chromium against a real collector: telemetry goes in through
 * the OTel SDK's OTLP/HTTP exporter, and the test reads what a user would see. One suite, run by
 * trace-explorer.test.ts on the SQLite store and by trace-explorer-clickhouse.test.ts on a
 * ClickHouse-backed collector (a real clickhouse-server on a free port). Its query page tests are
 * in query-page.suite.ts, run in this suite's order on its collector and page.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpanStatusCode, context, trace as otelTrace } from '@opentelemetry/api';
import { createCollector, type Collector } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ClickHouseHarness,
  clickHouseSkipReason,
  startClickHouse,
} from '../../../collector/dist/store/clickhouse/clickhouse-harness.test-util.js';
import { buildUiIfStale, hasChromium, poll, usePage, screenshot } from './browser.js';
import { queryPageTests } from './query-page.suite.js';
import {
  MODEL,
  TURN_LAYOUT,
  answerOf,
  createTelemetry,
  promptOf,
  sendWeatherTurn,
  weatherLogLine,
  type Telemetry,
} from './weather-telemetry.js';

const SESSION = 'sess-weather-ui-1';

let collector: Collector;
let telemetry: Telemetry;
let dataDir: string;
let clickHouse: ClickHouseHarness | undefined;
const traceIds: string[] = [];

async function getJson<T>(path: string): Promise<T> {
  const r = await fetch(collector.url + path);
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
}

/** Polls until the collector's API reflects what was sent (ingest is asynchronous). */
async function until<T>(
  read: () => Promise<T>,
  ok: (v: T) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await read();
      if (ok(v)) return v;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(String(last)).slice(0, 300)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The suite over a collector on `store`; screenshots of the ClickHouse run are prefixed `clickhouse-`. */
export function traceExplorerSuite(store: 'sqlite' | 'clickhouse'): void {
  const skip = !hasChromium || (store === 'clickhouse' && clickHouseSkipReason !== undefined);

  beforeAll(async () => {
    if (skip) return;
    buildUiIfStale();
    dataDir = mkdtempSync(join(tmpdir(), 'agentrt-ui-'));
    if (store === 'clickhouse') clickHouse = await startClickHouse();
    collector = await createCollector({
      dataDir,
      port: 0,
      host: '127.0.0.1',
      ...(clickHouse
        ? { store: `clickhouse://default:@127.0.0.1:${clickHouse.nodes[0]!.httpPort}/agentrt_ui` }
        : {}),
    });
    telemetry = createTelemetry(collector.url);
  }, 120_000);

  const page = usePage(store, { skip });
  const shot = (name: string): Promise<void> =>
    screenshot(page(), store === 'sqlite' ? name : `clickhouse-${name}`);
  const open = async (hash: string): Promise<void> => {
    await page().goto(`${collector.url}/${hash}`);
  };

  afterAll(async () => {
    await telemetry?.shutdown();
    await collector?.close();
    await clickHouse?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  // Generous per-test budget: the machine this runs on may be shared and heavily loaded.
  describe.skipIf(skip)(
    `trace explorer on ${store} (needs /usr/bin/chromium${store === 'clickhouse' ? ' and clickhouse-server' : ''})`,
    { timeout: 90_000 },
    () => {
      it('tells a newcomer how to send data while the collector is empty', async () => {
        await open('#/sessions');
        const empty = page().locator('.empty');
        await empty.waitFor();
        expect(await empty.textContent()).toContain('node --require @agentrt/instrument app.js');
        expect(await empty.textContent()).toContain(`OTEL_EXPORTER_OTLP_ENDPOINT=${collector.url}`);
        await page().locator('[data-testid=live-status].open').waitFor();
        await shot('01-empty-state');
      });

      it('lists the session and reads it as a conversation, prompt then answer per trace', async () => {
        const now = Date.now();
        traceIds.push(
          sendWeatherTurn(telemetry, { sessionId: SESSION, city: 'Paris', startMs: now - 60_000 }),
        );
        traceIds.push(
          sendWeatherTurn(telemetry, { sessionId: SESSION, city: 'Oslo', startMs: now - 30_000 }),
        );
        await telemetry.flush();
        await until(
          () => getJson<{ session: { traceCount: number; spanCount: number } }>(`/api/sessions/${SESSION}`),
          (r) => r.session.traceCount === 2 && r.session.spanCount === 8,
          'the session',
        );
        await until(
          () => fetch(`${collector.url}/api/traces/${traceIds[0]}`).then((r) => r.text()),
          (body) => body.includes(weatherLogLine('Paris')),
          "the tool's log record",
        );
        // The open page refreshes by itself from the live stream.
        const row = page().locator('[data-testid=sessions-table] tbody tr', { hasText: SESSION });
        await row.waitFor();
        const text = await row.innerText();
        expect(text).toContain('weather-agent');
        // 2 traces × (300 in, 40 out): the agent spans' aggregated usage is not added again.
        expect(text).toContain('↑600');
        expect(text).toContain('↓80');
        await shot('02-sessions');

        await page().keyboard.press('j');
        await page().keyboard.press('Enter');
        await page().waitForURL(/#\/sessions\/sess-weather-ui-1$/);
        const turns = page().locator('[data-testid=conversation] .turn');
        await poll(() => turns.count()).toBe(2);
        expect(await turns.nth(0).locator('.bubble.user').innerText()).toContain(promptOf('Paris'));
        expect(await turns.nth(0).locator('.bubble.assistant').innerText()).toContain(answerOf('Paris'));
        expect(await turns.nth(1).locator('.bubble.user').innerText()).toContain(promptOf('Oslo'));
        expect(await turns.nth(1).textContent()).toContain('get_weather');
        await shot('03-session-conversation');
      });

      it('opens the trace as a waterfall in start order, to scale, with the critical path', async () => {
        await page().locator('[data-testid=conversation] .turn').nth(0).locator('.turn-meta a').click();
        await page().waitForURL(new RegExp(`#/traces/${traceIds[0]}`));
        const rows = page().locator('[data-testid=waterfall-row]');
        await poll(() => rows.count()).toBe(4);
        const names = await rows.locator('.wf-name').allInnerTexts();
        expect(names).toEqual([
          'invoke_agent weather',
          `chat ${MODEL}`,
          'execute_tool get_weather',
          `chat ${MODEL}`,
        ]);
        expect(await rows.locator('.wf-duration').allInnerTexts()).toEqual([
          '1.4 s',
          '600 ms',
          '200 ms',
          '400 ms',
        ]);
        expect(await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-kind')))).toEqual([
          'invoke_agent',
          'chat',
          'execute_tool',
          'chat',
        ]);
        // Bars are to scale: width and offset relative to the root match the span timings.
        const boxes = await rows.locator('.wf-bar').evaluateAll((els) =>
          els.map((e) => {
            const r = e.getBoundingClientRect();
            return { left: r.left, width: r.width };
          }),
        );
        const root = boxes[0]!;
        const layout = [TURN_LAYOUT.agent, TURN_LAYOUT.chat1, TURN_LAYOUT.tool, TURN_LAYOUT.chat2];
        boxes.forEach((b, i) => {
          const [start, end] = layout[i]!;
          expect(b.width / root.width).toBeCloseTo((end - start) / 1400, 1);
          expect((b.left - root.left) / root.width).toBeCloseTo(start / 1400, 1);
        });
        // Every span here is on the critical path (a sequential agent loop).
        expect(await page().locator('.wf-row.critical').count()).toBe(4);
        expect(await page().locator('.summary-cards').innerText()).toContain('↑300');
        await shot('04-trace-waterfall');

        // Collapsible: the root's caret hides its three children; the keyboard opens them again.
        await rows.nth(0).locator('.caret').click();
        await poll(() => rows.count()).toBe(1);
        await page().keyboard.press('ArrowRight');
        await poll(() => rows.count()).toBe(4);
      });

      it('shows a chat span as messages and a tool span as formatted JSON', async () => {
        const rows = page().locator('[data-testid=waterfall-row]');
        await rows.nth(3).click();
        const panel = page().locator('.span-panel');
        await panel.waitFor();
        await poll(() => panel.locator('[data-testid=span-duration]').innerText()).toBe('400 ms');
        const messages = panel.locator('.msg');
        await poll(() => messages.count()).toBe(4);
        expect(await messages.evaluateAll((els) => els.map((e) => e.getAttribute('data-role')))).toEqual([
          'user',
          'assistant',
          'tool',
          'assistant',
        ]);
        expect(await messages.nth(0).innerText()).toContain(promptOf('Paris'));
        expect(await messages.nth(1).innerText()).toContain('get_weather');
        expect(await messages.nth(2).innerText()).toContain('"temperatureC": 18');
        expect(await messages.nth(3).innerText()).toContain(answerOf('Paris'));
        await poll(() => panel.locator('.facts').innerText()).toMatch(/↑180\s+↓22/);
        expect(page().url()).toMatch(/\?span=[0-9a-f]{16}$/);
        await shot('05-chat-span');

        await rows.nth(2).click();
        const tool = page().locator('.span-panel .tool-call');
        await tool.waitFor();
        expect(await tool.innerText()).toContain('"city": "Paris"');
        expect(await tool.innerText()).toContain('"condition": "sunny"');
        // The tool's log record, exported by the logs SDK, is joined to its span.
        const logs = page().locator('.span-panel details.section', { hasText: 'Log records' });
        await poll(() => logs.innerText()).toContain(weatherLogLine('Paris'));
        await poll(() => logs.locator('.sev').innerText()).toBe('INFO');
        // The agent span reports its children's usage: shown, but not counted twice.
        await rows.nth(0).click();
        await poll(() => page().locator('.span-panel .facts').innerText()).toContain('not double-counted');
      });

      queryPageTests({ page, collectorUrl: () => collector.url, shot });

      it('compares two traces side by side', async () => {
        await open(`#/compare?a=${traceIds[0]}&b=${traceIds[1]}`);
        const table = page().locator('[data-testid=compare-table]');
        await table.waitFor();
        const text = await table.innerText();
        expect(text).toMatch(/model time \(chat spans\)\s+1 s\s+1 s/);
        expect(text).toMatch(/tool calls\s+1\s+1/);
        expect(await page().locator('[data-testid=steps-table] tbody tr').count()).toBe(4);
        await shot('11-compare');
      });

      it('shows a live span the moment it arrives, with its trace marked in progress', async () => {
        await open('#/live');
        await page().locator('[data-testid=live-status].open').waitFor();
        const { tracer } = telemetry;
        const root = tracer.startSpan('invoke_agent weather', {
          attributes: { 'gen_ai.operation.name': 'invoke_agent', 'session.id': 'sess-live' },
        });
        const step = tracer.startSpan(
          `chat ${MODEL}`,
          { attributes: { 'gen_ai.operation.name': 'chat', 'session.id': 'sess-live' } },
          otelTrace.setSpan(context.active(), root),
        );
        step.end();
        await telemetry.flush();
        const traceId = root.spanContext().traceId;
        const card = page().locator(`.live-trace[data-trace-id="${traceId}"]`);
        await card.waitFor();
        expect(await card.getAttribute('class')).toContain('in-progress');
        expect(await card.innerText()).toContain(`chat ${MODEL}`);
        expect(await card.innerText()).toContain('in progress');
        await shot('12-live-in-progress');

        root.end();
        await telemetry.flush();
        await poll(() => card.getAttribute('class')).not.toContain('in-progress');
        expect(await card.locator('.live-head a').innerText()).toBe('invoke_agent weather');
        await shot('13-live-done');
      });

      it('renders hostile span content as text, never as markup', async () => {
        const hostile = '<img src=x onerror="window.__pwned=1">';
        const span = telemetry.tracer.startSpan(hostile, {
          attributes: {
            'gen_ai.operation.name': 'chat',
            'gen_ai.input.messages': JSON.stringify([
              { role: 'user', parts: [{ type: 'text', content: hostile }] },
            ]),
            '<script>x</script>': hostile,
          },
        });
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'model refused' });
        span.end();
        await telemetry.flush();
        const traceId = span.spanContext().traceId;
        await until(
          () => getJson<unknown>(`/api/traces/${traceId}`),
          () => true,
          'the hostile trace',
        );
        await open(`#/traces/${traceId}?span=${span.spanContext().spanId}`);
        const panel = page().locator('.span-panel');
        await panel.waitFor();
        expect(await page().locator('.wf-name').first().innerText()).toBe(hostile);
        expect(await panel.locator('.msg').first().innerText()).toContain(hostile);
        expect(await page().locator('.wf-row.error').count()).toBe(1);
        expect(await panel.locator('.facts').innerText()).toContain('error — model refused');
        expect(await page().locator('main img').count()).toBe(0);
        expect(await page().locator('main script').count()).toBe(0);
        expect(await page().evaluate('window.__pwned')).toBeUndefined();
      });

      it('filters the trace list and switches to the dark theme', async () => {
        await open('#/traces');
        const rows = page().locator('[data-testid=traces-table] tbody tr');
        await poll(() => rows.count()).toBe(4);
        // Filters live in the URL: the status select narrows the list to the one failed trace.
        await page().locator('.filters select').nth(1).selectOption('error');
        await page().waitForURL(/#\/traces\?status=error$/);
        await poll(() => rows.count()).toBe(1);
        expect(await rows.first().innerText()).toContain('1 error');
        await open('#/traces?minDurationMs=30000');
        await page().locator('.state', { hasText: 'No trace matches' }).waitFor();
        await open('#/traces');
        await poll(() => rows.count()).toBe(4);
        await page().locator('[data-testid=theme-toggle]').click();
        await poll(() => page().locator('html').getAttribute('data-theme')).toBe('dark');
        await shot('14-traces-dark');
        await open(`#/traces/${traceIds[1]}?span=`);
        await page().locator('[data-testid=waterfall-row]').first().waitFor();
        await page().locator('[data-testid=waterfall-row]').nth(1).click();
        await page().locator('.span-panel').waitFor();
        await shot('15-trace-dark');
      });
    },
  );
}
