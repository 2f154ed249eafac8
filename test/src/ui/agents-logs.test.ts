// The Agents, Logs and cost views in Chromium, with data from a running collector + runtime + the
// instrumented sdk-agent invoked through the official AWS SDK.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Collector, TraceResponse } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '@agentrt/cli';
import { type RuntimeStack, startRuntimeStack } from '../observability/runtime-stack.js';
import { REPO_ROOT, buildUiIfStale, hasChromium, usePage, screenshot } from './browser.js';

let stack: RuntimeStack;
let collector: Collector;
const SESSION = `ui-agents-session-${'0'.repeat(24)}`;
// The offline model gets a price (AGENTRT_PRICES_FILE), so every cost column shows dollars.
const PRICE = { inputPerMTok: 1000, outputPerMTok: 2000 };
const priceDir = mkdtempSync(join(tmpdir(), 'agentrt-ui-prices-'));
const usd = (t: { input: number; output: number }) =>
  `$${((t.input * PRICE.inputPerMTok + t.output * PRICE.outputPerMTok) / 1e6).toFixed(2)}`;

const invoke = async (payload: string, session = SESSION) => {
  await stack.invoke(payload, session);
};

function poll<T>(read: () => Promise<T>) {
  return expect.poll(read, { timeout: 30_000, interval: 200 });
}

beforeAll(async () => {
  if (!hasChromium) return;
  buildUiIfStale();
  const pricesFile = join(priceDir, 'prices.json');
  writeFileSync(pricesFile, JSON.stringify({ 'agentrt-offline-weather': PRICE }));
  stack = await startRuntimeStack({ name: 'ui_agent', collector: { pricesFile } });
  collector = stack.collector;
  await invoke(JSON.stringify({ prompt: 'What is the weather like?' }));
  await invoke(JSON.stringify({ prompt: 'hello again' }));
  await invoke('{not json').catch(() => undefined); // one user error (the agent answers 400 → 424)
}, 120_000);

const page = usePage('agents-logs', { height: 1000 });

afterAll(async () => {
  await stack?.close();
  rmSync(priceDir, { recursive: true, force: true });
}, 60_000);

describe.skipIf(!hasChromium)(
  'Agents, Logs and cost views (needs /usr/bin/chromium)',
  { timeout: 90_000 },
  () => {
    it('Agents is the first view: invocations, latency percentiles, error rate, sessions, charts, tokens and cost', async () => {
      // Wait until the runtime's metrics of all three calls are in.
      await poll(async () => {
        const res = await fetch(
          `${collector.url}/api/metrics/query?name=Invocations&since=1h&stepMs=3600000&where=Operation=InvokeAgentRuntime`,
        );
        if (!res.ok) return 0;
        const body = (await res.json()) as { series: { points: [number, number | null][] }[] };
        return body.series.flatMap((s) => s.points).reduce((n, [, v]) => n + (v ?? 0), 0);
      }).toBe(3);
      await page().goto(`${collector.url}/`);
      expect(await page().locator('nav.tabs a').first().textContent()).toBe('Agents');
      const row = page().locator('[data-testid=agent-row]').filter({ hasText: 'ui_agent::DEFAULT' });
      await row.waitFor();
      const cells = await row.locator('td').allTextContents();
      expect(cells[1]).toBe('3'); // invocations
      for (const p of cells.slice(2, 5)) expect(p).toMatch(/\d/); // p50, p95, p99
      expect(cells[5]).toBe('33.3%'); // 1 user error in 3 calls
      expect(cells[7]).toBe('1'); // sessions started
      // Two charts with axes (tick labels) and a legend naming the runtime.
      // Invocations, latency and errors over time (+ tokens by model): titled axes, legends.
      const charts = page().locator('[data-testid=stats-chart]');
      await poll(() => charts.count()).toBeGreaterThanOrEqual(3);
      expect(await charts.first().locator('text.axis').count()).toBeGreaterThan(3);
      expect(await charts.first().locator('figcaption').textContent()).toContain('ui_agent::DEFAULT');
      expect(await page().locator('[data-testid=y-title]').allTextContents()).toEqual(
        expect.arrayContaining(['invocations (calls)', 'latency p95 (ms)', 'errors (calls)']),
      );
      expect(await page().locator('h2').allTextContents()).toEqual(
        expect.arrayContaining([expect.stringMatching(/^Invocations per .*\(y: calls, x: time\)$/)]),
      );
      // Tokens of the model calls with their cost column (tokens × the price file's price).
      const tokenRow = page().locator('[data-testid=token-row]').first();
      await poll(async () => {
        await page().locator('button', { hasText: 'Refresh' }).click();
        return tokenRow.count();
      }).toBeGreaterThan(0);
      const tokenCells = await tokenRow.locator('td').allTextContents();
      expect(tokenCells[0]).toBe('sdk-agent');
      expect(Number(tokenCells[3]!.replace(/\D/g, ''))).toBeGreaterThan(0);
      expect(tokenCells[5]).toBe(
        usd({
          input: Number(tokenCells[3]!.replace(/\D/g, '')),
          output: Number(tokenCells[4]!.replace(/\D/g, '')),
        }),
      );
      await page().locator('[data-testid=range-15m]').click();
      await row.waitFor();
      await screenshot(page(), 'agents');
    });

    it('the session list and trace list name the hosted agent; the control plane stays out of the trace list', async () => {
      await page().goto(`${collector.url}/#/sessions`);
      const session = page().locator('tr', { has: page().locator(`a:text-is("${SESSION}")`) });
      await session.waitFor();
      expect(await session.locator('[data-testid=session-agents]').textContent()).toBe('ui_agent');
      await page().goto(`${collector.url}/#/traces`);
      const agents = page().locator('[data-testid=traces-table] [data-testid=trace-agent]');
      await poll(() => agents.count()).toBeGreaterThan(0);
      expect(new Set(await agents.allTextContents())).toEqual(new Set(['ui_agent']));
      // Creating the runtime (CreateAgentRuntime, GetAgentRuntime) is housekeeping: listed as noise only.
      const roots = await page()
        .locator('[data-testid=traces-table] tbody tr td:nth-child(2) a')
        .allTextContents();
      expect(roots.filter((r) => /AgentRuntime$/.test(r) && r !== 'InvokeAgentRuntime')).toEqual([]);
      await screenshot(page(), 'traces-hosted-agent');
    });

    it('every chart point links to the traces behind it: that runtime, that time bucket, errors only on the error chart', async () => {
      await page().goto(`${collector.url}/#/agents`);
      const errorChart = page().locator('[data-testid=stats-chart]', {
        has: page().locator('[data-testid=y-title]', { hasText: 'errors (calls)' }),
      });
      await errorChart.waitFor();
      // The bucket holding the refused call.
      const failing = errorChart.locator('[data-testid=chart-point]').filter({
        has: page().locator('title', { hasText: /: [1-9]\d*$/ }),
      });
      await poll(() => failing.count()).toBeGreaterThan(0);
      await failing.first().click();
      await page().waitForURL(/#\/traces\?/);
      const url = new URL(page().url().replace('#/traces', 'traces'));
      expect(url.searchParams.get('status')).toBe('error');
      expect(url.searchParams.get('service')).toBe('agentrt-runtime');
      expect(Number(url.searchParams.get('endMs')) - Number(url.searchParams.get('startMs'))).toBeGreaterThan(
        0,
      );
      await page().locator('[data-testid=time-window]').waitFor();
      const listed = page().locator('[data-testid=traces-table] tbody tr');
      await poll(() => listed.count()).toBe(1);
      expect(await listed.first().locator('.pill-error').count()).toBe(1);
      // Listed under the hosted agent it called, not the hosting runtime.
      expect(await listed.first().locator('[data-testid=trace-agent]').textContent()).toBe('ui_agent');
      // An invocations point lists the bucket's calls, ok and failed alike.
      await page().goto(`${collector.url}/#/agents`);
      const invocationsChart = page().locator('[data-testid=stats-chart]', {
        has: page().locator('[data-testid=y-title]', { hasText: 'invocations (calls)' }),
      });
      const points = invocationsChart.locator('[data-testid=chart-point]').filter({
        has: page().locator('title', { hasText: /: [1-9]\d*$/ }),
      });
      await poll(() => points.count()).toBeGreaterThan(0);
      const hrefs = await points.evaluateAll((els) => els.map((e) => e.getAttribute('href')!));
      for (const href of hrefs) {
        await page().goto(`${collector.url}/${href}`);
        await page().locator('[data-testid=time-window]').waitFor();
        // Each point with calls lists the runtime's traces of its bucket.
        await poll(() => listed.count()).toBeGreaterThan(0);
        for (const agent of await listed.locator('[data-testid=trace-agent]').allTextContents())
          expect(agent).toBe('ui_agent');
      }
    });

    it('the trace list hides probes and agentrt doctor round trips until "show probes & internal" is on', async () => {
      // A health probe as any instrumented service would report it, and a real `agentrt doctor` run.
      const probe = {
        resourceSpans: [
          {
            resource: { attributes: [{ key: 'service.name', value: { stringValue: 'sdk-agent' } }] },
            scopeSpans: [
              {
                scope: { name: 'probe-test' },
                spans: [
                  {
                    traceId: 'ab'.repeat(16),
                    spanId: 'cd'.repeat(8),
                    name: 'GET /healthz',
                    kind: 2,
                    startTimeUnixNano: String(BigInt(Date.now()) * 1_000_000n),
                    endTimeUnixNano: String(BigInt(Date.now() + 1) * 1_000_000n),
                    attributes: [
                      { key: 'http.request.method', value: { stringValue: 'GET' } },
                      { key: 'url.path', value: { stringValue: '/healthz' } },
                    ],
                  },
                ],
              },
            ],
          },
        ],
      };
      const sent = await fetch(`${collector.url}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(probe),
      });
      expect(sent.status).toBe(200);
      let doctorOut = '';
      // a generous deadline: the round trip is what this test needs, not its speed on a loaded machine
      await main(['doctor', '--json', '--collector-url', collector.url, '--timeout-ms', '30000'], {
        stdout: (t) => (doctorOut += t),
        stderr: (t) => (doctorOut += t),
        env: {},
        cwd: REPO_ROOT,
      });
      expect(doctorOut).toMatch(/test span stored and queried back/);

      await page().goto(`${collector.url}/#/traces`);
      const names = page().locator('[data-testid=traces-table] tbody tr td:nth-child(2) a');
      await poll(() => names.count()).toBeGreaterThan(0);
      const defaults = await names.allTextContents();
      expect(defaults).not.toContain('GET /healthz');
      expect(defaults).not.toContain('agentrt doctor round trip');
      await page().locator('[data-testid=show-noise]').check();
      await page().waitForURL(/noise=include/);
      await poll(async () => (await names.allTextContents()).sort()).toEqual(
        expect.arrayContaining(['GET /healthz', 'agentrt doctor round trip']),
      );
      expect(await page().locator('[data-testid=noise-pill]').allTextContents()).toEqual(
        expect.arrayContaining(['probe', 'synthetic']),
      );
      await screenshot(page(), 'traces-with-noise');
      await page().locator('[data-testid=show-noise]').uncheck();
      await poll(async () => (await names.allTextContents()).includes('GET /healthz')).toBe(false);
    });

    it('cost per span, trace and session: tokens × the price table, where tokens are shown', async () => {
      const session = (await (await fetch(`${collector.url}/api/sessions/${SESSION}`)).json()) as {
        session: {
          tokens: { input: number; output: number };
          tokensByModel: Record<string, { input: number; output: number }>;
        };
        traces: { traceId: string; tokens: { input: number; output: number } }[];
      };
      expect(Object.keys(session.session.tokensByModel)).toEqual(['agentrt-offline-weather-1']);
      expect(session.session.tokensByModel['agentrt-offline-weather-1']).toMatchObject(
        session.session.tokens,
      );
      // Session list and session view.
      await page().goto(`${collector.url}/#/sessions`);
      const sessionRow = page().locator('[data-testid=sessions-table] tbody tr', { hasText: SESSION });
      await poll(() => sessionRow.locator('[data-testid=cost]').textContent()).toBe(
        usd(session.session.tokens),
      );
      await page().goto(`${collector.url}/#/sessions/${SESSION}`);
      await poll(() => page().locator('.summary-cards [data-testid=cost]').textContent()).toBe(
        usd(session.session.tokens),
      );
      // The trace list, the trace header and a model call's span panel.
      const priced = session.traces.find((t) => t.tokens.input > 0)!;
      await page().goto(`${collector.url}/#/traces?service=agentrt-runtime`);
      const traceRow = page().locator(`[data-testid=traces-table] tr[data-trace-id="${priced.traceId}"]`);
      await poll(() => traceRow.locator('[data-testid=cost]').textContent()).toBe(usd(priced.tokens));
      await traceRow.locator('td:nth-child(2) a').click();
      await poll(() => page().locator('.summary-cards [data-testid=cost]').textContent()).toBe(
        usd(priced.tokens),
      );
      const trace = (await (
        await fetch(`${collector.url}/api/traces/${priced.traceId}`)
      ).json()) as TraceResponse;
      const chats: { spanId: string; tokens: { input: number; output: number } }[] = [];
      const walk = (nodes: TraceResponse['roots']): void => {
        for (const n of nodes) {
          const a = n.span.attributes;
          if (a['gen_ai.operation.name'] === 'chat')
            chats.push({
              spanId: n.span.spanId,
              tokens: {
                input: Number(a['gen_ai.usage.input_tokens']),
                output: Number(a['gen_ai.usage.output_tokens']),
              },
            });
          walk(n.children);
        }
      };
      walk(trace.roots);
      expect(chats.length).toBeGreaterThan(0);
      await page().goto(`${collector.url}/#/traces/${priced.traceId}?span=${chats[0]!.spanId}`);
      await poll(() => page().locator('[data-testid=span-cost]').textContent()).toBe(usd(chats[0]!.tokens));
      await screenshot(page(), 'span-cost');
    });

    it('Logs: each line the agent wrote once, with its severity, newest first', async () => {
      await page().goto(`${collector.url}/#/logs?sessionId=${SESSION}`);
      const rows = page().locator('[data-testid=log-row]');
      // The agent's own records (exported by it) and the runtime's about the session.
      await poll(() => rows.locator('td.log-body', { hasText: /^listening$/ }).count()).toBe(1);
      const bodies = await rows.locator('td.log-body').allTextContents();
      // Once: not again as the runtime's capture of the worker's stdout, raw JSON at INFO.
      expect(bodies.filter((b) => b.startsWith('{'))).toEqual([]);
      expect(bodies.filter((b) => b.startsWith('model provider offline'))).toHaveLength(1);
      const offline = rows.filter({ hasText: 'model provider offline' });
      expect(await offline.locator('td.sev').textContent()).toBe('WARN');
      expect(await offline.getAttribute('class')).toContain('sev-warn');
      // Newest first by the records' own time.
      const times = await rows.locator('td:first-child').allTextContents();
      expect(times).toEqual([...times].sort().reverse());
      await screenshot(page(), 'logs-session');
    });

    it('Logs: filters, severity colours, live tail, links to the trace; a span panel shows its logs', async () => {
      await page().goto(`${collector.url}/#/logs?service=agentrt-runtime`);
      const rows = page().locator('[data-testid=log-row]');
      await poll(() => rows.count()).toBeGreaterThan(0);
      // The refused call logged a warning: coloured as one.
      await page().locator('select[name=severity]').selectOption('warn');
      // The filtered answer: warnings only (the rows shown before it answered included info rows).
      await poll(async () => [
        (await page().locator('tr.sev-warn').count()) > 0,
        await page().locator('tr.sev-info').count(),
      ]).toEqual([true, 0]);
      expect(page().url()).toContain('severity=warn'); // the filters make a shareable link
      await page().locator('select[name=severity]').selectOption('');
      // Live tail: a new session's records appear without a reload.
      const fresh = `ui-agents-tail-${'1'.repeat(26)}`;
      await invoke(JSON.stringify({ prompt: 'tail' }), fresh);
      await poll(() =>
        page().locator('[data-testid=log-row]', { hasText: 'session started' }).count(),
      ).toBeGreaterThan(1);
      await screenshot(page(), 'logs');
      // A record with a trace links to it; the runtime span's panel lists its log records.
      const linked = page().locator('[data-testid=log-row] td:nth-child(5) a').first();
      await linked.click();
      await page().waitForURL(/#\/traces\/[0-9a-f]{32}/);
      await page().getByText('Log records').first().waitFor();
      expect(await page().locator('text=Log records').count()).toBeGreaterThan(0);
      // …and the trace links back to all its logs, as the session does to its own.
      const traceId = /#\/traces\/([0-9a-f]{32})/.exec(page().url())![1]!;
      await page().locator('[data-testid=trace-logs]').click();
      await page().waitForURL(new RegExp(`#/logs\\?traceId=${traceId}`));
      await poll(() => rows.count()).toBeGreaterThan(0);
      expect(
        new Set(await rows.locator('td:nth-child(5) a').evaluateAll((as) => as.map((a) => a.title))),
      ).toEqual(new Set([traceId]));
      await page().goto(`${collector.url}/#/sessions/${fresh}`);
      await page().locator('[data-testid=session-logs]').click();
      await page().waitForURL(/#\/logs\?sessionId=/);
      await poll(() => rows.count()).toBeGreaterThan(0);
      expect(
        new Set(await rows.locator('td:nth-child(4) a').evaluateAll((as) => as.map((a) => a.title))),
      ).toEqual(new Set([fresh]));
    });
  },
);
