import { SpanKind, context, propagation, trace } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  InMemorySpanExporter,
  NodeTracerProvider,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { Agent } from '@strands-agents/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { askWeatherAgent, streamWeatherSummary } from './agent.js';
import { readModelConfig, readWeatherApiConfig } from './config.js';
import { type WeatherApiFixture, startWeatherApiFixture } from './fixtures/weather-api-server.js';
import { OfflineModel } from './offline/offline-model.js';
import { createModel } from './providers.js';
import { createHttpRequestTool } from './tools.js';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
let weather: WeatherApiFixture;

beforeAll(async () => {
  provider.register();
  weather = await startWeatherApiFixture();
});
afterAll(async () => {
  await weather?.close();
  await provider.shutdown();
});
beforeEach(() => exporter.reset());

const SESSION = 'sess-genai-0123456789abcdef0123456789';

function options(captureContent: boolean) {
  return {
    model: createModel(readModelConfig({ AGENTRT_OFFLINE_CHUNK_DELAY_MS: '0' })),
    weatherApi: readWeatherApiConfig({ WEATHER_API_BASE_URL: weather.url }),
    captureContent,
  };
}

function inSession<T>(fn: () => Promise<T>): Promise<T> {
  const baggage = propagation.createBaggage({ 'session.id': { value: SESSION } });
  return context.with(propagation.setBaggage(context.active(), baggage), fn);
}

function byName(spans: ReadableSpan[], name: string) {
  return spans.filter((s) => s.name === name);
}

describe('GenAI spans', () => {
  it('one run is invoke_agent → chat <model> (CLIENT) / execute_tool, with provider, model, usage and session', async () => {
    await inSession(() => askWeatherAgent('Weather at 47.6062,-122.3321', options(false)));
    const spans = exporter.getFinishedSpans();
    const [agent] = byName(spans, 'invoke_agent weather');
    expect(agent).toBeDefined();
    expect(agent!.kind).toBe(SpanKind.INTERNAL);
    const chats = byName(spans, 'chat agentrt-offline-weather-1');
    const tools = byName(spans, 'execute_tool http_request');
    expect(chats).toHaveLength(3);
    expect(tools).toHaveLength(2);
    for (const span of [...chats, ...tools]) {
      expect(span.parentSpanContext?.spanId).toBe(agent!.spanContext().spanId);
      expect(span.spanContext().traceId).toBe(agent!.spanContext().traceId);
    }
    for (const span of [agent!, ...chats, ...tools]) {
      expect(span.attributes).toMatchObject({
        'gen_ai.provider.name': 'offline',
        'gen_ai.request.model': 'agentrt-offline-weather-1',
        'gen_ai.conversation.id': SESSION,
        'session.id': SESSION,
      });
    }
    expect(
      chats.every((s) => s.kind === SpanKind.CLIENT && s.attributes['gen_ai.operation.name'] === 'chat'),
    ).toBe(true);
    expect(
      tools.every(
        (s) => s.kind === SpanKind.INTERNAL && s.attributes['gen_ai.operation.name'] === 'execute_tool',
      ),
    ).toBe(true);
    expect(tools.map((s) => s.attributes['gen_ai.tool.call.id'])).toEqual([
      expect.stringMatching(/^tooluse_/),
      expect.stringMatching(/^tooluse_/),
    ]);
    expect(agent!.attributes['gen_ai.operation.name']).toBe('invoke_agent');
    const chatInput = chats.reduce((sum, s) => sum + Number(s.attributes['gen_ai.usage.input_tokens']), 0);
    expect(chatInput).toBeGreaterThan(0);
    expect(agent!.attributes['gen_ai.usage.input_tokens']).toBe(chatInput);
    expect(chats.map((s) => s.attributes['gen_ai.response.finish_reasons'])).toEqual([
      ['tool_call'],
      ['tool_call'],
      ['stop'],
    ]);
    // Strands' own spans (INTERNAL `chat`, the loop-cycle spans, provider = service name) are replaced.
    expect(spans.some((s) => s.name === 'chat' || s.name === 'execute_agent_loop_cycle')).toBe(false);
    expect(spans.some((s) => s.attributes['gen_ai.system'] === 'strands-agents')).toBe(false);
    // Content is off by default.
    for (const span of spans) {
      expect(
        Object.keys(span.attributes).filter((k) => /messages|arguments|result|instructions/.test(k)),
      ).toEqual([]);
      expect(span.events).toEqual([]);
    }
  });

  it('records content only when capture is on', async () => {
    await inSession(() => askWeatherAgent('Weather at 47.6062,-122.3321', options(true)));
    const spans = exporter.getFinishedSpans();
    const [agent] = byName(spans, 'invoke_agent weather');
    expect(JSON.parse(String(agent!.attributes['gen_ai.input.messages']))).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'Weather at 47.6062,-122.3321' }] },
    ]);
    expect(String(agent!.attributes['gen_ai.output.messages'])).toContain('Here is the forecast');
    const [tool] = byName(spans, 'execute_tool http_request');
    expect(JSON.parse(String(tool!.attributes['gen_ai.tool.call.arguments']))).toEqual({
      method: 'GET',
      url: `${weather.url}/points/47.6062,-122.3321`,
    });
    expect(String(tool!.attributes['gen_ai.tool.call.result'])).toContain('"forecast"');
    const [chat] = byName(spans, 'chat agentrt-offline-weather-1');
    expect(String(chat!.attributes['gen_ai.system_instructions'])).toContain('weather assistant');
  });

  it('a tracer provider registered later gets the next run (the layer follows the global provider)', async () => {
    await inSession(() => askWeatherAgent('Weather at 47.6062,-122.3321', options(false)));
    expect(byName(exporter.getFinishedSpans(), 'invoke_agent weather')).toHaveLength(1);
    const second = new InMemorySpanExporter();
    const other = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(second)] });
    trace.disable();
    other.register();
    let spans: ReadableSpan[];
    try {
      await inSession(() => askWeatherAgent('Weather at 47.6062,-122.3321', options(false)));
      spans = second.getFinishedSpans(); // before shutdown, which empties an in-memory exporter
    } finally {
      trace.disable();
      provider.register();
      await other.shutdown();
    }
    expect(byName(exporter.getFinishedSpans(), 'invoke_agent weather')).toHaveLength(1);
    expect(byName(spans, 'invoke_agent weather')).toHaveLength(1);
    expect(byName(spans, 'chat agentrt-offline-weather-1')).toHaveLength(3);
  });

  it('a run the sampler drops records nothing, content capture or not, and still answers', async () => {
    const dropped = new InMemorySpanExporter();
    const sampled = new NodeTracerProvider({
      sampler: new AlwaysOffSampler(),
      spanProcessors: [new SimpleSpanProcessor(dropped)],
    });
    trace.disable();
    sampled.register();
    let answer: Awaited<ReturnType<typeof askWeatherAgent>>;
    let spans: ReadableSpan[];
    try {
      answer = await inSession(() => askWeatherAgent('Weather at 47.6062,-122.3321', options(true)));
      spans = dropped.getFinishedSpans(); // before shutdown, which empties an in-memory exporter
    } finally {
      trace.disable();
      provider.register();
      await sampled.shutdown();
    }
    expect(answer.text).toContain('Here is the forecast');
    expect(spans).toEqual([]);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('a failed tool call is an error span with error.type, and the run still ends', async () => {
    await inSession(() => askWeatherAgent('Weather for ZIP 99999', options(false)));
    const [tool] = byName(exporter.getFinishedSpans(), 'execute_tool http_request');
    expect(tool!.status.code).toBe(2);
    expect(tool!.attributes['error.type']).toBe('ToolRequestError');
    expect(byName(exporter.getFinishedSpans(), 'invoke_agent weather')[0]!.status.code).toBe(1);
  });

  it('a stream stopped early ends its spans as cancelled', async () => {
    const stream = streamWeatherSummary('Weather at 47.6062,-122.3321', options(false));
    await inSession(async () => {
      const first = await stream.next();
      expect(first.done).toBe(false);
      await stream.return(undefined as never);
    });
    const [agent] = byName(exporter.getFinishedSpans(), 'invoke_agent weather');
    expect(agent!.attributes['error.type']).toBe('cancelled');
  });

  it('without this layer Strands 1.19 emits INTERNAL `chat` spans naming the service as provider (the gap fixed)', async () => {
    const agent = new Agent({
      name: 'raw',
      model: new OfflineModel({ chunkDelayMs: 0 }),
      tools: [createHttpRequestTool({ baseUrl: weather.url, userAgent: 'ua', timeoutMs: 5000 })],
      printer: false,
    });
    await agent.invoke('hello');
    const spans = exporter.getFinishedSpans();
    const chat = spans.find((s) => s.name === 'chat');
    expect(chat?.kind).toBe(SpanKind.INTERNAL);
    expect(chat?.attributes['gen_ai.system']).toBe('strands-agents');
    expect(chat?.attributes['session.id']).toBeUndefined();
  });
});
