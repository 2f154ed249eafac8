import { createRequire } from 'node:module';
import type * as Http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ROOT_CONTEXT, type Span, TraceFlags, context, trace } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClientInstrumentation } from './http-client.js';
import { installGlobalContext, memoryMetrics, memorySpans } from './memory-telemetry.test-util.js';

// Parity of lean mode's outgoing-HTTP spans (diagnostics channels) with the upstream
// @opentelemetry/instrumentation-http the otel mode uses: the same requests, made through
// `http.request`/`http.get` against a real server, under each in turn; spans, the headers the
// server received and the client duration histogram compared field by field.

const http = createRequire(import.meta.url)('http') as typeof Http;
let server: Http.Server;
let port: number;
let closedPort: number;
let uninstallContext: () => void;
/** Headers the server received, by the request's `n` query parameter. */
const received = new Map<string, Http.IncomingHttpHeaders>();

beforeAll(async () => {
  uninstallContext = installGlobalContext();
  server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    received.set(url.searchParams.get('n') ?? url.pathname, req.headers);
    res.statusCode = url.pathname === '/missing' ? 404 : url.pathname === '/post' ? 201 : 200;
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  const closed = http.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  closedPort = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  uninstallContext();
});

/** One request through the (possibly patched) module; resolves when its response ended or it failed. */
function request(make: (done: () => void) => Http.ClientRequest): Promise<void> {
  return new Promise((resolve) => {
    const req = make(resolve);
    req.on('error', () => resolve());
  });
}
const consume = (done: () => void) => (res: Http.IncomingMessage) => {
  res.resume();
  res.on('end', () => setImmediate(done));
};

const unsampledParent = trace.setSpanContext(ROOT_CONTEXT, {
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  spanId: '00f067aa0ba902b7',
  traceFlags: TraceFlags.NONE,
  isRemote: true,
});

/** The requests both instrumentations see: what each exercises is in its `n`. */
async function scenarios(tracer: ReturnType<typeof trace.getTracer>) {
  const parent: Span = tracer.startSpan('parent');
  await context.with(trace.setSpan(context.active(), parent), () =>
    request((done) =>
      http.get(
        `http://127.0.0.1:${port}/items/1?n=get&sig=secret&x=a%20b`,
        { headers: { 'user-agent': 'parity/1.0' } },
        consume(done),
      ),
    ),
  );
  parent.end();
  await request((done) => {
    const req = http.request(
      { hostname: '127.0.0.1', port, path: '/post?n=post', method: 'POST' },
      consume(done),
    );
    req.end('{"a":1}');
    return req;
  });
  await request((done) => http.get(`http://127.0.0.1:${port}/missing?n=missing`, consume(done)));
  await request((done) =>
    http.request({ host: '127.0.0.1', port, path: '/x?n=other', method: 'PROPFIND' }, consume(done)).end(),
  );
  await request((done) => http.get(`http://127.0.0.1:${closedPort}/refused`, consume(done)));
  await context.with(unsampledParent, () =>
    request((done) => http.get(`http://127.0.0.1:${port}/u?n=unsampled`, consume(done))),
  );
  await context.with(suppressTracing(ROOT_CONTEXT), () =>
    request((done) => http.get(`http://127.0.0.1:${port}/s?n=suppressed`, consume(done))),
  );
  await request((done) => http.get(`http://127.0.0.1:${port}/ping`, consume(done)));
}

/** A span as compared: everything but ids and times; its parent by name. */
function comparable(span: ReadableSpan, all: readonly ReadableSpan[]) {
  const parent = all.find((s) => s.spanContext().spanId === span.parentSpanContext?.spanId);
  return {
    name: span.name,
    kind: span.kind,
    parent: parent?.name ?? span.parentSpanContext?.spanId,
    attributes: span.attributes,
    status: span.status,
    events: span.events.map((e) => ({
      name: e.name,
      attributes: { ...e.attributes, 'exception.stacktrace': typeof e.attributes?.['exception.stacktrace'] },
    })),
  };
}

/** Headers the server got, traceparent reduced to whether it names the client span. */
function propagated(spans: readonly ReadableSpan[]) {
  const out: Record<string, unknown> = {};
  for (const [n, headers] of received) {
    const tp = headers.traceparent as string | undefined;
    const [, traceId, spanId, flags] = tp?.split('-') ?? [];
    const span = spans.find((s) => s.spanContext().spanId === spanId);
    out[n] = tp === undefined ? 'none' : { span: span?.name ?? `not recorded (${traceId})`, flags };
  }
  received.clear();
  return out;
}

async function run(instrumentation: HttpInstrumentation | HttpClientInstrumentation) {
  const { spans, tracerProvider } = memorySpans();
  const { exporter, reader, meterProvider } = memoryMetrics();
  instrumentation.setTracerProvider(tracerProvider);
  instrumentation.setMeterProvider(meterProvider);
  instrumentation.enable();
  createRequire(import.meta.url)('http'); // the upstream hook patches on require
  try {
    await scenarios(tracerProvider.getTracer('test'));
  } finally {
    instrumentation.disable();
  }
  await reader.forceFlush();
  const finished = spans.getFinishedSpans();
  const points = exporter
    .getMetrics()
    .flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))
    .filter((m) => m.descriptor.name === 'http.client.request.duration')
    .flatMap((m) =>
      m.dataPoints.map((p) => ({
        descriptor: { ...m.descriptor, name: m.descriptor.name },
        attributes: p.attributes,
        count: (p.value as { count: number }).count,
      })),
    );
  return {
    spans: finished
      .map((s) => comparable(s, finished))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    headers: propagated(finished),
    points: points.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
  };
}

describe('HttpClientInstrumentation (lean mode, diagnostics channels)', () => {
  it('makes the spans, propagation headers and duration points instrumentation-http makes', async () => {
    const upstream = await run(
      new HttpInstrumentation({
        enabled: false,
        disableIncomingRequestInstrumentation: true,
        ignoreOutgoingRequestHook: (req) => (req.path ?? '').split('?')[0] === '/ping',
      }),
    );
    const ours = await run(new HttpClientInstrumentation({ enabled: false, untracedPaths: ['/ping'] }));
    // the scenarios did what they claim (an empty comparison would pass too)
    expect(upstream.spans.map((s) => s.name).sort()).toEqual([
      'GET',
      'GET',
      'GET',
      'POST',
      'PROPFIND',
      'parent',
    ]);
    expect(upstream.headers).toMatchObject({
      get: { span: 'GET', flags: '01' },
      unsampled: { span: 'not recorded (4bf92f3577b34da6a3ce929d0e0e4736)', flags: '00' },
      suppressed: 'none',
      '/ping': 'none',
    });
    expect(ours.spans).toEqual(upstream.spans);
    expect(ours.headers).toEqual(upstream.headers);
    expect(ours.points).toEqual(upstream.points);
  });
});
