/**
 * The trace view's Replay button in Chromium, against a real runtime host and collector: an
 * invocation sent with the AWS SDK client is replayed from its trace page; the compare view opens
 * on the pair, and the new trace's InvokeAgentRuntime span (same session, same payload) links to
 * the original. A trace with no runtime call says why it cannot be replayed.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type RuntimeStack,
  invocationSpanOf,
  sendAgentOnlyTrace,
  startRuntimeStack,
} from '../observability/runtime-stack.js';
import { buildUiIfStale, hasChromium, usePage } from './browser.js';

const SESSION = `ui-replay-session-${'0'.repeat(20)}`;
let stack: RuntimeStack;

beforeAll(async () => {
  if (!hasChromium) return;
  buildUiIfStale();
  stack = await startRuntimeStack({
    name: 'ui_replay',
    runtime: (collector) => ({ captureRequests: true, allowedOrigins: [collector.url] }),
  });
}, 120_000);

const page = usePage('replay');

beforeAll(async () => {
  if (!hasChromium) return;
  // The runtime host the Inspector was pointed at is the one Replay sends to.
  await page().goto(stack.collector.url);
  await page().evaluate(
    `localStorage.setItem('agentrt.inspector.host', ${JSON.stringify(stack.runtime.url)})`,
  );
});

afterAll(async () => {
  await stack?.close();
}, 60_000);

describe.runIf(hasChromium)('Replay in the trace view', { timeout: 90_000 }, () => {
  it('sends the invocation again and opens the compare of the pair', async () => {
    const original = randomBytes(16).toString('hex');
    const payload = JSON.stringify({ prompt: 'Weather in Boston?' });
    const first = await stack.invoke(payload, SESSION, {
      traceParent: `00-${original}-${randomBytes(8).toString('hex')}-01`,
    });
    expect(first.statusCode).toBe(200);
    const originalSpan = await invocationSpanOf(stack.collector.url, original);
    await page().goto(`${stack.collector.url}/#/traces/${original}`);
    await page().locator('[data-testid=replay]').click();
    await page().waitForURL(new RegExp(`#/compare\\?a=${original}&b=[0-9a-f]{32}$`), { timeout: 30_000 });
    const replayed = /b=([0-9a-f]{32})$/.exec(page().url())![1]!;
    const again = await invocationSpanOf(stack.collector.url, replayed);
    expect(again.attributes['session.id']).toBe(SESSION);
    expect(again.attributes['agentrt.request.payload']).toBe(payload);
    expect(again.links).toEqual([
      expect.objectContaining({ traceId: original, spanId: originalSpan.spanId }),
    ]);
  });

  it('says why a trace without a runtime call cannot be replayed', async () => {
    const plain = await sendAgentOnlyTrace(stack.collector.url);
    await page().goto(`${stack.collector.url}/#/traces/${plain}`);
    await page().locator('[data-testid=replay]').click();
    await expect
      .poll(() => page().locator('[data-testid=replay-error]').textContent(), { timeout: 10_000 })
      .toContain(`trace ${plain} has no InvokeAgentRuntime span`);
  });
});
