import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import {
  DiagLogLevel,
  SpanKind,
  SpanStatusCode,
  context,
  diag,
  defaultTextMapSetter,
  propagation,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { RPCType, setRPCMetadata } from '@opentelemetry/core';
import { createAgentPropagator } from '@agentrt/propagation';
import Koa from 'koa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { agentContext, getActiveSessionId } from './agent-context.js';
import type { LogFields, Logger } from './logger.js';
import { closeAll, invoke, readFrames, responsesKeptByTimers, start, until } from './testing.test.util.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(createAgentPropagator());
});
afterEach(async () => {
  await closeAll();
  exporter.reset();
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
  propagation.disable();
});

const SESSION = 'trace-session-0123456789abcdef0123456789';
const W3C_TRACE = '0af7651916cd43dd8448eb211c80319c';
const TRACEPARENT = `00-${W3C_TRACE}-b7ad6b7169203331-01`;
const XRAY = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';

const serverSpans = () => exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER);
const waitForSpans = (n: number) => until(() => exporter.getFinishedSpans().length >= n);

function captureLogger(): Logger & { records: Array<{ level: string; msg: string; fields?: LogFields }> } {
  const records: Array<{ level: string; msg: string; fields?: LogFields }> = [];
  const at = (level: string) => (msg: string, fields?: LogFields) =>
    void records.push({ level, msg, ...(fields ? { fields } : {}) });
  return { records, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

describe('server spans with a registered tracer provider', () => {
  it('makes one SERVER span per invocation with session.id, and none for /ping', async () => {
    const { url } = await start(() => 'ok');
    await fetch(`${url}/ping`);
    await invoke(url, {}, { 'x-cloud-agent-runtime-session-id': SESSION });
    await invoke(url, {}, { 'x-amzn-bedrock-agentcore-runtime-session-id': SESSION });
    await fetch(`${url}/ping`);
    await waitForSpans(2);
    const spans = serverSpans();
    expect(spans).toHaveLength(2);
    expect(exporter.getFinishedSpans()).toHaveLength(2);
    for (const span of spans) {
      expect(span.name).toBe('POST /invocations');
      expect(span.instrumentationScope.name).toBe('@agentrt/server');
      expect(span.attributes).toMatchObject({
        'session.id': SESSION,
        'http.route': '/invocations',
        'http.request.method': 'POST',
        'http.response.status_code': 200,
      });
    }
    expect(spans[0]!.spanContext().traceId).not.toBe(spans[1]!.spanContext().traceId);
  });

  it('continues an incoming traceparent (which wins over an X-Ray header sent with it)', async () => {
    const { url } = await start(() => 'ok');
    await invoke(url, {}, { traceparent: TRACEPARENT, 'x-cloud-trace-id': XRAY });
    await waitForSpans(1);
    const [span] = serverSpans();
    expect(span!.spanContext().traceId).toBe(W3C_TRACE);
    expect(span!.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
  });

  it.each([
    ['X-Cloud-Trace-Id', 'x-cloud-trace-id'],
    ['X-Amzn-Trace-Id', 'x-amzn-trace-id'],
  ])('continues an incoming %s', async (_n, header) => {
    const { url } = await start(() => 'ok');
    await invoke(url, {}, { [header]: XRAY });
    await waitForSpans(1);
    const [span] = serverSpans();
    expect(span!.spanContext().traceId).toBe('5759e988bd862e3fe1be46a994272793');
    expect(span!.parentSpanContext?.spanId).toBe('53995c3f42cd8ad8');
  });

  it('ignores malformed trace, session and baggage headers with a debug note, never a 500', async () => {
    const logger = captureLogger();
    const { url } = await start((_p, ctx) => ctx.traceId ?? null, { logger });
    const res = await invoke(
      url,
      {},
      {
        traceparent: '00-zzzz-01',
        'x-cloud-trace-id': 'Root=nonsense',
        'x-cloud-agent-runtime-session-id': 'bad session',
        baggage: '===,,,',
      },
    );
    expect(res.status).toBe(200);
    const traceId = await res.json();
    await waitForSpans(1);
    const [span] = serverSpans();
    expect(span!.parentSpanContext).toBeUndefined();
    expect(span!.spanContext().traceId).toBe(traceId);
    expect(span!.attributes['session.id']).toBeUndefined();
    expect(logger.records.filter((r) => r.level === 'debug').map((r) => r.msg)).toEqual([
      'ignored malformed trace headers',
      'ignored malformed session id header',
      'ignored malformed baggage header',
    ]);
  });

  it('runs the entrypoint inside the span: child spans, baggage session.id and outbound headers', async () => {
    let outbound: Record<string, string> = {};
    const { url } = await start(async (_p, ctx) => {
      await trace.getTracer('agent').startActiveSpan('invoke_agent', async (span) => {
        outbound = {};
        propagation.inject(context.active(), outbound, defaultTextMapSetter);
        span.end();
      });
      return { session: getActiveSessionId() ?? null, traceId: ctx.traceId, spanId: ctx.spanId };
    });
    const res = await invoke(
      url,
      {},
      { 'x-cloud-agent-runtime-session-id': SESSION, baggage: 'tenant=acme' },
    );
    const body = (await res.json()) as { session: string; traceId: string; spanId: string };
    await waitForSpans(2);
    const [server] = serverSpans();
    const child = exporter.getFinishedSpans().find((s) => s.name === 'invoke_agent')!;
    expect(body).toEqual({
      session: SESSION,
      traceId: server!.spanContext().traceId,
      spanId: server!.spanContext().spanId,
    });
    expect(child.parentSpanContext?.spanId).toBe(server!.spanContext().spanId);
    expect(outbound.traceparent).toBe(`00-${server!.spanContext().traceId}-${child.spanContext().spanId}-01`);
    expect(outbound.baggage?.split(',').sort()).toEqual([`session.id=${SESSION}`, 'tenant=acme']);
  });

  it('keeps the span open for the whole stream and marks failures', async () => {
    const { url } = await start(async function* (p: { fail?: boolean }) {
      yield 1;
      await new Promise((r) => setTimeout(r, 100));
      if (p.fail) throw new Error('x');
      yield trace.getActiveSpan()?.spanContext().spanId ?? null;
    });
    const started = performance.now();
    const frames = await readFrames(await invoke(url, {}));
    await waitForSpans(1);
    const [span] = serverSpans();
    expect(frames[1]!.text).toBe(`data: "${span!.spanContext().spanId}"`);
    expect(span!.endTime[0] * 1000 + span!.endTime[1] / 1e6).toBeGreaterThanOrEqual(
      span!.startTime[0] * 1000 + span!.startTime[1] / 1e6 + 90,
    );
    expect(performance.now() - started).toBeGreaterThan(90);

    // A stream that fails after its 200 went out: an `event: error` frame, and the span says ERROR.
    exporter.reset();
    const failing = await readFrames(await invoke(url, { fail: true }));
    expect(failing.at(-1)!.text).toMatch(/^event: error\ndata: .*"error":"x"/);
    await waitForSpans(1);
    const [streamFailed] = serverSpans();
    expect(streamFailed!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'x' });
    expect(streamFailed!.attributes['http.response.status_code']).toBe(200);
    expect(streamFailed!.attributes['error.type']).toBe('Error');
    expect(streamFailed!.events.map((e) => e.name)).toContain('exception');

    exporter.reset();
    const { url: url2 } = await start(() => {
      throw new Error('boom');
    });
    expect((await invoke(url2, {})).status).toBe(500);
    await waitForSpans(1);
    const [failed] = serverSpans();
    expect(failed!.status.code).toBe(SpanStatusCode.ERROR);
    expect(failed!.attributes['http.response.status_code']).toBe(500);
    expect(failed!.events.map((e) => e.name)).toContain('exception');
  });
});

/**
 * A client that goes away while the entrypoint waits, and an entrypoint that then fails (as an
 * agent does when its model call is cancelled). Returns the diag warnings and the server span.
 */
async function disconnectMidInvocation(): Promise<{ warnings: string[]; span: ReadableSpan }> {
  const warnings: string[] = [];
  const warn = (message: string) => void warnings.push(message);
  // (the server's "request failed" log line goes to diag.error: not what this is about)
  const quiet = () => {};
  diag.setLogger({ error: quiet, warn, info: quiet, debug: quiet, verbose: quiet }, DiagLogLevel.WARN);
  try {
    let failed = false;
    const { url, app } = await start(
      (_p, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            setTimeout(() => {
              failed = true;
              reject(new Error('model call cancelled'));
            }, 20);
          });
        }),
    );
    const controller = new AbortController();
    const pending = invoke(
      url,
      {},
      { 'x-cloud-agent-runtime-session-id': SESSION },
      { signal: controller.signal },
    ).catch((err: unknown) => err);
    await until(() => app.inFlight === 1);
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    await until(() => failed && app.inFlight === 0 && serverSpans().length >= 1);
    await new Promise((r) => setTimeout(r, 50));
    const [span, ...more] = serverSpans();
    expect(more).toEqual([]);
    return { warnings, span: span! };
  } finally {
    diag.disable();
  }
}

describe('a client that goes away mid-invocation', () => {
  it('leaves the ended server span alone: no "operation on ended span" warnings, the span says why', async () => {
    const { warnings, span } = await disconnectMidInvocation();
    expect(warnings).toEqual([]);
    expect(span.name).toBe('POST /invocations');
    expect(span.attributes).toMatchObject({
      'session.id': SESSION,
      'http.route': '/invocations',
      'error.type': 'connection_closed',
    });
    expect(span.status).toEqual({
      code: SpanStatusCode.ERROR,
      message: 'connection closed before the response was sent',
    });
  });
});

describe('memory with an SDK registered', () => {
  it('a timer an entrypoint leaves running does not keep the finished request alive', async () => {
    expect(await responsesKeptByTimers()).toBe(0);
  });
});

describe('SDK registered after the app was built', () => {
  it('starts recording spans from the next request on', async () => {
    trace.disable();
    context.disable();
    try {
      const { url } = await start((_p, ctx) => ctx.sessionId ?? null);
      const headers = { 'x-cloud-agent-runtime-session-id': SESSION };
      expect(await (await invoke(url, {}, headers)).json()).toBe(SESSION);
      await new Promise((r) => setTimeout(r, 50));
      expect(exporter.getFinishedSpans()).toHaveLength(0);
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      trace.setGlobalTracerProvider(provider);
      expect(await (await invoke(url, {}, headers)).json()).toBe(SESSION);
      await waitForSpans(1);
      expect(serverSpans()[0]!.attributes['session.id']).toBe(SESSION);
    } finally {
      context.disable();
      trace.disable();
      context.setGlobalContextManager(contextManager.enable());
      trace.setGlobalTracerProvider(provider);
    }
  });
});

describe('log records', () => {
  it('carry sessionId and traceId for failed invocations and failed streams', async () => {
    const logger = captureLogger();
    const { url } = await start(
      (p: { stream?: boolean }) => {
        if (!p.stream) throw new Error('plain failure');
        return (async function* () {
          yield 1;
          throw new Error('stream failure');
        })();
      },
      { logger },
    );
    const headers = { 'x-cloud-agent-runtime-session-id': SESSION, traceparent: TRACEPARENT };
    expect((await invoke(url, {}, headers)).status).toBe(500);
    await readFrames(await invoke(url, { stream: true }, headers));
    const errors = logger.records.filter((r) => r.level === 'error');
    expect(errors.map((r) => r.msg)).toEqual(['request failed', 'stream failed']);
    for (const r of errors) expect(r.fields).toMatchObject({ sessionId: SESSION, traceId: W3C_TRACE });
    expect(errors[0]!.fields).toMatchObject({ status: 500, error: 'plain failure' });
    expect(errors[1]!.fields).toMatchObject({
      error: 'stream failure',
      stack: expect.stringContaining('stream failure'),
    });
  });
});

describe('agentContext() in an existing Koa app', () => {
  it('puts headers into the active context for downstream middleware', async () => {
    const koa = new Koa();
    koa.use(agentContext());
    koa.use((ctx) => {
      const span = trace.getActiveSpan();
      ctx.body = {
        session: getActiveSessionId() ?? null,
        traceId: span?.spanContext().traceId ?? null,
        tenant: propagation.getActiveBaggage()?.getEntry('tenant')?.value ?? null,
      };
    });
    const server = koa.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const res = await fetch(`${url}/anything`, {
        headers: {
          'x-amzn-trace-id': XRAY,
          'x-amzn-bedrock-agentcore-runtime-session-id': SESSION,
          baggage: 'tenant=t1',
        },
      });
      expect(await res.json()).toEqual({
        session: SESSION,
        traceId: '5759e988bd862e3fe1be46a994272793',
        tenant: 't1',
      });
      await waitForSpans(1);
      expect(serverSpans()[0]!.name).toBe('GET');
      expect(serverSpans()[0]!.attributes['session.id']).toBe(SESSION);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('behind an HTTP server instrumentation whose span is not recording (sampled out)', () => {
  it("starts no second SERVER span and keeps the request in the instrumentation's trace", async () => {
    const upstream = trace.wrapSpanContext({ traceId: W3C_TRACE, spanId: 'b7ad6b7169203331', traceFlags: 0 });
    const koa = new Koa();
    // what an HTTP server instrumentation (ours or upstream) places in the context of a request
    koa.use((_ctx, next) =>
      context.with(
        setRPCMetadata(trace.setSpan(context.active(), upstream), { type: RPCType.HTTP, span: upstream }),
        next,
      ),
    );
    koa.use(agentContext());
    koa.use((ctx) => {
      ctx.body = {
        session: getActiveSessionId() ?? null,
        traceId: trace.getActiveSpan()?.spanContext().traceId ?? null,
        spanId: trace.getActiveSpan()?.spanContext().spanId ?? null,
      };
    });
    const server = koa.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const res = await fetch(`${url}/invocations`, {
        method: 'POST',
        headers: { 'x-cloud-agent-runtime-session-id': SESSION },
      });
      // outgoing calls name the instrumentation's span as their parent, not a second one
      expect(await res.json()).toEqual({ session: SESSION, traceId: W3C_TRACE, spanId: 'b7ad6b7169203331' });
      // the provider samples everything: a span started here would have been exported
      await new Promise((r) => setTimeout(r, 50));
      expect(exporter.getFinishedSpans()).toEqual([]);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('with the OpenTelemetry HTTP instrumentation loaded', () => {
  let instrumentation: { disable(): void } | undefined;
  beforeAll(async () => {
    const { HttpInstrumentation } = await import('@opentelemetry/instrumentation-http');
    const http = new HttpInstrumentation();
    http.setTracerProvider(provider);
    http.enable();
    instrumentation = http;
    // Builtins are patched when required after enable(); Koa's server shares the patched prototype.
    createRequire(import.meta.url)('node:http');
  });
  afterAll(() => instrumentation?.disable());

  it('adds session.id and the route to the HTTP server span instead of making a second one', async () => {
    const { url } = await start(() => trace.getActiveSpan()?.spanContext().spanId ?? null);
    const res = await invoke(
      url,
      {},
      { traceparent: TRACEPARENT, 'x-cloud-agent-runtime-session-id': SESSION },
    );
    const spanIdSeen = await res.json();
    await until(() => serverSpans().length >= 1);
    await new Promise((r) => setTimeout(r, 50));
    const spans = serverSpans();
    expect(spans).toHaveLength(1);
    const [span] = spans as [ReadableSpan];
    expect(span.instrumentationScope.name).toBe('@opentelemetry/instrumentation-http');
    expect(span.spanContext().spanId).toBe(spanIdSeen);
    expect(span.spanContext().traceId).toBe(W3C_TRACE);
    expect(span.attributes).toMatchObject({ 'session.id': SESSION, 'http.route': '/invocations' });
  });

  it('names its span by route even when the client went away first, with no "ended span" warnings', async () => {
    const { warnings, span } = await disconnectMidInvocation();
    expect(warnings).toEqual([]);
    expect(span.instrumentationScope.name).toBe('@opentelemetry/instrumentation-http');
    expect(span.attributes).toMatchObject({ 'session.id': SESSION, 'http.route': '/invocations' });
  });
});
