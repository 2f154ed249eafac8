import { createRequire } from 'node:module';
import type * as Http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { getRPCMetadata } from '@opentelemetry/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HTTP_SERVER_SCOPE, HttpServerInstrumentation } from './http-server.js';
import { LeanContext } from './lean/context.js';
import { installGlobalContext, memoryMetrics, memorySpans } from './memory-telemetry.test-util.js';

const { spans, tracerProvider } = memorySpans();
const { exporter: metricExporter, reader: metricReader, meterProvider } = memoryMetrics();
let uninstallContext: () => void;
const instrumentation = new HttpServerInstrumentation({ untracedPaths: ['/ping'], enabled: false });
let http: typeof Http;
let server: Http.Server;
let base: string;
/** What the handler saw: the active span and whether tracing was on, per request path. */
const seen = new Map<string, { traceId?: string; childRecorded: boolean; lean: boolean }>();

beforeAll(async () => {
  uninstallContext = installGlobalContext();
  instrumentation.setTracerProvider(tracerProvider);
  instrumentation.setMeterProvider(meterProvider);
  instrumentation.enable();
  // The hook patches `http` when it is required after enable(), as an app's require would.
  http = createRequire(import.meta.url)('http') as typeof Http;
  server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    // A child span shows whether the handler runs in the request's context (or suppressed).
    const child = trace.getTracer('test').startSpan('child');
    seen.set(url.pathname, {
      traceId: trace.getActiveSpan()?.spanContext().traceId,
      childRecorded: child.isRecording(),
      lean: context.active() instanceof LeanContext,
    });
    child.end();
    const rpc = getRPCMetadata(context.active());
    if (url.pathname.startsWith('/items/') && rpc) rpc.route = '/items/:id';
    if (url.pathname === '/throw') throw new Error('handler blew up');
    if (url.pathname === '/hang') {
      req.socket.destroy();
      return;
    }
    res.statusCode = url.pathname === '/fail' ? 503 : 200;
    res.end('ok');
  });
  // An exception in the handler would crash the test process; the server's own 'error' path is
  // what a framework does, so catch it on the emitter like Node would report it.
  server.on('clientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  trace.setGlobalTracerProvider(tracerProvider);
});

afterAll(async () => {
  instrumentation.disable();
  await new Promise((resolve) => server.close(resolve));
  trace.disable();
  uninstallContext();
});

afterEach(() => spans.reset());

/** Waits until `n` spans of the instrumentation's scope have ended. */
async function serverSpans(n: number) {
  for (let i = 0; i < 100; i++) {
    const done = spans.getFinishedSpans().filter((s) => s.instrumentationScope.name === HTTP_SERVER_SCOPE);
    if (done.length >= n) return done;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`expected ${n} server spans, got ${spans.getFinishedSpans().length} spans`);
}

describe('HttpServerInstrumentation', () => {
  it('makes one SERVER span per request with the stable HTTP attributes, continuing the caller', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await fetch(`${base}/items/42?x=1`, {
      headers: {
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
        baggage: 'session.id=s-1',
        'user-agent': 'agent-test/1.0',
      },
    });
    expect(res.status).toBe(200);
    const [span] = await serverSpans(1);
    expect(span!.kind).toBe(SpanKind.SERVER);
    expect(span!.name).toBe('GET /items/:id');
    expect(span!.spanContext().traceId).toBe(traceId);
    expect(span!.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(span!.attributes).toMatchObject({
      'http.request.method': 'GET',
      'url.path': '/items/42',
      'url.scheme': 'http',
      'network.protocol.version': '1.1',
      'server.address': '127.0.0.1',
      'server.port': Number(new URL(base).port),
      'client.address': '127.0.0.1',
      'user_agent.original': 'agent-test/1.0',
      'http.route': '/items/:id',
      'http.response.status_code': 200,
    });
    expect(span!.status.code).toBe(SpanStatusCode.UNSET);
    // The handler ran with the server span active: its child joined the caller's trace.
    expect(seen.get('/items/42')).toEqual({ traceId, childRecorded: true, lean: false });
  });

  it('extracts the caller context into the root context it is given (lean mode: a persistent one)', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const headers = { traceparent: `00-${traceId}-00f067aa0ba902b7-01` };
    await fetch(`${base}/api-root`, { headers });
    expect(seen.get('/api-root')).toMatchObject({ traceId, lean: false });
    const config = instrumentation.getConfig();
    instrumentation.setConfig({ ...config, rootContext: LeanContext.ROOT });
    try {
      await fetch(`${base}/lean-root`, { headers });
    } finally {
      instrumentation.setConfig(config);
    }
    expect(seen.get('/lean-root')).toMatchObject({ traceId, childRecorded: true, lean: true });
  });

  it('marks 5xx answers and connections closed before an answer as errors', async () => {
    expect((await fetch(`${base}/fail`)).status).toBe(503);
    await expect(fetch(`${base}/hang`)).rejects.toThrow();
    const done = await serverSpans(2);
    const byPath = new Map(done.map((s) => [s.attributes['url.path'], s]));
    expect(byPath.get('/fail')?.status.code).toBe(SpanStatusCode.ERROR);
    expect(byPath.get('/fail')?.attributes['http.response.status_code']).toBe(503);
    expect(byPath.get('/hang')?.status).toEqual({
      code: SpanStatusCode.ERROR,
      message: 'connection closed before the response was sent',
    });
    expect(byPath.get('/hang')?.attributes['error.type']).toBe('connection_closed');
  });

  it('records a handler exception on the span and rethrows it', async () => {
    const errors: unknown[] = [];
    const listener = (error: unknown) => errors.push(error);
    process.once('uncaughtException', listener);
    await expect(fetch(`${base}/throw`, { signal: AbortSignal.timeout(300) })).rejects.toThrow();
    process.removeListener('uncaughtException', listener);
    const [span] = await serverSpans(1);
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'handler blew up' });
    expect(span!.events.map((e) => e.name)).toContain('exception');
    expect(errors).toHaveLength(1);
  });

  it('leaves untraced paths without a span, and suppresses spans made while handling them', async () => {
    expect((await fetch(`${base}/ping`)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 50));
    expect(spans.getFinishedSpans()).toEqual([]);
    expect(seen.get('/ping')?.childRecorded).toBe(false);
  });

  it('records http.server.request.duration with method, scheme, status and route', async () => {
    await fetch(`${base}/items/7`);
    await serverSpans(1);
    await metricReader.forceFlush();
    const metrics = metricExporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
    const duration = metrics.find((m) => m.descriptor.name === 'http.server.request.duration');
    expect(duration?.descriptor.unit).toBe('s');
    expect(duration?.dataPoints.map((p) => p.attributes)).toContainEqual({
      'http.request.method': 'GET',
      'url.scheme': 'http',
      'http.response.status_code': 200,
      'http.route': '/items/:id',
    });
  });

  it('stops tracing once disabled', async () => {
    instrumentation.disable();
    try {
      expect((await fetch(`${base}/items/1`)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 50));
      expect(
        spans.getFinishedSpans().filter((s) => s.instrumentationScope.name === HTTP_SERVER_SCOPE),
      ).toEqual([]);
    } finally {
      instrumentation.enable();
      createRequire(import.meta.url)('http');
    }
  });
});
