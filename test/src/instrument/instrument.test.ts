/**
 * End-to-end tests of the preload launcher from dist/: real apps in child processes, started with
 * `--require` or `--import`, exporting to a real OTLP/HTTP receiver. The bin, failure modes and URL
 * credentials: instrument-safety.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { spawnApp } from './app-process.js';
import {
  ESM_APP,
  FAST_EXPORT,
  HTTP_ESM_APP,
  KOA_APP,
  SHUTDOWN_MS,
  get,
  hex,
  serverSpan,
  traceparent,
  useLauncherTestContext,
} from './launcher-harness.js';

const ctx = useLauncherTestContext();

describe('node --require @agentrt/instrument (CommonJS Koa app, OTLP JSON)', { timeout: 90_000 }, () => {
  it.each(['otel', 'lean'] as const)(
    'AGENTRT_SDK=%s: continues incoming context, adds session.id, propagates outbound, exports logs with trace ids',
    async (sdk) => {
      const app = await spawnApp(['--require', '@agentrt/instrument', KOA_APP], {
        ...FAST_EXPORT,
        AGENTRT_SDK: sdk,
        OTEL_EXPORTER_OTLP_ENDPOINT: ctx.receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'koa-fixture',
        OTEL_RESOURCE_ATTRIBUTES:
          'cloud.resource_id=arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/r-1',
        AGENTRT_REDACT_ATTRIBUTES: 'user.email',
        DOWNSTREAM_URL: ctx.downstream.url,
      });

      // 1. traceparent + our session header (no baggage header at all)
      const t1 = hex(16);
      const p1 = hex(8);
      const r1 = await get(app, '/invocations', {
        traceparent: traceparent(t1, p1),
        'x-cloud-agent-runtime-session-id': 'sess-from-header',
        'x-test-name': 'first',
      });
      expect(r1.status).toBe(200);
      expect(JSON.parse(r1.body).traceId).toBe(t1);

      // 2. baggage session.id
      const t2 = hex(16);
      await get(app, '/invocations', {
        traceparent: traceparent(t2, hex(8)),
        baggage: 'session.id=sess-from-baggage,other=x',
      });

      // 3. X-Cloud-Trace-Id only (X-Ray format)
      const xrayRoot = `1-${hex(4)}-${hex(12)}`;
      const xrayParent = hex(8);
      const r3 = await get(app, '/invocations', {
        'x-cloud-trace-id': `Root=${xrayRoot};Parent=${xrayParent};Sampled=1`,
      });
      const t3 = xrayRoot.slice(2).replace('-', '');
      expect(JSON.parse(r3.body).traceId).toBe(t3);

      // 4. health check
      expect((await get(app, '/ping')).status).toBe(200);

      const s1 = await ctx.receiver.waitFor('server span of request 1', () => serverSpan(ctx.receiver, t1));
      expect(s1.parentSpanId).toBe(p1);
      expect(s1.attributes['session.id']).toBe('sess-from-header');
      expect(s1.resource.attributes['service.name']).toBe('koa-fixture');
      expect(s1.resource.attributes['cloud.resource_id']).toContain('runtime/r-1');
      expect(s1.resource.attributes['process.pid']).toBe(app.child.pid);

      const s2 = await ctx.receiver.waitFor('server span of request 2', () => serverSpan(ctx.receiver, t2));
      expect(s2.attributes['session.id']).toBe('sess-from-baggage');

      const s3 = await ctx.receiver.waitFor('server span of request 3', () => serverSpan(ctx.receiver, t3));
      expect(s3.parentSpanId).toBe(xrayParent);

      // session.id is on every span of the request, not just the server span
      const chat = await ctx.receiver.waitFor('chat span', () =>
        ctx.receiver.spans.find((s) => s.traceId === t1 && s.name === 'chat fake-model'),
      );
      expect(chat.attributes['session.id']).toBe('sess-from-header');
      // content capture is off by default: content attributes and content events are gone
      expect(chat.attributes['gen_ai.operation.name']).toBe('chat');
      expect(chat.attributes).not.toHaveProperty('gen_ai.input.messages');
      expect(chat.attributes).not.toHaveProperty('gen_ai.output.messages');
      expect(chat.attributes).not.toHaveProperty('gen_ai.system_instructions');
      expect(chat.events.map((e) => e.name)).toEqual(['kept.event']);
      expect(chat.events[0]?.attributes).toEqual({ other: 1 });
      // secrets are redacted, always and by list
      expect(chat.attributes['http.request.header.authorization']).toBe('[REDACTED]');
      expect(chat.attributes['user.email']).toBe('[REDACTED]');

      // one span per request from the framework: Koa middleware spans are off by default
      expect(ctx.receiver.spans.filter((s) => s.name.startsWith('middleware'))).toEqual([]);

      // outbound fetch carried the same trace, the baggage and the X-Ray headers
      const out1 = ctx.downstream.requests.find((h) => String(h.traceparent).includes(t1));
      expect(out1, JSON.stringify(ctx.downstream.requests)).toBeDefined();
      expect(String(out1!.baggage)).toContain('session.id=sess-from-header');
      expect(String(out1!['x-amzn-trace-id'])).toContain(`Root=1-${t1.slice(0, 8)}-${t1.slice(8)}`);
      expect(String(out1!['x-cloud-trace-id'])).toContain(`Root=1-${t1.slice(0, 8)}-${t1.slice(8)}`);
      const out2 = ctx.downstream.requests.find((h) => String(h.traceparent).includes(t2));
      expect(String(out2!.baggage)).toContain('session.id=sess-from-baggage');
      expect(String(out2!.baggage)).toContain('other=x');

      // console and pino lines became log records in the request's trace
      const consoleLog = await ctx.receiver.waitFor('console log record', () =>
        ctx.receiver.logs.find((l) => l.body === 'handling invocation first'),
      );
      expect(consoleLog.traceId).toBe(t1);
      expect(consoleLog.spanId).toMatch(/^[0-9a-f]{16}$/);
      expect(consoleLog.severityText).toBe('INFO');
      const pinoLog = await ctx.receiver.waitFor('pino log record', () =>
        ctx.receiver.logs.find((l) => l.body === 'pino says hi' && l.traceId === t1),
      );
      expect(pinoLog.spanId).toMatch(/^[0-9a-f]{16}$/);
      // console output itself is unchanged
      expect(app.stdout()).toContain('handling invocation first\n');

      // /ping produced no span at all
      expect(ctx.receiver.spans.filter((s) => s.attributes['url.path'] === '/ping')).toEqual([]);
      expect(ctx.receiver.contentTypes.get('/v1/traces')).toEqual(new Set(['application/json']));
      expect(ctx.receiver.contentTypes.get('/v1/logs')).toEqual(new Set(['application/json']));
    },
  );

  it('on SIGTERM flushes buffered spans within the deadline and exits by the signal', async () => {
    const app = await spawnApp(['--require', '@agentrt/instrument', KOA_APP], {
      // nothing is exported before shutdown: only the SIGTERM flush can deliver it
      OTEL_BSP_SCHEDULE_DELAY: '600000',
      OTEL_BLRP_SCHEDULE_DELAY: '600000',
      OTEL_EXPORTER_OTLP_ENDPOINT: ctx.receiver.url,
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
      AGENTRT_SHUTDOWN_TIMEOUT_MS: SHUTDOWN_MS,
    });
    const t = hex(16);
    await get(app, '/invocations', { traceparent: traceparent(t, hex(8)) });
    expect(ctx.receiver.spans).toEqual([]);
    const started = Date.now();
    app.child.kill('SIGTERM');
    const exit = await app.exited;
    expect(exit).toEqual({ code: null, signal: 'SIGTERM' });
    // prompt: bounded by the flush deadline (generous here, for a loaded CI machine)
    expect(Date.now() - started).toBeLessThan(Number(SHUTDOWN_MS) + 5_000);
    expect(serverSpan(ctx.receiver, t)).toBeDefined();
    // capture on: the content is kept, the secret is still redacted
    const chat = ctx.receiver.spans.find((s) => s.traceId === t && s.name === 'chat fake-model');
    expect(chat?.attributes['gen_ai.input.messages']).toContain('"role":"user"');
    expect(chat?.events.map((e) => e.name)).toContain('gen_ai.user.message');
    expect(chat?.attributes['http.request.header.authorization']).toBe('[REDACTED]');
    expect(ctx.receiver.logs.some((l) => l.traceId === t)).toBe(true);
  });

  /** Starts the Koa app with its own SIGTERM handler, serves one traced request, sends SIGTERM. */
  async function sigtermWithAppHandler(mode: '1' | 'exit') {
    const app = await spawnApp(['--require', '@agentrt/instrument', KOA_APP], {
      OTEL_BSP_SCHEDULE_DELAY: '600000',
      OTEL_EXPORTER_OTLP_ENDPOINT: ctx.receiver.url,
      AGENTRT_SHUTDOWN_TIMEOUT_MS: SHUTDOWN_MS,
      FIXTURE_OWN_SIGTERM: mode,
    });
    const traceId = hex(16);
    await get(app, '/invocations', { traceparent: traceparent(traceId, hex(8)) });
    app.child.kill('SIGTERM');
    return { app, traceId };
  }

  it('flushes but does not exit on SIGTERM when the app has its own SIGTERM handler', async () => {
    const { app, traceId } = await sigtermWithAppHandler('1');
    await ctx.receiver.waitFor('flushed server span', () => serverSpan(ctx.receiver, traceId));
    expect(app.stdout()).toContain('APP SIGTERM');
    expect((await get(app, '/ping')).status).toBe(200);
    expect(app.child.exitCode).toBeNull();
  });

  it("holds an app handler's process.exit() until the flush is done", async () => {
    const { app, traceId } = await sigtermWithAppHandler('exit');
    expect(await app.exited).toEqual({ code: 0, signal: null });
    expect(app.stdout()).toContain('APP SIGTERM');
    expect(serverSpan(ctx.receiver, traceId)).toBeDefined();
  });
});

describe('ES module apps under --import or --require (OTLP protobuf)', { timeout: 90_000 }, () => {
  it.each(['otel', 'lean'] as const)(
    'AGENTRT_SDK=%s: --import instruments the ESM app and exports protobuf traces and logs',
    async (sdk) => {
      await checkEsmApp('--import', 'auto', sdk);
    },
  );

  it('--import patches ES modules through the module.register loader thread too', async () => {
    await checkEsmApp('--import', 'async');
  });

  it('--require instruments the same ESM app (one flag for both module systems)', async () => {
    await checkEsmApp('--require', 'auto');
  });

  it.each(['auto', 'async'] as const)(
    '--require patches a plain node:http ES module server (AGENTRT_ESM_LOADER=%s)',
    async (esmLoader) => {
      const app = await spawnApp(['--require', '@agentrt/instrument', HTTP_ESM_APP], {
        ...FAST_EXPORT,
        AGENTRT_ESM_LOADER: esmLoader,
        OTEL_EXPORTER_OTLP_ENDPOINT: ctx.receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      });
      const t = hex(16);
      const p = hex(8);
      const res = await get(app, '/invocations', {
        traceparent: traceparent(t, p),
        baggage: 'session.id=sess-plain-http',
      });
      expect(JSON.parse(res.body)).toEqual({ traceId: t });
      const span = await ctx.receiver.waitFor('server span', () => serverSpan(ctx.receiver, t));
      expect(span.parentSpanId).toBe(p);
      expect(span.attributes['session.id']).toBe('sess-plain-http');
      expect(span.attributes['url.path']).toBe('/invocations');
      expect(ctx.receiver.contentTypes.get('/v1/traces')).toEqual(new Set(['application/json']));
      // the loader thread (async) runs --require preloads too; it must not start a second SDK
      expect(app.stderr()).not.toContain('already been initialized');
      expect(app.stderr()).not.toContain('agentrt-instrument:');
    },
  );

  async function checkEsmApp(
    flag: '--import' | '--require',
    esmLoader: 'auto' | 'async',
    sdk: 'otel' | 'lean' = 'otel',
  ) {
    const app = await spawnApp([flag, '@agentrt/instrument', ESM_APP], {
      ...FAST_EXPORT,
      AGENTRT_SDK: sdk,
      AGENTRT_ESM_LOADER: esmLoader,
      OTEL_EXPORTER_OTLP_ENDPOINT: ctx.receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      AGENTRT_MIDDLEWARE_SPANS: 'true',
      DOWNSTREAM_URL: ctx.downstream.url,
    });
    const t = hex(16);
    const p = hex(8);
    const res = await get(app, '/invocations', {
      traceparent: traceparent(t, p),
      'x-amzn-bedrock-agentcore-runtime-session-id': 'sess-amzn-header',
    });
    expect(JSON.parse(res.body)).toEqual({ traceId: t, downstream: 200 });
    await get(app, '/ping');

    const span = await ctx.receiver.waitFor('server span', () => serverSpan(ctx.receiver, t));
    expect(span.parentSpanId).toBe(p);
    expect(span.attributes['session.id']).toBe('sess-amzn-header');
    expect(span.attributes['http.request.method']).toBe('GET');
    expect(span.resource.attributes['service.name']).toBe('@agentrt/test');
    // koa (CommonJS) imported from ESM is patched; AGENTRT_MIDDLEWARE_SPANS shows its middleware
    await ctx.receiver.waitFor('koa span', () =>
      ctx.receiver.spans.find((s) => s.traceId === t && s.name.startsWith('middleware')),
    );
    const client = await ctx.receiver.waitFor('fetch client span', () =>
      ctx.receiver.spans.find((s) => s.traceId === t && s.kind === 'CLIENT'),
    );
    const out = ctx.downstream.requests.find((h) => String(h.traceparent).includes(t));
    expect(String(out?.traceparent)).toContain(client.spanId);
    expect(String(out?.baggage)).toContain('session.id=sess-amzn-header');

    const consoleLog = await ctx.receiver.waitFor('console log', () =>
      ctx.receiver.logs.find((l) => l.body === 'esm handling invocation'),
    );
    expect(consoleLog.traceId).toBe(t);
    const winstonLog = await ctx.receiver.waitFor('winston log', () =>
      ctx.receiver.logs.find((l) => l.body === 'winston says hi'),
    );
    expect(winstonLog.traceId).toBe(t);
    expect(ctx.receiver.spans.filter((s) => s.attributes['url.path'] === '/ping')).toEqual([]);
    expect(ctx.receiver.contentTypes.get('/v1/traces')).toEqual(new Set(['application/x-protobuf']));
    expect(ctx.receiver.contentTypes.get('/v1/logs')).toEqual(new Set(['application/x-protobuf']));
  }
});
