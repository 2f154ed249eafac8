/**
 * End-to-end tests of the launcher's bin and of what must not break an app: an unreachable or
 * silent collector, `node -e`, duplicate OpenTelemetry copies, bad settings, and credentials in
 * URLs. Real apps in child processes, a real OTLP/HTTP receiver.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { freePort } from '@agentrt/kit';
import { TEST_ROOT, childEnv, spawnApp } from './app-process.js';
import {
  BIN,
  ESM_APP,
  FAST_EXPORT,
  KOA_APP,
  REDACT_APP,
  SHUTDOWN_MS,
  get,
  hex,
  serverSpan,
  traceparent,
  useLauncherTestContext,
} from './launcher-harness.js';

const ctx = useLauncherTestContext();

describe('agentrt-instrument bin', { timeout: 90_000 }, () => {
  it('runs the command instrumented and exits with its exit code', async () => {
    const app = await spawnApp([BIN, process.execPath, ESM_APP], {
      ...FAST_EXPORT,
      OTEL_EXPORTER_OTLP_ENDPOINT: ctx.receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    const t = hex(16);
    await get(app, '/invocations', { traceparent: traceparent(t, hex(8)) });
    await ctx.receiver.waitFor('server span', () => serverSpan(ctx.receiver, t));
    await get(app, '/exit?code=3');
    expect(await app.exited).toEqual({ code: 3, signal: null });
  });

  it('forwards SIGTERM to the command and exits by the same signal', async () => {
    const app = await spawnApp([BIN, process.execPath, ESM_APP], {
      OTEL_BSP_SCHEDULE_DELAY: '600000',
      OTEL_EXPORTER_OTLP_ENDPOINT: ctx.receiver.url,
      AGENTRT_SHUTDOWN_TIMEOUT_MS: SHUTDOWN_MS,
    });
    const t = hex(16);
    await get(app, '/invocations', { traceparent: traceparent(t, hex(8)) });
    app.child.kill('SIGTERM');
    expect(await app.exited).toEqual({ code: null, signal: 'SIGTERM' });
    expect(serverSpan(ctx.receiver, t)).toBeDefined();
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
      OTEL_EXPORTER_OTLP_ENDPOINT: ctx.receiver.url,
    });
    expect((await get(app, '/invocations')).status).toBe(200);
    app.child.kill('SIGTERM');
    await app.exited;
    expect(ctx.receiver.requests).toBe(0);
  });

  it('a bad setting warns once and falls back to the default; always_off sampling drops spans, not logs', async () => {
    const app = await spawnApp(['--require', '@agentrt/instrument', KOA_APP], {
      ...FAST_EXPORT,
      OTEL_EXPORTER_OTLP_ENDPOINT: ctx.receiver.url,
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
    expect(ctx.receiver.spans).toEqual([]);
    expect(ctx.receiver.logs.filter((l) => l.body === 'handling invocation sampled-out')).toHaveLength(2);
    // fell back to protobuf
    expect(ctx.receiver.contentTypes.get('/v1/logs')).toEqual(new Set(['application/x-protobuf']));
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
        OTEL_EXPORTER_OTLP_ENDPOINT: ctx.receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        AGENTRT_HTTP_SERVER_SPANS: serverSpans,
        AGENTRT_REDACT_QUERY_PARAMS: 'session_key',
        DOWNSTREAM_URL: ctx.downstream.url,
      });
      const t = hex(16);
      const res = await get(app, '/invocations?session_key=server-secret&token=server-token&lang=en', {
        traceparent: traceparent(t, hex(8)),
      });
      expect(res.status).toBe(200);
      // The calls went out with their credentials (redaction is in telemetry only).
      expect(ctx.downstream.requests).toHaveLength(2);
      const spans = await ctx.receiver.waitFor('server and two client spans', () => {
        const of = ctx.receiver.spans.filter((s) => s.traceId === t);
        return of.length >= 3 ? of : undefined;
      });
      const server = spans.find((s) => s.kind === 'SERVER')!;
      expect(server.attributes['url.path']).toBe('/invocations');
      if (serverSpans === 'upstream')
        expect(server.attributes['url.query']).toBe('session_key=REDACTED&token=REDACTED&lang=en');
      const clients = spans.filter((s) => s.kind === 'CLIENT').map((s) => String(s.attributes['url.full']));
      expect(clients.sort()).toEqual(
        [
          `${ctx.downstream.url}?access_token=REDACTED&q=weather&X-Amz-Signature=REDACTED`,
          `${ctx.downstream.url.replace('http://', `http://${userinfo}`)}?password=REDACTED&api_key=REDACTED&X-Amz-Security-Token=REDACTED&page=2`,
        ].sort(),
      );
      const exported = JSON.stringify(ctx.receiver.spans);
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
