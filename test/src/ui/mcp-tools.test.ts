/**
 * MCP tool calls render as tools: the official MCP SDK client calls the weather MCP server
 * (examples/mcp-server, official MCP server SDK, instrumented) through the runtime's invocation URL;
 * its spans follow the OpenTelemetry MCP conventions, and the trace view in headless Chromium shows
 * the `tools/call` span as a tool call.
 */
import { type TraceResponse } from '@agentrt/collector';
import { type WeatherApiFixture, startWeatherApiFixture } from '@agentrt/example-models/fixtures';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RuntimeStack, startRuntimeStack, until } from '../observability/runtime-stack.js';
import { buildUiIfStale, hasChromium, usePage, screenshot } from './browser.js';

const TRACE_ID = '6e0c63257de34c92bf9efcd03927272e';
const CALLER_SPAN = '53995c3f42cd8ad8';

type TraceNode = TraceResponse['roots'][number];
const flatten = (nodes: TraceNode[]): TraceNode[] => nodes.flatMap((n) => [n, ...flatten(n.children)]);

describe.skipIf(!hasChromium)(
  'MCP tool calls in the trace view (needs /usr/bin/chromium)',
  { timeout: 120_000 },
  () => {
    let stack: RuntimeStack;
    let weather: WeatherApiFixture;
    let mcpSessionId: string | undefined;

    beforeAll(async () => {
      buildUiIfStale();
      weather = await startWeatherApiFixture();
      stack = await startRuntimeStack({
        name: 'mcp_ui',
        example: 'mcp-server',
        // A sandboxed worker reaches the host's loopback only on the ports it is given.
        runtime: { sandboxHostPorts: [Number(new URL(weather.url).port)] },
        serverProtocol: 'MCP',
        environment: { OTEL_SERVICE_NAME: 'mcp-server', WEATHER_API_BASE_URL: weather.url },
      });
      // The official MCP client, every request in the caller's trace.
      const transport = new StreamableHTTPClientTransport(
        new URL(
          `${stack.runtime.url}/runtimes/${encodeURIComponent(stack.arn)}/invocations?qualifier=DEFAULT`,
        ),
        { requestInit: { headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` } } },
      );
      const client = new Client({ name: 'mcp-ui-test', version: '1.0.0' });
      await client.connect(transport);
      mcpSessionId = transport.sessionId;
      const result = await client.callTool({
        name: 'get_forecast',
        arguments: { latitude: 47.6062, longitude: -122.3321 },
      });
      expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
      await client.close();
    }, 120_000);
    const page = usePage('mcp-tools');
    afterAll(async () => {
      await stack?.close();
      await weather?.close();
    }, 60_000);

    it('follows the MCP conventions and shows tools/call as a tool in the trace view', async () => {
      const isTool = (n: TraceNode) => n.span.attributes['mcp.method.name'] === 'tools/call';
      const found = await until('the tools/call span in the caller trace', async () => {
        const res = await fetch(`${stack.collector.url}/api/traces/${TRACE_ID}`);
        if (!res.ok) return undefined;
        const spans = flatten(((await res.json()) as TraceResponse).roots);
        return spans.some(isTool) ? spans : undefined;
      });
      const tool = found.find(isTool)!;
      expect(tool.span.name).toBe('tools/call get_forecast');
      expect(tool.span.kind).toMatch(/SERVER|2/);
      expect(tool.span.resource.attributes['service.name']).toBe('mcp-server');
      expect(tool.span.attributes['gen_ai.tool.name']).toBe('get_forecast');
      expect(tool.span.attributes['gen_ai.operation.name']).toBe('execute_tool');
      expect(tool.span.attributes['mcp.session.id']).toBe(mcpSessionId);
      // The runtime's span of that call is above it, in the caller's trace.
      const runtimeCall = found.find(
        (n) => n.span.name === 'InvokeAgentRuntime' && flatten(n.children).includes(tool),
      );
      expect(runtimeCall?.span.parentSpanId).toBe(CALLER_SPAN);
      expect(runtimeCall?.span.attributes['aws.bedrock.agentcore.runtime.protocol']).toBe('MCP');

      await page().goto(`${stack.collector.url}/#/traces/${TRACE_ID}`);
      const row = page().locator('[data-testid=waterfall-row]', { hasText: 'tools/call get_forecast' });
      await row.waitFor();
      expect(await row.getAttribute('data-kind')).toBe('execute_tool');
      await row.click();
      const call = page().locator('.span-panel .tool-call');
      await call.waitFor();
      expect(await call.locator('.tool-call-head').innerText()).toMatch(/tool\s+get_forecast/i);
      // The other MCP requests (initialize, notifications) are not tools.
      const kinds = await page()
        .locator('[data-testid=waterfall-row]', { hasText: 'initialize' })
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-kind')));
      expect(kinds.length).toBeGreaterThan(0);
      expect(kinds).not.toContain('execute_tool');
      await screenshot(page(), '20-mcp-tool-call');
    });
  },
);
