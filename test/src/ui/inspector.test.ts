/**
 * The Inspector in headless Chromium against the running stack: a collector, a runtime host that
 * lets the collector's page in (AGENTRT_RUNTIME_ALLOWED_ORIGINS) and the weather agent (sdk-agent,
 * offline model). The page calls the runtime's data plane itself: two sessions, streamed answers,
 * each turn's spans beside the chat, history kept across a reload.
 */
import type { SessionListResponse } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RuntimeStack } from '../observability/runtime-stack.js';
import { type InspectorStack, startInspectorStack } from './inspector-stack.js';
import { buildUiIfStale, hasChromium, usePage, screenshot } from './browser.js';

let env: InspectorStack;
let stack: RuntimeStack;

beforeAll(async () => {
  if (!hasChromium) return;
  buildUiIfStale();
  env = await startInspectorStack({ name: 'insp', service: 'sdk-agent' });
  ({ stack } = env);
}, 120_000);

const page = usePage('inspector');

afterAll(async () => {
  await env?.close();
}, 60_000);

const messages = (role: 'user' | 'agent') => page().locator(`[data-testid=msg-${role}]`);

/**
 * Sends a message and waits for the whole answer (the Send button comes back); returns the answer
 * and the texts it showed on the way (sampled every animation frame).
 */
async function say(text: string): Promise<{ answer: string; shown: string[] }> {
  const answers = await messages('agent').count();
  await page().locator('[data-testid=chat-input]').fill(text);
  // Runs in the page (a string: this workspace has no DOM types).
  await page().evaluate(`(() => {
    const shown = (window.shown = []);
    const sample = () => {
      const t = document.querySelectorAll('[data-testid=msg-agent]')[${answers}]?.textContent ?? '';
      if (t && t !== shown.at(-1)) shown.push(t);
      requestAnimationFrame(sample);
    };
    sample();
  })()`);
  await page().locator('[data-testid=chat-input-send]').click();
  await messages('agent').nth(answers).waitFor();
  await expect
    .poll(() => page().locator('[data-testid=chat-input-send]').isEnabled(), { timeout: 60_000 })
    .toBe(true);
  const answer = (await messages('agent').nth(answers).textContent()) ?? '';
  const shown = (await page().evaluate('window.shown')) as string[];
  return { answer, shown };
}

describe.skipIf(!hasChromium)('the Inspector (needs /usr/bin/chromium)', { timeout: 120_000 }, () => {
  it('chats over two sessions with streamed answers, the turn spans beside, history kept across a reload', async () => {
    await page().goto(`${stack.collector.url}/#/inspector?host=${encodeURIComponent(stack.runtime.url)}`);
    await expect
      .poll(() => page().locator('[data-testid=runtime-select]').textContent(), { timeout: 30_000 })
      .toContain('insp (HTTP, READY)');

    const { answer: first, shown } = await say('Forecast for ZIP 60601');
    // Streamed: the tool-phase preamble and each tool call showed before the forecast did.
    expect(first).toContain('Let me find the forecast office');
    expect(first).toContain('⚙ http_request');
    expect(first).toMatch(/forecast/i);
    expect(shown.filter((t) => t !== '…' && first.startsWith(t) && t !== first).length).toBeGreaterThan(1);
    const firstSession = (await page().locator('[data-testid=session-id]').textContent())!;
    // The turn's spans arrive beside the chat without a reload: the runtime's and the agent's.
    await expect
      .poll(() => page().locator('[data-testid=turn-span]').allTextContents(), { timeout: 30_000 })
      .toEqual(
        expect.arrayContaining([
          expect.stringContaining('InvokeAgentRuntime'),
          expect.stringContaining('chat'),
        ]),
      );
    const traceHref = await page().locator('[data-testid=full-trace]').getAttribute('href');
    expect(traceHref).toMatch(/^#\/traces\/[0-9a-f]{32}$/);

    await page().locator('[data-testid=new-session]').click();
    const secondSession = (await page().locator('[data-testid=session-id]').textContent())!;
    expect(secondSession).not.toBe(firstSession);
    expect(await messages('user').count()).toBe(0);
    await say('hello again');
    await page().locator('[data-testid=rename-session]').click();
    await page().locator('[data-testid=rename-input]').fill('greetings');
    await page().locator('[data-testid=rename-input]').press('Enter');

    // Switching keeps each history, and so does a reload of the page.
    const tabs = page().locator('[data-testid=session-tab]');
    await tabs.filter({ hasText: 'session 1' }).click();
    expect(await messages('user').allTextContents()).toEqual(['Forecast for ZIP 60601']);
    await page().reload();
    await expect.poll(() => tabs.allTextContents(), { timeout: 30_000 }).toEqual(['session 1', 'greetings']);
    expect(await messages('user').allTextContents()).toEqual(['Forecast for ZIP 60601']);
    expect(await messages('agent').first().textContent()).toBe(first);
    await tabs.filter({ hasText: 'greetings' }).click();
    expect(await messages('user').allTextContents()).toEqual(['hello again']);
    await screenshot(page(), 'inspector-chat');

    // Both went through the runtime's data plane as their own sessions.
    await expect
      .poll(async () => {
        const res = await fetch(`${stack.collector.url}/api/sessions`);
        return ((await res.json()) as SessionListResponse).sessions.map((s) => s.sessionId);
      })
      .toEqual(expect.arrayContaining([firstSession, secondSession]));
  });
});
