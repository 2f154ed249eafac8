import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { createLogger, readWeatherApiConfig } from '@agentrt/example-models';
import { type WeatherApiFixture, startWeatherApiFixture } from '@agentrt/example-models/fixtures';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { createMcpHandler } from './mcp-server.js';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
let weather: WeatherApiFixture;
let server: Server;
let url: string;

beforeAll(async () => {
  provider.register();
  weather = await startWeatherApiFixture();
  const handle = createMcpHandler({
    api: readWeatherApiConfig({ WEATHER_API_BASE_URL: weather.url }),
    jsonResponse: false,
    logger: createLogger({ name: 'mcp-server-test', write: () => undefined }),
  });
  server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await weather?.close();
  await provider.shutdown();
});
beforeEach(() => exporter.reset());

async function connect() {
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

function text(result: Awaited<ReturnType<Client['callTool']>>): string {
  return (result.content as { text: string }[]).map((c) => c.text).join('\n');
}

describe('weather MCP server (official MCP SDK client)', () => {
  it('lists get_forecast and get_alerts and answers from the weather API', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['get_alerts', 'get_forecast']);
    const forecast = await client.callTool({
      name: 'get_forecast',
      arguments: { latitude: 47.6062, longitude: -122.3321 },
    });
    expect(forecast.isError).toBeFalsy();
    const periods = (forecast.structuredContent as { periods: { name: string; temperature: string }[] })
      .periods;
    expect(periods.length).toBeGreaterThan(0);
    expect(text(forecast)).toContain(`${periods[0]!.name}: ${periods[0]!.temperature}`);
    expect(weather.requests.map((r) => r.path)).toContain('/points/47.6062,-122.3321');
    expect(text(await client.callTool({ name: 'get_alerts', arguments: { state: 'CO' } }))).toContain(
      'Winter Storm Warning (Severe)',
    );
    expect(text(await client.callTool({ name: 'get_alerts', arguments: { state: 'NV' } }))).toBe(
      'No active alerts for NV.',
    );
    await client.close();
  });

  it('reports tool failures as tool errors with clear messages', async () => {
    const client = await connect();
    const outside = await client.callTool({
      name: 'get_forecast',
      arguments: { latitude: 51.5, longitude: -0.12 },
    });
    expect(outside.isError).toBe(true);
    expect(text(outside)).toMatch(/weather API answered 404/);
    const badState = await client.callTool({ name: 'get_alerts', arguments: { state: 'colorado' } });
    expect(badState.isError).toBe(true);
    expect(text(badState)).toMatch(/state/);
    await client.close();
  });

  it('traces each MCP request per the OpenTelemetry MCP conventions', async () => {
    const client = await connect();
    await client.callTool({ name: 'get_alerts', arguments: { state: 'WA' } });
    await client.callTool({ name: 'get_forecast', arguments: { latitude: 51.5, longitude: -0.12 } });
    await client.close();
    const spans = exporter.getFinishedSpans();
    const init = spans.find((s) => s.name === 'initialize');
    expect(init?.attributes['mcp.method.name']).toBe('initialize');
    const call = spans.find((s) => s.name === 'tools/call get_alerts');
    expect(call?.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'get_alerts',
      'gen_ai.operation.name': 'execute_tool',
      'network.transport': 'tcp',
    });
    expect(call?.attributes['mcp.protocol.version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(call?.attributes['jsonrpc.request.id']).toBeDefined();
    const failed = spans.find((s) => s.name === 'tools/call get_forecast');
    expect(failed?.attributes['error.type']).toBe('tool_error');
  });

  it('answers GET with 405 and other paths with 404', async () => {
    expect((await fetch(url)).status).toBe(405);
    expect((await fetch(url.replace('/mcp', '/other'), { method: 'POST', body: '{}' })).status).toBe(404);
    const bad = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{not json',
    });
    expect(bad.status).toBe(400);
  });
});

describe('loadConfig', () => {
  it("listens on 8001 by default, clear of the local stack's weather service on 8000", () => {
    expect(loadConfig({}).port).toBe(8001);
    expect(loadConfig({ PORT: '8000' }).port).toBe(8000);
  });
});
