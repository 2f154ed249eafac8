import { context } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import {
  InMemorySpanExporter,
  NodeTracerProvider,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { Agent } from '@strands-agents/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { weatherSystemPrompt } from './agent.js';
import { type WeatherApiFixture, startWeatherApiFixture } from './fixtures/weather-api-server.js';
import { OfflineModel } from './offline/offline-model.js';
import { skipUnrecordedStrandsSpanWork } from './strands-telemetry.js';
import { createHttpRequestTool } from './tools.js';

// One file of its own: the patch changes Strands' Tracer class for the whole process, and the
// first test needs it unpatched.
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

function weatherAgent(): Agent {
  return new Agent({
    name: 'raw',
    model: new OfflineModel({ chunkDelayMs: 0 }),
    systemPrompt: weatherSystemPrompt(weather.url, false),
    tools: [createHttpRequestTool({ baseUrl: weather.url, userAgent: 'ua', timeoutMs: 5000 })],
    printer: false,
  });
}

/** Runs `fn`, counting the JSON.stringify calls made from Strands' tracer module. */
async function stringifiesFromStrandsTracer(fn: () => Promise<unknown>): Promise<number> {
  const original = JSON.stringify;
  let calls = 0;
  JSON.stringify = function (this: unknown, ...args: Parameters<typeof JSON.stringify>) {
    if (new Error().stack?.includes('telemetry/tracer.js')) calls++;
    return original.apply(this, args);
  } as typeof JSON.stringify;
  try {
    await fn();
  } finally {
    JSON.stringify = original;
  }
  return calls;
}

const PROMPT = 'Weather at 47.6062,-122.3321';
const suppressed = <T>(fn: () => Promise<T>) => context.with(suppressTracing(context.active()), fn);
const eventNames = (spans: ReadableSpan[]) => spans.flatMap((s) => s.events.map((e) => e.name));

describe("Strands' span work for spans that are not recording", () => {
  it('is skipped once patched: the suppressed run serializes only start attributes, and answers the same', async () => {
    const before = await stringifiesFromStrandsTracer(() => suppressed(() => weatherAgent().invoke(PROMPT)));
    const unpatchedAnswer = String(await suppressed(() => weatherAgent().invoke(PROMPT))).trim();

    const agent = weatherAgent();
    expect(skipUnrecordedStrandsSpanWork(agent)).toBe(true);
    expect(skipUnrecordedStrandsSpanWork(weatherAgent())).toBe(true); // once per process, idempotent
    let answer = '';
    const after = await stringifiesFromStrandsTracer(async () => {
      answer = String(await suppressed(() => agent.invoke(PROMPT))).trim();
    });
    expect(exporter.getFinishedSpans()).toEqual([]);
    // what is left is built before any span exists: the agent span's start attributes (tool names,
    // system prompt) and, inline in startToolCallSpan, each of the two tool calls' input
    expect(after).toBe(4);
    expect(before).toBeGreaterThan(10);
    expect(answer).toBe(unpatchedAnswer);
    expect(answer).toContain('Here is the forecast');
  });

  it('leaves recording spans as they were: events, end time, status, tool result', async () => {
    expect(skipUnrecordedStrandsSpanWork(weatherAgent())).toBe(true);
    await weatherAgent().invoke(PROMPT);
    const spans = exporter.getFinishedSpans();
    const chat = spans.find((s) => s.name === 'chat');
    const tool = spans.find((s) => s.name === 'execute_tool http_request');
    expect(chat?.attributes['gen_ai.event.end_time']).toEqual(expect.any(String));
    expect(chat?.status.code).toBe(1);
    expect(eventNames([chat!])).toEqual(expect.arrayContaining(['gen_ai.user.message', 'gen_ai.choice']));
    expect(tool?.attributes['gen_ai.tool.status']).toBe('success');
    const choice = tool?.events.find((e) => e.name === 'gen_ai.choice');
    expect(String(choice?.attributes?.['message'])).toContain('forecast');
  });
});
