/**
 * The Inspector against an AG-UI runtime on a runtime host that requires an API key
 * (AGENTRT_API_KEYS), in headless Chromium: without credentials the host refuses and the page says
 * so; with the key typed in the credentials box (kept in this tab's sessionStorage, not in
 * localStorage) the runtime list loads and a chat with the AG-UI weather agent (examples/agui-agent,
 * events encoded by the official @ag-ui/encoder) streams its TEXT_MESSAGE_CONTENT events into the
 * answer, a second turn carrying the conversation, the turn's spans beside, and the trace page's
 * Replay sends the turn again with the same credentials. The official AG-UI
 * client (@ag-ui/client HttpAgent) runs against the same runtime too.
 */
import { HttpAgent } from '@ag-ui/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RuntimeStack } from '../observability/runtime-stack.js';
import { type InspectorStack, startInspectorStack } from './inspector-stack.js';
import { buildUiIfStale, hasChromium, usePage, screenshot } from './browser.js';

const API_KEY = 'inspector-test-key-1';
let env: InspectorStack;
let stack: RuntimeStack;

beforeAll(async () => {
  env = await startInspectorStack({
    name: 'iagui',
    example: 'agui-agent',
    serverProtocol: 'AGUI',
    service: 'agui-agent',
    // The stack's own AWS SDK clients sign with the access key id AKIDLOCAL.
    // Requests recorded on their spans (as agentrt dev does): the trace page's Replay re-sends them.
    runtime: { apiKeys: ['AKIDLOCAL', API_KEY], captureRequests: true },
  });
  stack = env.stack;
  if (!hasChromium) return;
  buildUiIfStale();
}, 120_000);

const page = usePage('inspector-agui');

afterAll(async () => {
  await env?.close();
}, 60_000);

const invocationsUrl = () =>
  `${stack.runtime.url}/runtimes/${encodeURIComponent(stack.arn)}/invocations?qualifier=DEFAULT`;

describe('an AG-UI runtime', { timeout: 120_000 }, () => {
  it('streams a run to the official AG-UI client (HttpAgent), and refuses it without the API key', async () => {
    const texts: string[] = [];
    const types: string[] = [];
    const agent = new HttpAgent({
      url: invocationsUrl(),
      headers: {
        'x-api-key': API_KEY,
        'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': `agui-official-client-${'0'.repeat(20)}`,
      },
      threadId: 'thread-1',
      initialMessages: [{ id: 'm1', role: 'user', content: 'What is the weather in Seattle?' }],
    });
    await agent.runAgent(
      { runId: 'run-1' },
      {
        onEvent: ({ event }) => void types.push(event.type),
        onTextMessageContentEvent: ({ event }) => void texts.push(event.delta),
      },
    );
    expect(types[0]).toBe('RUN_STARTED');
    expect(types.at(-1)).toBe('RUN_FINISHED');
    expect(texts.length).toBeGreaterThan(1);
    expect(texts.join('')).toMatch(/Seattle|°F|forecast/i);
    expect(agent.messages.at(-1)).toMatchObject({ role: 'assistant', content: texts.join('') });

    const refused = await fetch(invocationsUrl(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: '{}',
    });
    expect([401, 403]).toContain(refused.status);
  });

  it.skipIf(!hasChromium)(
    'the Inspector: refused without credentials, then chats over AG-UI with the API key from the credentials box',
    async () => {
      await page().goto(`${stack.collector.url}/#/inspector?host=${encodeURIComponent(stack.runtime.url)}`);
      await expect
        .poll(() => page().locator('.error-box').first().textContent(), { timeout: 30_000 })
        .toMatch(/40[13]/);
      await page().locator('[data-testid=credentials] summary').click();
      await page().locator('[data-testid=auth-api-key]').fill(API_KEY);
      await page().locator('[data-testid=auth-save]').click();
      await expect
        .poll(() => page().locator('[data-testid=runtime-select]').textContent(), { timeout: 30_000 })
        .toContain('iagui (AGUI, READY)');
      // Kept for this tab only, and never in clear in localStorage unless asked.
      const stored = (await page().evaluate(
        `[Object.keys(sessionStorage).filter((k) => k.startsWith('agentrt.inspector.auth')).map((k) => sessionStorage.getItem(k)), Object.keys(localStorage).filter((k) => k.startsWith('agentrt.inspector.auth'))]`,
      )) as [string[], string[]];
      expect(stored).toEqual([[JSON.stringify({ apiKey: API_KEY })], []]);

      const shown: string[] = [];
      await page().locator('[data-testid=chat-input]').fill('What is the weather in Seattle?');
      await page().locator('[data-testid=chat-input-send]').click();
      const answer = page().locator('[data-testid=msg-agent]').first();
      await expect
        .poll(
          async () => {
            const t = (await answer.textContent()) ?? '';
            if (t && t !== shown.at(-1)) shown.push(t);
            return page().locator('[data-testid=chat-input-send]').isEnabled();
          },
          { timeout: 60_000, interval: 20 },
        )
        .toBe(true);
      expect(await answer.textContent()).toMatch(/Seattle|°F|forecast/i);
      expect(shown.length, `texts seen while it streamed: ${JSON.stringify(shown)}`).toBeGreaterThan(1);
      await expect
        .poll(() => page().locator('[data-testid=turn-span]').allTextContents(), { timeout: 30_000 })
        .toEqual(expect.arrayContaining([expect.stringContaining('InvokeAgentRuntime')]));

      // The credentials survive a reload of the tab: a second turn, the conversation sent along.
      await page().reload();
      await expect
        .poll(() => page().locator('[data-testid=runtime-select]').textContent(), { timeout: 30_000 })
        .toContain('iagui');
      await page().locator('[data-testid=chat-input]').fill('And tomorrow?');
      await page().locator('[data-testid=chat-input-send]').click();
      await expect.poll(() => page().locator('[data-testid=msg-agent]').count(), { timeout: 60_000 }).toBe(2);
      await expect
        .poll(() => page().locator('[data-testid=chat-input-send]').isEnabled(), { timeout: 60_000 })
        .toBe(true);
      expect(await page().locator('[data-testid=msg-error]').count()).toBe(0);
      await screenshot(page(), 'inspector-agui');

      // Replay from the turn's trace page: sent to the host the Inspector connected to, with the
      // credentials it holds for that host (without them the host refuses the replay).
      await page().locator('[data-testid=runtime-host]').fill(stack.runtime.url);
      await page().getByRole('button', { name: 'Connect' }).click();
      const trace = await page().locator('[data-testid=full-trace]').getAttribute('href');
      await page().goto(`${stack.collector.url}/${trace!}`);
      await page().locator('[data-testid=replay]').click();
      await page().waitForURL(/#\/compare\?a=[0-9a-f]{32}&b=[0-9a-f]{32}$/, { timeout: 30_000 });
    },
  );
});
