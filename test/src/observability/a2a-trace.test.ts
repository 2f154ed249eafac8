// End to end: the official A2A SDK client, in a traced client span, talks to the weather A2A agent
// (official A2A SDK server, instrumented) through the runtime; the collector then holds one trace
// client span → runtime SERVER spans → the agent's spans.
import { Role } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import type { TraceResponse } from '@agentrt/collector';
import { textMessage } from '@agentrt/example-a2a-agent';
import { type WeatherApiFixture, startWeatherApiFixture } from '@agentrt/example-models/fixtures';
import { ROOT_CONTEXT, SpanKind, defaultTextMapSetter, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RuntimeStack, startRuntimeStack, until } from './runtime-stack.js';

const SESSION = `a2a-trace-session-${'0'.repeat(24)}`;

describe('A2A linked client → runtime → agent in one trace (official A2A SDK client and server)', () => {
  let stack: RuntimeStack;
  let weather: WeatherApiFixture;
  let provider: BasicTracerProvider;

  beforeAll(async () => {
    weather = await startWeatherApiFixture();
    stack = await startRuntimeStack({
      name: 'a2a_trace',
      example: 'a2a-agent',
      // A sandboxed worker reaches the host's loopback only on the ports it is given.
      runtime: { sandboxHostPorts: [Number(new URL(weather.url).port)] },
      serverProtocol: 'A2A',
      environment: {
        AGENTRT_MODEL_PROVIDER: 'offline',
        AGENTRT_OFFLINE_CHUNK_DELAY_MS: '0',
        OTEL_SERVICE_NAME: 'a2a-agent',
        WEATHER_API_BASE_URL: weather.url,
      },
    });
    provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'a2a-client' }),
      spanProcessors: [
        new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${stack.collector.url}/v1/traces` })),
      ],
    });
  }, 90_000);
  afterAll(async () => {
    await provider?.shutdown();
    await stack?.close();
    await weather?.close();
  }, 30_000);

  it('the client span parents the runtime spans, which parent the agent spans', async () => {
    const tracer = provider.getTracer('a2a-trace-test');
    const propagator = new W3CTraceContextPropagator();
    const clientSpan = tracer.startSpan('ask the weather agent', { kind: SpanKind.CLIENT });
    const spanContext = trace.setSpan(ROOT_CONTEXT, clientSpan);
    // Every request of the A2A client (card, JSON-RPC, SSE) carries the client span and the session.
    const fetchImpl: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      const carrier: Record<string, string> = {};
      propagator.inject(spanContext, carrier, defaultTextMapSetter);
      for (const [k, v] of Object.entries(carrier)) headers.set(k, v);
      headers.set('X-Amzn-Bedrock-AgentCore-Runtime-Session-Id', SESSION);
      return fetch(input, { ...init, headers });
    };
    const base = `${stack.runtime.url}/runtimes/${encodeURIComponent(stack.arn)}/invocations/`;
    const client = await new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }).createFromUrl(base);
    const message = (text: string) => ({
      tenant: '',
      message: textMessage(Role.ROLE_USER, text),
      configuration: undefined,
      metadata: undefined,
    });
    const answer = JSON.stringify(
      await client.sendMessage(message('What is the weather at 47.6062,-122.3321?')),
    );
    expect(answer).toMatch(/Seattle|°F|forecast/i);
    expect(weather.requests.some((r) => r.path === '/points/47.6062,-122.3321')).toBe(true);
    const events = [];
    for await (const event of client.sendMessageStream(message('Forecast for ZIP 10001 please')))
      events.push(event);
    expect(events.length).toBeGreaterThan(0);
    clientSpan.end();
    await provider.forceFlush();
    const traceId = clientSpan.spanContext().traceId;
    const clientSpanId = clientSpan.spanContext().spanId;

    const found = await until('the trace with client, runtime and agent spans', async () => {
      const res = await fetch(`${stack.collector.url}/api/traces/${traceId}`);
      if (!res.ok) return undefined;
      const t = (await res.json()) as TraceResponse;
      const root = t.roots.find((r) => r.span.spanId === clientSpanId);
      const runtimeCalls = root?.children.filter((c) => c.span.name === 'InvokeAgentRuntime') ?? [];
      const withAgent = runtimeCalls.filter((c) =>
        c.children.some((g) => g.span.resource.attributes['service.name'] === 'a2a-agent'),
      );
      return withAgent.length >= 2 ? { t, root: root!, runtimeCalls, withAgent } : undefined;
    });
    expect(found.t.roots).toHaveLength(1); // everything hangs below the client's span
    expect(found.root.span.resource.attributes['service.name']).toBe('a2a-client');
    for (const call of found.runtimeCalls) {
      expect(call.span.resource.attributes['service.name']).toBe('agentrt-runtime');
      expect(call.span.attributes['session.id']).toBe(SESSION);
      expect(call.span.attributes['aws.bedrock.agentcore.runtime.protocol']).toBe('A2A');
    }
    // The card was fetched in the same trace (GetAgentCard through the runtime).
    expect(found.root.children.map((c) => c.span.name)).toContain('GetAgentCard');
  }, 90_000);
});
