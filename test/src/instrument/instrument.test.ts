/**
 * End-to-end tests of the preload launcher from dist/: real apps in child processes, started with
 * `--require`, `--import` or the `agentrt-instrument` bin, exporting to a real OTLP/HTTP receiver.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import {
  type AppProcess,
  TEST_ROOT,
  childEnv,
  killAllApps,
  spawnApp,
  startHeaderRecorder,
} from './app-process.js';
import type { SpanRecord } from '@agentrt/collector';
import { freePort } from '@agentrt/kit';
import { type OtlpReceiver, startOtlpReceiver } from './otlp-receiver.js';

const KOA_APP = 'src/instrument/fixtures/koa-app.cjs';
const ESM_APP = 'src/instrument/fixtures/esm-app.mjs';
const HTTP_ESM_APP = 'src/instrument/fixtures/http-app.mjs';
const REDACT_APP = 'src/instrument/fixtures/redact-app.mjs';
const BIN = createRequire(import.meta.url)
  .resolve('@agentrt/instrument/package.json')
  .replace(/package\.json$/, 'bin/agentrt-instrument.js');
const FAST_EXPORT = { OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_BLRP_SCHEDULE_DELAY: '100' };
/** Flush deadline in tests that assert what the flush delivered (the default 2 s is for production). */
const SHUTDOWN_MS = '10000';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const traceparent = (traceId: string, parent: string) => `00-${traceId}-${parent}-01`;

async function get(app: AppProcess, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`http://127.0.0.1:${app.port}${path}`, { headers });
  return { status: res.status, body: (await res.text()) as string };
}

function serverSpan(receiver: OtlpReceiver, traceId: string): SpanRecord | undefined {
  return receiver.spans.find((s) => s.traceId === traceId && s.kind === 'SERVER');
}

let receiver: OtlpReceiver;
let downstream: Awaited<ReturnType<typeof startHeaderRecorder>>;

beforeEach(async () => {
  receiver = await startOtlpReceiver();
  downstream = await startHeaderRecorder();
});

afterEach(async () => {
  await killAllApps();
  await receiver.close();
  await downstream.close();
});

describe('node --require @agentrt/instrument (CommonJS Koa app, OTLP JSON)', { timeout: 90_000 }, () => {
  it.each(['otel', 'lean'] as const)(
    'AGENTRT_SDK=%s: continues incoming context, adds session.id, propagates outbound, exports logs with trace ids',
    async (sdk) => {
      const app = await spawnApp(['--require', '@agentrt/instrument', KOA_APP], {
        ...FAST_EXPORT,
        AGENTRT_SDK: sdk,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'koa-fixture',
        OTEL_RESOURCE_ATTRIBUTES:
          'cloud.resource_id=arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/r-1',
        AGENTRT_REDACT_ATTRIBUTES: 'user.email',
        DOWNSTREAM_URL: downstream.url,
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

      const s1 = await receiver.waitFor('server span of request 1', () => serverSpan(receiver, t1));
      expect(s1.parentSpanId).toBe(p1);
      expect(s1.attributes['session.id']).toBe('sess-from-header');
      expect(s1.resource.attributes['service.name']).toBe('koa-fixture');
      expect(s1.resource.attributes['cloud.resource_id']).toContain('runtime/r-1');
      expect(s1.resource.attributes['process.pid']).toBe(app.child.pid);

      const s2 = await receiver.waitFor('server span of request 2', () => serverSpan(receiver, t2));
      expect(s2.attributes['session.id']).toBe('sess-from-baggage');

      const s3 = await receiver.waitFor('server span of request 3', () => serverSpan(receiver, t3));
      expect(s3.parentSpanId).toBe(xrayParent);

      // session.id is on every span of the request, not just the server span
      const chat = await receiver.waitFor('chat span', () =>
        receiver.spans.find((s) => s.traceId === t1 && s.name === 'chat fake-model'),
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
      expect(receiver.spans.filter((s) => s.name.startsWith('middleware'))).toEqual([]);

      // outbound fetch carried the same trace, the baggage and the X-Ray headers
      const out1 = downstream.requests.find((h) => String(h.traceparent).includes(t1));
      expect(out1, JSON.stringify(downstream.requests)).toBeDefined();
      expect(String(out1!.baggage)).toContain('session.id=sess-from-header');
      expect(String(out1!['x-amzn-trace-id'])).toContain(`Root=1-${t1.slice(0, 8)}-${t1.slice(8)}`);
      expect(String(out1!['x-cloud-trace-id'])).toContain(`Root=1-${t1.slice(0, 8)}-${t1.slice(8)}`);
      const out2 = downstream.requests.find((h) => String(h.traceparent).includes(t2));
      expect(String(out2!.baggage)).toContain('session.id=sess-from-baggage');
      expect(String(out2!.baggage)).toContain('other=x');

      // console and pino lines became log records in the request's trace
      const consoleLog = await receiver.waitFor('console log record', () =>
        receiver.logs.find((l) => l.body === 'handling invocation first'),
      );
      expect(consoleLog.traceId).toBe(t1);
      expect(consoleLog.spanId).toMatch(/^[0-9a-f]{16}$/);
      expect(consoleLog.severityText).toBe('INFO');
      const pinoLog = await receiver.waitFor('pino log record', () =>
        receiver.logs.find((l) => l.body === 'pino says hi' && l.traceId === t1),
      );
      expect(pinoLog.spanId).toMatch(/^[0-9a-f]{16}$/);
      // console output itself is unchanged
      expect(app.stdout()).toContain('handling invocation first\n');

      // /ping produced no span at all
      expect(receiver.spans.filter((s) => s.attributes['url.path'] === '/ping')).toEqual([]);
      expect(receiver.contentTypes.get('/v1/traces')).toEqual(new Set(['application/json']));
      expect(receiver.contentTypes.get('/v1/logs')).toEqual(new Set(['application/json']));
    },
  );

  it('on SIGTERM flushes buffered spans within the deadline and exits by the signal', async () => {
    const app = await spawnApp(['--require', '@agentrt/instrument', KOA_APP], {
      // nothing is exported before shutdown: only the SIGTERM flush can deliver it
      OTEL_BSP_SCHEDULE_DELAY: '600000',
      OTEL_BLRP_SCHEDULE_DELAY: '600000',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
      AGENTRT_SHUTDOWN_TIMEOUT_MS: SHUTDOWN_MS,
    });
    const t = hex(16);
    await get(app, '/invocations', { traceparent: traceparent(t, hex(8)) });
    expect(receiver.spans).toEqual([]);
    const started = Date.now();
    app.child.kill('SIGTERM');
    const exit = await app.exited;
    expect(exit).toEqual({ code: null, signal: 'SIGTERM' });
    // prompt: bounded by the flush deadline (generous here, for a loaded CI machine)
    expect(Date.now() - started).toBeLessThan(Number(SHUTDOWN_MS) + 5_000);
    expect(serverSpan(receiver, t)).toBeDefined();
    // capture on: the content is kept, the secret is still redacted
    const chat = receiver.spans.find((s) => s.traceId === t && s.name === 'chat fake-model');
    expect(chat?.attributes['gen_ai.input.messages']).toContain('"role":"user"');
    expect(chat?.events.map((e) => e.name)).toContain('gen_ai.user.message');
    expect(chat?.attributes['http.request.header.authorization']).toBe('[REDACTED]');
    expect(receiver.logs.some((l) => l.traceId === t)).toBe(true);
  });

  /** Starts the Koa app with its own SIGTERM handler, serves one traced request, sends SIGTERM. */
  async function sigtermWithAppHandler(mode: '1' | 'exit') {
    const app = await spawnApp(['--require', '@agentrt/instrument', KOA_APP], {
      OTEL_BSP_SCHEDULE_DELAY: '600000',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
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
    await receiver.waitFor('flushed server span', () => serverSpan(receiver, traceId));
    expect(app.stdout()).toContain('APP SIGTERM');
    expect((await get(app, '/ping')).status).toBe(200);
    expect(app.child.exitCode).toBeNull();
  });

  it("holds an app handler's process.exit() until the flush is done", async () => {
    const { app, traceId } = await sigtermWithAppHandler('exit');
    expect(await app.exited).toEqual({ code: 0, signal: null });
    expect(app.stdout()).toContain('APP SIGTERM');
    expect(serverSpan(receiver, traceId)).toBeDefined();
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
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      });
      const t = hex(16);
      const p = hex(8);
      const res = await get(app, '/invocations', {
        traceparent: traceparent(t, p),
        baggage: 'session.id=sess-plain-http',
      });
      expect(JSON.parse(res.body)).toEqual({ traceId: t });
      const span = await receiver.waitFor('server span', () => serverSpan(receiver, t));
      expect(span.parentSpanId).toBe(p);
      expect(span.attributes['session.id']).toBe('sess-plain-http');
      expect(span.attributes['url.path']).toBe('/invocations');
      expect(receiver.contentTypes.get('/v1/traces')).toEqual(new Set(['application/json']));
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
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      AGENTRT_MIDDLEWARE_SPANS: 'true',
      DOWNSTREAM_URL: downstream.url,
    });
    const t = hex(16);
    const p = hex(8);
    const res = await get(app, '/invocations', {
      traceparent: traceparent(t, p),
      'x-amzn-bedrock-agentcore-runtime-session-id': 'sess-amzn-header',
    });
    expect(JSON.parse(res.body)).toEqual({ traceId: t, downstream: 200 });
    await get(app, '/ping');

    const span = await receiver.waitFor('server span', () => serverSpan(receiver, t));
    expect(span.parentSpanId).toBe(p);
    expect(span.attributes['session.id']).toBe('sess-amzn-header');
    expect(span.attributes['http.request.method']).toBe('GET');
    expect(span.resource.attributes['service.name']).toBe('@agentrt/test');
    // koa (CommonJS) imported from ESM is patched; AGENTRT_MIDDLEWARE_SPANS shows its middleware
    await receiver.waitFor('koa span', () =>
      receiver.spans.find((s) => s.traceId === t && s.name.startsWith('middleware')),
    );
    const client = await receiver.waitFor('fetch client span', () =>
      receiver.spans.find((s) => s.traceId === t && s.kind === 'CLIENT'),
    );
    const out = downstream.requests.find((h) => String(h.traceparent).includes(t));
    expect(String(out?.traceparent)).toContain(client.spanId);
    expect(String(out?.baggage)).toContain('session.id=sess-amzn-header');

    const consoleLog = await receiver.waitFor('console log', () =>
      receiver.logs.find((l) => l.body === 'esm handling invocation'),
    );
    expect(consoleLog.traceId).toBe(t);
    const winstonLog = await receiver.waitFor('winston log', () =>
      receiver.logs.find((l) => l.body === 'winston says hi'),
    );
    expect(winstonLog.traceId).toBe(t);
    expect(receiver.spans.filter((s) => s.attributes['url.path'] === '/ping')).toEqual([]);
    expect(receiver.contentTypes.get('/v1/traces')).toEqual(new Set(['application/x-protobuf']));
    expect(receiver.contentTypes.get('/v1/logs')).toEqual(new Set(['application/x-protobuf']));
  }
});

describe('agentrt-instrument bin', { timeout: 90_000 }, () => {
  it('runs the command instrumented and exits with its exit code', async () => {
    const app = await spawnApp([BIN, process.execPath, ESM_APP], {
      ...FAST_EXPORT,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    const t = hex(16);
    await get(app, '/invocations', { traceparent: traceparent(t, hex(8)) });
    await receiver.waitFor('server span', () => serverSpan(receiver, t));
    await get(app, '/exit?code=3');
    expect(await app.exited).toEqual({ code: 3, signal: null });
  });

  it('forwards SIGTERM to the command and exits by the same signal', async () => {
    const app = await spawnApp([BIN, process.execPath, ESM_APP], {
      OTEL_BSP_SCHEDULE_DELAY: '600000',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      AGENTRT_SHUTDOWN_TIMEOUT_MS: SHUTDOWN_MS,
    });
    const t = hex(16);
    await get(app, '/invocations', { traceparent: traceparent(t, hex(8)) });
    app.child.kill('SIGTERM');
    expect(await app.exited).toEqual({ code: null, signal: 'SIGTERM' });
    expect(serverSpan(receiver, t)).toBeDefined();
  });
});

describe('safety', { timeout: 90_000 }, () => {
  it('keeps serving when the collector is unreachable, says so once, and still exits promptly', async () => {
    const port = await freePort(); // nothing listens on it
    const app = await spawnApp(['--require', '@agentrt/instrument', KOA_APP], {
      ...FAST_EXPORT,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
    });
    for (let i = 0; i < 10; i++) {
      expect((await get(app, '/invocations')).status).toBe(200);
      await new Promise((r) => setTimeout(r, 30)); // spread requests over several export batches
    }
    const started = Date.now();
    app.child.kill('SIGTERM');
    expect((await app.exited).signal).toBe('SIGTERM');
    expect(Date.now() - started).toBeLessThan(8_000);
    const ours = app
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('agentrt-instrument:'));
    expect(ours.length).toBeGreaterThan(0);
    expect(ours.length).toBeLessThan(6);
  });

  it('gives up on a collector that never answers after AGENTRT_SHUTDOWN_TIMEOUT_MS', async () => {
    const sockets = new Set<Socket>();
    const blackHole: Server = createServer((s) => sockets.add(s));
    blackHole.listen(0, '127.0.0.1');
    await once(blackHole, 'listening');
    try {
      const app = await spawnApp(['--require', '@agentrt/instrument', KOA_APP], {
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(blackHole.address() as AddressInfo).port}`,
        AGENTRT_SHUTDOWN_TIMEOUT_MS: '500',
      });
      await get(app, '/invocations');
      const started = Date.now();
      app.child.kill('SIGTERM');
      expect((await app.exited).signal).toBe('SIGTERM');
      // 500 ms deadline; the bound leaves room for a loaded machine, not for a hang
      expect(Date.now() - started).toBeLessThan(8_000);
    } finally {
      for (const s of sockets) s.destroy();
      blackHole.close();
    }
  });

  it('leaves `node -e` / `-p` scripts working under either flag (NODE_OPTIONS reaches them too)', () => {
    for (const flag of ['--require', '--import']) {
      for (const [mode, script, expected] of [
        ['-e', "require('fs'); require('node:http'); console.log('required builtins')", 'required builtins'],
        ['-p', "require('os').platform()", process.platform],
      ] as const) {
        const run = spawnSync(process.execPath, [flag, '@agentrt/instrument', mode, script], {
          cwd: TEST_ROOT,
          env: childEnv({
            OTEL_TRACES_EXPORTER: 'none',
            OTEL_LOGS_EXPORTER: 'none',
            OTEL_METRICS_EXPORTER: 'none',
          }),
          encoding: 'utf8',
          timeout: 30_000,
        });
        expect({ flag, mode, status: run.status, stderr: run.stderr }).toEqual({
          flag,
          mode,
          status: 0,
          stderr: '',
        });
        expect(run.stdout.trim()).toBe(expected);
      }
    }
  });

  it.each(['otel', 'lean'] as const)(
    'AGENTRT_SDK=%s loads one copy of each OpenTelemetry package at start-up (start-up time is module count)',
    (sdk) => {
      const script = `require('@agentrt/instrument');
      const roots = {};
      for (const file of Object.keys(require.cache)) {
        const m = /^(.*node_modules\\/(@opentelemetry\\/[^/]+))\\//.exec(file);
        if (m) (roots[m[2]] ??= new Set()).add(m[1]);
      }
      console.log(JSON.stringify(Object.fromEntries(Object.entries(roots).map(([k, v]) => [k, v.size]))));`;
      const run = spawnSync(process.execPath, ['-e', script], {
        cwd: TEST_ROOT,
        env: childEnv({ OTEL_TRACES_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none', AGENTRT_SDK: sdk }),
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(run.stderr).toBe('');
      const copies = JSON.parse(run.stdout) as Record<string, number>;
      // lean mode (the default) loads no trace SDK at all
      expect(copies['@opentelemetry/sdk-trace-base']).toBe(sdk === 'otel' ? 1 : undefined);
      expect(copies['@opentelemetry/instrumentation']).toBe(1);
      // sdk-logs 0.219 (the line agent frameworks pin) brings its own core/resources 2.8; nothing else may.
      expect(copies['@opentelemetry/core']).toBeLessThanOrEqual(2);
      expect(copies['@opentelemetry/resources']).toBeLessThanOrEqual(2);
      // api-logs is left out: the log instrumentations (pino, winston, openai) pin newer patch versions
      // than instrumentation 0.223.0 does, and the package is 8 small modules.
      const { '@opentelemetry/api-logs': _apiLogs, ...others } = copies;
      expect(Math.max(...Object.values(others))).toBeLessThanOrEqual(2);
    },
  );

  it('OTEL_SDK_DISABLED=true exports nothing and the app works', async () => {
    const app = await spawnApp(['--require', '@agentrt/instrument', KOA_APP], {
      ...FAST_EXPORT,
      OTEL_SDK_DISABLED: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    });
    expect((await get(app, '/invocations')).status).toBe(200);
    app.child.kill('SIGTERM');
    await app.exited;
    expect(receiver.requests).toBe(0);
  });

  it('a bad setting warns once and falls back to the default; always_off sampling drops spans, not logs', async () => {
    const app = await spawnApp(['--require', '@agentrt/instrument', KOA_APP], {
      ...FAST_EXPORT,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_METRIC_EXPORT_INTERVAL: 'often',
      OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'http,undici,koa,pino,no-such-library',
      AGENTRT_SHUTDOWN_TIMEOUT_MS: SHUTDOWN_MS,
      OTEL_TRACES_SAMPLER: 'always_off',
    });
    await get(app, '/invocations', { 'x-test-name': 'sampled-out' });
    await get(app, '/invocations', { 'x-test-name': 'sampled-out' });
    app.child.kill('SIGTERM');
    await app.exited;
    const warnings = app
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('agentrt-instrument:'));
    expect(warnings.filter((l) => l.includes('OTEL_EXPORTER_OTLP_PROTOCOL="grpc"'))).toHaveLength(1);
    expect(warnings.filter((l) => l.includes('OTEL_METRIC_EXPORT_INTERVAL="often"'))).toHaveLength(1);
    expect(
      warnings.filter((l) => l.includes('instrumentation "no-such-library" is not available')),
    ).toHaveLength(1);
    expect(receiver.spans).toEqual([]);
    expect(receiver.logs.filter((l) => l.body === 'handling invocation sampled-out')).toHaveLength(2);
    // fell back to protobuf
    expect(receiver.contentTypes.get('/v1/logs')).toEqual(new Set(['application/x-protobuf']));
  });
});

describe('credentials in URLs (issue #14)', { timeout: 90_000 }, () => {
  // Our lean server span records url.path only; the upstream one records the query too.
  // Outgoing http spans: upstream's (otel mode, or whenever instrumentation-http is loaded for the
  // server spans) sees userinfo in the request options and writes REDACTED:REDACTED@; lean mode's,
  // from the diagnostics channel, sees only the ClientRequest, where the userinfo has become an
  // Authorization header: its url.full has none.
  const runs = [
    ['agentrt', 'lean'],
    ['upstream', 'lean'],
    ['agentrt', 'otel'],
  ] as const;
  for (const [serverSpans, sdk] of runs) {
    it(`AGENTRT_SDK=${sdk}: redacts sensitive query values and userinfo on server (${serverSpans}), fetch and http client spans`, async () => {
      const userinfo = sdk === 'lean' && serverSpans === 'agentrt' ? '' : 'REDACTED:REDACTED@';
      const app = await spawnApp(['--require', '@agentrt/instrument', REDACT_APP], {
        AGENTRT_SDK: sdk,
        ...FAST_EXPORT,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        AGENTRT_HTTP_SERVER_SPANS: serverSpans,
        AGENTRT_REDACT_QUERY_PARAMS: 'session_key',
        DOWNSTREAM_URL: downstream.url,
      });
      const t = hex(16);
      const res = await get(app, '/invocations?session_key=server-secret&token=server-token&lang=en', {
        traceparent: traceparent(t, hex(8)),
      });
      expect(res.status).toBe(200);
      // The calls went out with their credentials (redaction is in telemetry only).
      expect(downstream.requests).toHaveLength(2);
      const spans = await receiver.waitFor('server and two client spans', () => {
        const of = receiver.spans.filter((s) => s.traceId === t);
        return of.length >= 3 ? of : undefined;
      });
      const server = spans.find((s) => s.kind === 'SERVER')!;
      expect(server.attributes['url.path']).toBe('/invocations');
      if (serverSpans === 'upstream')
        expect(server.attributes['url.query']).toBe('session_key=REDACTED&token=REDACTED&lang=en');
      const clients = spans.filter((s) => s.kind === 'CLIENT').map((s) => String(s.attributes['url.full']));
      expect(clients.sort()).toEqual(
        [
          `${downstream.url}?access_token=REDACTED&q=weather&X-Amz-Signature=REDACTED`,
          `${downstream.url.replace('http://', `http://${userinfo}`)}?password=REDACTED&api_key=REDACTED&X-Amz-Security-Token=REDACTED&page=2`,
        ].sort(),
      );
      const exported = JSON.stringify(receiver.spans);
      for (const secret of [
        'fetch-secret',
        'fetch-sig',
        'http-secret',
        'http-key',
        'http-token',
        'http-pw',
        'server-secret',
        'server-token',
      ])
        expect(exported, secret).not.toContain(secret);
    });
  }
});
