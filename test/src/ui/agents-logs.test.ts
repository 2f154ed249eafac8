// The Agents, Logs and cost views in Chromium, with data from a running collector + runtime + the
// instrumented sdk-agent invoked through the official AWS SDK.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BedrockAgentCoreClient, InvokeAgentRuntimeCommand } from '@aws-sdk/client-bedrock-agentcore';
import {
  BedrockAgentCoreControlClient,
  CreateAgentRuntimeCommand,
  GetAgentRuntimeCommand,
} from '@aws-sdk/client-bedrock-agentcore-control';
import { type Collector, createCollector } from '@agentrt/collector';
import { type RuntimeServer, createRuntimeServer } from '@agentrt/runtime';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, hasChromium, launchBrowser, screenshot } from './browser.js';

let dir: string;
let collector: Collector;
let runtime: RuntimeServer;
let control: BedrockAgentCoreControlClient;
let data: BedrockAgentCoreClient;
let browser: Browser;
let page: Page;
let arn: string;
const SESSION = `ui-agents-session-${'0'.repeat(24)}`;

const invoke = async (payload: string, session = SESSION) => {
  const out = await data.send(
    new InvokeAgentRuntimeCommand({
      agentRuntimeArn: arn,
      runtimeSessionId: session,
      contentType: 'application/json',
      payload: new TextEncoder().encode(payload),
    }),
  );
  await out.response!.transformToString();
};

function poll<T>(read: () => Promise<T>) {
  return expect.poll(read, { timeout: 30_000, interval: 200 });
}

beforeAll(async () => {
  if (!hasChromium) return;
  execFileSync(process.execPath, [join(REPO_ROOT, 'collector', 'ui', 'build.mjs'), '--if-stale'], {
    timeout: 60_000,
  });
  dir = mkdtempSync(join(tmpdir(), 'agentrt-ui-agents-'));
  collector = await createCollector({ dataDir: join(dir, 'collector'), port: 0, host: '127.0.0.1' });
  runtime = await createRuntimeServer({
    host: '127.0.0.1',
    port: 0,
    dataDir: join(dir, 'runtime'),
    otlpEndpoint: collector.url,
    instrumentWorkers: true,
    metricExportIntervalMs: 500,
    logSink: () => undefined,
  });
  const common = {
    endpoint: runtime.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' },
  };
  control = new BedrockAgentCoreControlClient(common);
  data = new BedrockAgentCoreClient({ ...common, maxAttempts: 1 });
  const created = await control.send(
    new CreateAgentRuntimeCommand({
      agentRuntimeName: 'ui_agent',
      agentRuntimeArtifact: {
        containerConfiguration: { containerUri: pathToFileURL(join(REPO_ROOT, 'examples/sdk-agent')).href },
      },
      roleArn: 'arn:aws:iam::123456789012:role/AgentRuntimeRole',
      networkConfiguration: { networkMode: 'PUBLIC' },
      environmentVariables: { AGENTRT_MODEL_PROVIDER: 'offline', OTEL_SERVICE_NAME: 'sdk-agent' },
    }),
  );
  arn = created.agentRuntimeArn!;
  for (let i = 0; i < 200; i++) {
    const got = await control.send(new GetAgentRuntimeCommand({ agentRuntimeId: created.agentRuntimeId! }));
    if (got.status === 'READY') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await invoke(JSON.stringify({ prompt: 'What is the weather like?' }));
  await invoke(JSON.stringify({ prompt: 'hello again' }));
  await invoke('{not json').catch(() => undefined); // one user error (the agent answers 400 → 424)
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1440, height: 1000 }, colorScheme: 'light' });
  page.setDefaultTimeout(30_000);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  control?.destroy();
  data?.destroy();
  await runtime?.close();
  await collector?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
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
      await page.goto(`${collector.url}/`);
      expect(await page.locator('nav.tabs a').first().textContent()).toBe('Agents');
      const row = page.locator('[data-testid=agent-row]').filter({ hasText: 'ui_agent::DEFAULT' });
      await row.waitFor();
      const cells = await row.locator('td').allTextContents();
      expect(cells[1]).toBe('3'); // invocations
      for (const p of cells.slice(2, 5)) expect(p).toMatch(/\d/); // p50, p95, p99
      expect(cells[5]).toBe('33.3%'); // 1 user error in 3 calls
      expect(cells[7]).toBe('1'); // sessions started
      // Two charts with axes (tick labels) and a legend naming the runtime.
      const charts = page.locator('[data-testid=stats-chart]');
      await poll(() => charts.count()).toBe(2);
      expect(await charts.first().locator('text.axis').count()).toBeGreaterThan(3);
      expect(await charts.first().locator('figcaption').textContent()).toContain('ui_agent::DEFAULT');
      expect(await page.locator('h2').allTextContents()).toEqual(
        expect.arrayContaining([expect.stringMatching(/^Invocations per .*\(y: calls, x: time\)$/)]),
      );
      // Tokens of the model calls with their cost column (the offline model has no price: "—").
      const tokenRow = page.locator('[data-testid=token-row]').first();
      await poll(async () => {
        await page.locator('button', { hasText: 'Refresh' }).click();
        return tokenRow.count();
      }).toBeGreaterThan(0);
      const tokenCells = await tokenRow.locator('td').allTextContents();
      expect(tokenCells[0]).toBe('sdk-agent');
      expect(Number(tokenCells[3]!.replace(/\D/g, ''))).toBeGreaterThan(0);
      expect(tokenCells[5]).toMatch(/^(—|\$[\d.]+)$/);
      await page.locator('[data-testid=range-15m]').click();
      await row.waitFor();
      await screenshot(page, 'agents');
    });

    it('Logs: filters, severity colours, live tail, links to the trace; a span panel shows its logs', async () => {
      await page.goto(`${collector.url}/#/logs?service=agentrt-runtime`);
      const rows = page.locator('[data-testid=log-row]');
      await poll(() => rows.count()).toBeGreaterThan(0);
      // The refused call logged a warning: coloured as one.
      await page.locator('select[name=severity]').selectOption('warn');
      // The filtered answer: warnings only (the rows shown before it answered included info rows).
      await poll(async () => [
        (await page.locator('tr.sev-warn').count()) > 0,
        await page.locator('tr.sev-info').count(),
      ]).toEqual([true, 0]);
      await page.locator('select[name=severity]').selectOption('');
      // Live tail: a new session's records appear without a reload.
      const fresh = `ui-agents-tail-${'1'.repeat(26)}`;
      await invoke(JSON.stringify({ prompt: 'tail' }), fresh);
      await poll(() =>
        page.locator('[data-testid=log-row]', { hasText: 'session started' }).count(),
      ).toBeGreaterThan(1);
      await screenshot(page, 'logs');
      // A record with a trace links to it; the runtime span's panel lists its log records.
      const linked = page.locator('[data-testid=log-row] td:nth-child(5) a').first();
      await linked.click();
      await page.waitForURL(/#\/traces\/[0-9a-f]{32}/);
      await page.getByText('Log records').first().waitFor();
      expect(await page.locator('text=Log records').count()).toBeGreaterThan(0);
    });
  },
);
