/**
 * The Inspector's MCP and A2A panels in headless Chromium against the running stack: the weather
 * MCP server (official MCP server SDK) and the weather A2A agent (official A2A server SDK) as
 * runtimes of one runtime host. A tool is called from the form its input schema builds; the A2A card
 * shows and a message streams; each call's spans show beside it.
 */
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { CreateAgentRuntimeCommand, GetAgentRuntimeCommand } from '@aws-sdk/client-bedrock-agentcore-control';
import type { WeatherApiFixture } from '@agentrt/example-models/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, type RuntimeStack, until } from '../observability/runtime-stack.js';
import { type InspectorStack, startInspectorStack } from './inspector-stack.js';
import { buildUiIfStale, hasChromium, usePage, screenshot } from './browser.js';

let env: InspectorStack;
let stack: RuntimeStack;
let weather: WeatherApiFixture;
let a2aArn: string;

beforeAll(async () => {
  if (!hasChromium) return;
  buildUiIfStale();
  env = await startInspectorStack({
    name: 'imcp',
    example: 'mcp-server',
    serverProtocol: 'MCP',
    service: 'mcp-server',
  });
  ({ stack, weather } = env);
  const created = await stack.control.send(
    new CreateAgentRuntimeCommand({
      agentRuntimeName: 'ia2a',
      agentRuntimeArtifact: {
        containerConfiguration: {
          containerUri: pathToFileURL(join(REPO_ROOT, 'examples', 'a2a-agent')).href,
        },
      },
      roleArn: 'arn:aws:iam::123456789012:role/AgentRuntimeRole',
      networkConfiguration: { networkMode: 'PUBLIC' },
      protocolConfiguration: { serverProtocol: 'A2A' },
      environmentVariables: env.environment('a2a-agent'),
    }),
  );
  a2aArn = created.agentRuntimeArn!;
  await until('the A2A runtime READY', async () => {
    const got = await stack.control.send(
      new GetAgentRuntimeCommand({ agentRuntimeId: created.agentRuntimeId! }),
    );
    return got.status === 'READY' ? true : undefined;
  });
}, 120_000);

const page = usePage('inspector-protocols');

afterAll(async () => {
  await env?.close();
}, 60_000);

const open = (runtime: string) =>
  page().goto(
    `${stack.collector.url}/#/inspector?host=${encodeURIComponent(stack.runtime.url)}&runtime=${encodeURIComponent(runtime)}`,
  );

describe.skipIf(!hasChromium)(
  'the Inspector on MCP and A2A runtimes (needs /usr/bin/chromium)',
  { timeout: 120_000 },
  () => {
    it('lists the MCP tools, builds a form from the input schema, names a bad field, calls the tool', async () => {
      await open(stack.arn);
      await expect
        .poll(() => page().locator('[data-testid=mcp-tools]').textContent(), { timeout: 30_000 })
        .toMatch(/get_forecast.*get_alerts/);
      const form = page().locator('[data-testid=tool-form]');
      await form.locator('[data-testid=field-latitude]').fill('north');
      await form.locator('[data-testid=field-longitude]').fill('-122.3321');
      await page().locator('[data-testid=call-tool]').click();
      expect(await page().locator('[data-testid=form-error]').textContent()).toBe(
        'latitude must be a number',
      );
      await form.locator('[data-testid=field-latitude]').fill('95');
      await page().locator('[data-testid=call-tool]').click();
      expect(await page().locator('[data-testid=form-error]').textContent()).toBe(
        'latitude must be at most 90',
      );
      await form.locator('[data-testid=field-latitude]').fill('47.6062');
      await page().locator('[data-testid=call-tool]').click();
      await expect
        .poll(() => page().locator('[data-testid=tool-result]').textContent(), { timeout: 60_000 })
        .toMatch(/°F|temperature/);
      expect(weather.requests.some((r) => r.path === '/points/47.6062,-122.3321')).toBe(true);
      await expect
        .poll(() => page().locator('[data-testid=turn-span]').allTextContents(), { timeout: 30_000 })
        .toEqual(expect.arrayContaining([expect.stringContaining('tools/call get_forecast')]));
      await screenshot(page(), 'inspector-mcp');
    });

    it('shows the A2A agent card and streams a message', async () => {
      await open(a2aArn);
      await expect
        .poll(() => page().locator('[data-testid=agent-card]').textContent(), { timeout: 30_000 })
        .toContain('Weather agent');
      expect(await page().locator('[data-testid=agent-card]').textContent()).toContain('Weather forecast');
      await page().locator('[data-testid=a2a-input]').fill('What is the weather at 47.6062,-122.3321?');
      await page().locator('[data-testid=a2a-input-send]').click();
      await expect
        .poll(() => page().locator('[data-testid=a2a-event]').allTextContents(), { timeout: 60_000 })
        .toEqual(expect.arrayContaining([expect.stringMatching(/^message .*(Seattle|°F|forecast)/i)]));
      await expect
        .poll(() => page().locator('[data-testid=turn-span]').allTextContents(), { timeout: 30_000 })
        .toEqual(expect.arrayContaining([expect.stringContaining('InvokeAgentRuntime')]));
      await screenshot(page(), 'inspector-a2a');
    });
  },
);
