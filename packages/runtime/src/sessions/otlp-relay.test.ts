// The per-session telemetry relay against what a hostile session would send it: a real relay on a
// Unix socket (as the sandbox bridges it), a real OTLP/HTTP endpoint on 127.0.0.1:0 behind it, and
// exports from the official OTLP/JSON exporters or written by hand where an SDK cannot produce them.
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, type IncomingHttpHeaders, type Server, createServer, request } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../config.js';
import { readBody } from '../http/http-util.js';
import { type LogRecord, createLogger } from '../logger.js';
import { RUNTIME_SERVICE_NAME } from '../telemetry/otlp-providers.js';
import {
  type OtlpRelay,
  type OtlpRelayOptions,
  type RelayIdentity,
  createOtlpRelay,
  tenantServiceName,
} from './otlp-relay.js';

type KeyValue = { key: string; value: { stringValue?: string; intValue?: number } };
type Json = Record<string, unknown>;

const SESSION = 'session-of-this-worker-0000000000000001';
const OTHER = 'session-of-someone-else-000000000000002';
const WHO: RelayIdentity = {
  runtimeArn: 'arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/tenant-abcdefghij',
  runtimeId: 'tenant-abcdefghij',
  runtimeName: 'tenant',
  serviceName: 'tenant_agent',
};
const VICTIM_ARN = 'arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/victim-abcdefghij';
const MiB = 1024 * 1024;

const kv = (key: string, stringValue: string): KeyValue => ({ key, value: { stringValue } });
const attrs = (list: unknown, key: string): (string | undefined)[] =>
  ((list ?? []) as KeyValue[]).filter((a) => a.key === key).map((a) => a.value.stringValue);

/** A trace export written by hand: one resource, one span, the attributes given at each level. */
function traces(resource: KeyValue[] = [], span: KeyValue[] = [], extra: Json = {}): Json {
  const spanJson = { traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8), name: 'work', attributes: span };
  return {
    resourceSpans: [
      {
        resource: { attributes: resource },
        scopeSpans: [{ scope: { name: 't' }, spans: [{ ...spanJson, ...extra }] }],
      },
    ],
  };
}

/** A metric export written by hand: one `Invocations` sum point with the attributes given. */
function metrics(point: KeyValue[], resource: KeyValue[] = []): Json {
  const dataPoints = [{ attributes: point, asInt: 1, timeUnixNano: '1700000000000000000' }];
  return {
    resourceMetrics: [
      {
        resource: { attributes: resource },
        scopeMetrics: [{ metrics: [{ name: 'tenant.calls', sum: { dataPoints, isMonotonic: true } }] }],
      },
    ],
  };
}

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: Json;
}

/** The runtime's OTLP endpoint: records every export; `gate` holds answers until released. */
async function startUpstream(answer: (headers: IncomingHttpHeaders) => number = () => 200) {
  const received: Received[] = [];
  let gate: Promise<void> | undefined;
  let open = () => {};
  const server: Server = createServer((req, res) => {
    void readBody(req, 64 * MiB).then(async (raw) => {
      received.push({
        path: req.url ?? '',
        headers: req.headers,
        body: JSON.parse(raw.toString('utf8')) as Json,
      });
      await gate;
      const status = answer(req.headers);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status === 200 ? '{}' : JSON.stringify({ error: `refused with ${status}` }));
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    hold: () => {
      gate = new Promise((r) => (open = r));
    },
    release: () => open(),
    close: () => server.close(),
  };
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  json: { message?: string };
}

/** One raw request to the relay's socket, as a worker's exporter would send it. */
function send(socketPath: string, path: string, body: string | Buffer, headers: Json = {}): Promise<Answer> {
  return new Promise((done, fail) => {
    const req = request(
      { socketPath, path, method: 'POST', headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        void readBody(res, MiB).then((raw) => {
          const text = raw.toString('utf8');
          done({
            status: res.statusCode ?? 0,
            headers: res.headers,
            json: text ? (JSON.parse(text) as Json) : {},
          });
        }, fail);
      },
    );
    req.on('error', fail);
    req.end(body);
  });
}

const sendJson = (socketPath: string, path: string, body: unknown, headers?: Json) =>
  send(socketPath, path, JSON.stringify(body), headers);

async function waitUntil(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
}

describe('the per-session telemetry relay', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const fn of cleanups.splice(0).reverse()) fn();
  });

  async function setup(
    options: Partial<OtlpRelayOptions> & { answer?: (h: IncomingHttpHeaders) => number } = {},
  ) {
    const dir = mkdtempSync(join(os.tmpdir(), 'agentrt-relay-'));
    const upstream = await startUpstream(options.answer);
    const logs: LogRecord[] = [];
    let served: string | undefined = SESSION;
    const socketPath = join(dir, 'port-4318.sock');
    const relay: OtlpRelay = await createOtlpRelay({
      socketPath,
      upstream: upstream.url,
      identity: WHO,
      sessionId: () => served,
      maxExportBytes: 4 * MiB,
      sessionBytes: 16 * MiB,
      logger: createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogRecord) }),
      ...options,
    });
    cleanups.push(
      () => rmSync(dir, { recursive: true, force: true }),
      upstream.close,
      () => relay.close(),
    );
    return {
      socketPath,
      upstream,
      relay,
      logs,
      adopt: (id: string | undefined) => (served = id),
    };
  }

  /** The official OTLP/JSON exporters' settings, reaching the relay's socket as 127.0.0.1:4318. */
  function viaRelay(socketPath: string, signal: string) {
    const agent = new Agent({ keepAlive: true });
    agent.createConnection = () => connect(socketPath);
    cleanups.push(() => agent.destroy());
    return { url: `http://127.0.0.1:4318/v1/${signal}`, httpAgentOptions: () => agent, timeoutMillis: 5000 };
  }

  const exported = (
    exporter: { export(items: never, done: (r: ExportResult) => void): void },
    items: unknown,
  ) => new Promise<ExportResult>((done) => exporter.export(items as never, done));

  async function exportSpans(socketPath: string, resource: Json, span: Json = {}): Promise<ExportResult> {
    const memory = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes(resource as Record<string, string>),
      spanProcessors: [new SimpleSpanProcessor(memory)],
    });
    provider
      .getTracer('agent')
      .startSpan('invoke_agent', { attributes: span as Record<string, string> })
      .end();
    return exported(new OTLPTraceExporter(viaRelay(socketPath, 'traces')), memory.getFinishedSpans());
  }

  async function exportLogs(socketPath: string, resource: Json): Promise<ExportResult> {
    const memory = new InMemoryLogRecordExporter();
    const provider = new LoggerProvider({
      resource: resourceFromAttributes(resource as Record<string, string>),
      processors: [new SimpleLogRecordProcessor(memory)],
    });
    provider.getLogger('agent').emit({ body: 'thinking', severityNumber: SeverityNumber.INFO });
    return exported(new OTLPLogExporter(viaRelay(socketPath, 'logs')), memory.getFinishedLogRecords());
  }

  async function exportMetric(socketPath: string, name: string, attributes: Json): Promise<ExportResult> {
    const reader = new (class extends MetricReader {
      protected onForceFlush = async () => {};
      protected onShutdown = async () => {};
    })();
    const provider = new MeterProvider({
      resource: resourceFromAttributes({ 'service.name': WHO.serviceName }),
      readers: [reader],
    });
    provider
      .getMeter('agent')
      .createCounter(name)
      .add(1, attributes as Record<string, string>);
    const { resourceMetrics } = await reader.collect();
    return exported(new OTLPMetricExporter(viaRelay(socketPath, 'metrics')), resourceMetrics);
  }

  it('stamps the session on every signal the official exporters send: resource, span, log record and data point', async () => {
    const { socketPath, upstream } = await setup();
    const resource = { 'service.name': WHO.serviceName };
    expect((await exportSpans(socketPath, resource)).code).toBe(ExportResultCode.SUCCESS);
    expect((await exportLogs(socketPath, resource)).code).toBe(ExportResultCode.SUCCESS);
    expect((await exportMetric(socketPath, 'tool.calls', { tool: 'search' })).code).toBe(
      ExportResultCode.SUCCESS,
    );
    const [spans, logs, points] = ['/v1/traces', '/v1/logs', '/v1/metrics'].map(
      (p) => upstream.received.find((r) => r.path === p)!.body,
    );
    for (const [body, key] of [
      [spans, 'resourceSpans'],
      [logs, 'resourceLogs'],
      [points, 'resourceMetrics'],
    ] as const) {
      const resourceAttrs = (body![key] as { resource: { attributes: KeyValue[] } }[])[0]!.resource
        .attributes;
      expect(attrs(resourceAttrs, 'session.id')).toEqual([SESSION]);
      expect(attrs(resourceAttrs, 'cloud.resource_id')).toEqual([WHO.runtimeArn]);
      expect(attrs(resourceAttrs, 'service.name')).toEqual([WHO.serviceName]);
    }
    const span = (spans!.resourceSpans as Json[])[0] as { scopeSpans: { spans: Json[] }[] };
    expect(attrs(span.scopeSpans[0]!.spans[0]!.attributes, 'session.id')).toEqual([SESSION]);
    const metric = (
      points!.resourceMetrics as { scopeMetrics: { metrics: { sum: { dataPoints: Json[] } }[] }[] }[]
    )[0]!;
    const point = metric.scopeMetrics[0]!.metrics[0]!.sum.dataPoints[0]!;
    expect(attrs(point.attributes, 'session.id')).toEqual([SESSION]);
    expect(attrs(point.attributes, 'tool')).toEqual(['search']);
  });

  it('refuses a duplicate session.id key whose second value names another session (the collector keeps the last)', async () => {
    const { socketPath, upstream } = await setup();
    for (const body of [
      traces([kv('session.id', SESSION), kv('session.id', OTHER)]),
      traces([], [kv('session.id', SESSION), kv('session.id', OTHER)]),
      traces([], [], { events: [{ name: 'e', attributes: [kv('session.id', OTHER)] }] }),
    ]) {
      const answer = await sendJson(socketPath, '/v1/traces', body);
      expect(answer.status).toBe(403);
      expect(answer.json.message).toContain('session.id');
    }
    // A value that is its own but not only a string (another collector may read the other field).
    const mixed = traces([{ key: 'session.id', value: { stringValue: SESSION, intValue: 7 } }]);
    expect((await sendJson(socketPath, '/v1/traces', mixed)).status).toBe(403);
    const same = await sendJson(
      socketPath,
      '/v1/traces',
      traces([kv('session.id', SESSION), kv('session.id', SESSION)]),
    );
    expect(same.status).toBe(200);
    expect(upstream.received).toHaveLength(1);
  });

  it("refuses metrics that claim another session or the runtime's own identities", async () => {
    const { socketPath, upstream } = await setup();
    // What the attack wrote: the runtime's Invocations and vCPU series of another session and runtime.
    const forged = await exportMetric(socketPath, 'Invocations', {
      Operation: 'InvokeAgentRuntime',
      Resource: VICTIM_ARN,
      Name: 'victim::DEFAULT',
    });
    expect(forged.code).toBe(ExportResultCode.FAILED);
    const vcpu = await exportMetric(socketPath, 'agent.runtime.vcpu.seconds.used', { 'session.id': OTHER });
    expect(vcpu.code).toBe(ExportResultCode.FAILED);
    for (const [point, resource, named] of [
      [[kv('session.id', OTHER)], [], 'session.id'],
      [[kv('Name', 'tenant::DEFAULT')], [], 'Name'],
      [[kv('Operation', 'InvokeAgentRuntime')], [], 'Operation'],
      [[], [kv('Resource', WHO.runtimeArn)], 'Resource'],
      [[], [kv('cloud.resource_id', VICTIM_ARN)], 'cloud.resource_id'],
      [[kv('aws.bedrock.agentcore.runtime.arn', VICTIM_ARN)], [], 'aws.bedrock.agentcore.runtime.arn'],
      [[kv('aws.bedrock.agentcore.runtime.name', 'victim')], [], 'aws.bedrock.agentcore.runtime.name'],
    ] as const) {
      const answer = await sendJson(socketPath, '/v1/metrics', metrics([...point], [...resource]));
      expect(answer.status, named).toBe(403);
      expect(answer.json.message).toContain(named);
    }
    // Under a proto-named alias (\`data_points\`), which other collectors read too.
    const aliased = JSON.stringify(metrics([kv('session.id', OTHER)])).replace(
      '"dataPoints"',
      '"data_points"',
    );
    expect((await send(socketPath, '/v1/metrics', aliased)).status).toBe(400);
    // Exemplars too.
    const exemplar = metrics([]);
    const points = (exemplar.resourceMetrics as Json[])[0] as {
      scopeMetrics: { metrics: { sum: { dataPoints: Json[] } }[] }[];
    };
    points.scopeMetrics[0]!.metrics[0]!.sum.dataPoints[0]!.exemplars = [
      { filteredAttributes: [kv('session.id', OTHER)] },
    ];
    expect((await sendJson(socketPath, '/v1/metrics', exemplar)).status).toBe(403);
    // The runtime's own metric names, even with nothing but this session's own attributes.
    for (const name of ['Invocations', 'agent.runtime.vcpu.seconds.used', 'ActiveSessionCount']) {
      const own = await exportMetric(socketPath, name, { 'session.id': SESSION });
      expect(own.code, name).toBe(ExportResultCode.FAILED);
    }
    expect(upstream.received).toHaveLength(0);
  });

  it('holds the exports of a warm-pool worker until a session adopts it, then stamps them with that session', async () => {
    const { socketPath, upstream, relay, adopt } = await setup();
    adopt(undefined);
    expect((await exportSpans(socketPath, { 'service.name': WHO.serviceName })).code).toBe(
      ExportResultCode.SUCCESS,
    );
    // A worker without a session cannot name one.
    expect((await sendJson(socketPath, '/v1/traces', traces([kv('session.id', OTHER)]))).status).toBe(403);
    await new Promise((r) => setTimeout(r, 300));
    expect(upstream.received).toHaveLength(0);
    expect(relay.stats().held).toBe(1);
    adopt(SESSION);
    await waitUntil(() => upstream.received.length === 1, 'the held export');
    const resource = (
      upstream.received[0]!.body.resourceSpans as { resource: { attributes: KeyValue[] } }[]
    )[0]!;
    expect(attrs(resource.resource.attributes, 'session.id')).toEqual([SESSION]);
    await waitUntil(() => relay.stats().forwarded === 1, 'the upstream answer');
    expect(relay.stats()).toMatchObject({ held: 0, budgetBytes: 0 });
  });

  it('bounds what a warm-pool worker may hold and says so when it is dropped unadopted', async () => {
    const { socketPath, relay, adopt, logs } = await setup({ maxExportBytes: MiB, sessionBytes: 2 * MiB });
    adopt(undefined);
    const big = JSON.stringify(traces([kv('note', 'x'.repeat(MiB - 1000))]));
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push((await send(socketPath, '/v1/traces', big)).status);
    expect(answers).toEqual([200, 429, 429]); // one held, the budget has no room for another
    expect(relay.stats().budgetBytes).toBeLessThanOrEqual(2 * MiB);
    relay.close();
    expect(logs.some((l) => l.msg.includes('no session adopted') && l.exports === 1)).toBe(true);
  });

  it("never stamps the runtime's own service name on a tenant, and refuses a tenant that claims it", async () => {
    expect(tenantServiceName(RUNTIME_SERVICE_NAME, 'tenant')).toBe('tenant');
    expect(tenantServiceName('agentrt-doctor', 'tenant')).toBe('tenant');
    expect(tenantServiceName('  ', 'tenant')).toBe('tenant');
    expect(tenantServiceName('my-agent', 'tenant')).toBe('my-agent');
    const { socketPath, upstream } = await setup({ identity: { ...WHO, serviceName: RUNTIME_SERVICE_NAME } });
    const posing = await exportSpans(socketPath, { 'service.name': RUNTIME_SERVICE_NAME });
    expect(posing.code).toBe(ExportResultCode.FAILED);
    expect((await exportSpans(socketPath, { 'service.name': WHO.runtimeName })).code).toBe(
      ExportResultCode.SUCCESS,
    );
    const resource = (
      upstream.received[0]!.body.resourceSpans as { resource: { attributes: KeyValue[] } }[]
    )[0]!;
    expect(attrs(resource.resource.attributes, 'service.name')).toEqual([WHO.runtimeName]);
  });

  it('keeps at most 4 exports and the byte budget of one session in flight; more get 429 with Retry-After', async () => {
    const { socketPath, upstream, relay } = await setup({ maxExportBytes: 2 * MiB, sessionBytes: 8 * MiB });
    upstream.hold();
    const body = Buffer.from(JSON.stringify(traces([kv('note', 'x'.repeat(MiB))])));
    let peak = { inFlight: 0, budgetBytes: 0 };
    const watch = setInterval(() => {
      const s = relay.stats();
      peak = {
        inFlight: Math.max(peak.inFlight, s.inFlight),
        budgetBytes: Math.max(peak.budgetBytes, s.budgetBytes),
      };
    }, 5);
    const burst = Array.from({ length: 16 }, () => send(socketPath, '/v1/traces', body));
    await waitUntil(() => upstream.received.length === 4, 'four forwarded exports');
    const chunked = await send(socketPath, '/v1/traces', body, { 'transfer-encoding': 'chunked' });
    upstream.release();
    const answers = await Promise.all(burst);
    clearInterval(watch);
    const refused = answers.filter((a) => a.status === 429);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(4);
    expect(refused).toHaveLength(12);
    expect(refused[0]!.headers['retry-after']).toBe('1');
    expect(chunked.status).toBe(429);
    expect(peak.inFlight).toBeLessThanOrEqual(4);
    expect(peak.budgetBytes).toBeLessThanOrEqual(8 * MiB);
    expect(relay.stats()).toMatchObject({ inFlight: 0, budgetBytes: 0 });
  });

  it('counts an export of unknown length (chunked, as the exporters send) as the largest one', async () => {
    const { socketPath, upstream } = await setup({ maxExportBytes: 2 * MiB, sessionBytes: 5 * MiB });
    upstream.hold();
    const body = Buffer.from(JSON.stringify(traces([kv('note', 'x'.repeat(MiB))])));
    const chunked = { 'transfer-encoding': 'chunked' };
    const unknown = Array.from({ length: 3 }, () => send(socketPath, '/v1/traces', body, chunked));
    await waitUntil(() => upstream.received.length === 2, 'two chunked exports');
    upstream.release();
    expect((await Promise.all(unknown)).map((a) => a.status).sort()).toEqual([200, 200, 429]);
  });

  it('refuses an export over the single-export cap, declared or streamed', async () => {
    const { socketPath, upstream, relay } = await setup({ maxExportBytes: MiB });
    const body = Buffer.from(JSON.stringify(traces([kv('note', 'x'.repeat(2 * MiB))])));
    expect((await send(socketPath, '/v1/traces', body)).status).toBe(400);
    const streamed = await send(socketPath, '/v1/traces', body, { 'transfer-encoding': 'chunked' });
    expect(streamed.status).toBe(400);
    expect(streamed.json.message).toContain(`${MiB} bytes`);
    expect(upstream.received).toHaveLength(0);
    expect(relay.stats()).toMatchObject({ inFlight: 0, budgetBytes: 0 });
  });

  it("forwards with the runtime's ingest token, never the tenant's, and makes refusals visible once", async () => {
    const token = 'Bearer runtime-ingest-token';
    const answer = (h: IncomingHttpHeaders) => (h.authorization === token ? 200 : 401);
    const good = await setup({ answer, upstreamHeaders: { authorization: token } });
    const ok = await sendJson(good.socketPath, '/v1/traces', traces(), {
      authorization: 'Bearer tenant-forged',
    });
    expect(ok.status).toBe(200);
    expect(good.upstream.received[0]!.headers.authorization).toBe(token);

    const bad = await setup({ answer });
    for (let i = 0; i < 3; i++)
      expect((await sendJson(bad.socketPath, '/v1/traces', traces())).status).toBe(401);
    expect(bad.relay.stats().failed).toBe(3);
    const warned = bad.logs.filter((l) => l.msg.includes('refused an export'));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ level: 'warn', status: 401, sessionId: SESSION });

    const config = resolveRuntimeConfig(
      {},
      { OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20abc,x-tenant=t' },
    );
    expect(config.otlpHeaders).toEqual({ Authorization: 'Bearer abc', 'x-tenant': 't' });
  });

  it('ends the connection of a refused body instead of reading it (it may never end)', async () => {
    const { socketPath } = await setup({ maxExportBytes: MiB });
    /** Streams spaces until the relay ends the connection, or until it took 64 MiB. */
    const endless = (path: string, contentType: string) =>
      new Promise<number>((done) => {
        const headers = { 'content-type': contentType };
        const req = request({ socketPath, path, method: 'POST', headers }, (res) => res.resume());
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        let written = 0;
        req.on('error', () => done(written)); // EPIPE or ECONNRESET: the relay ended it
        const pump = () => {
          while (written < 64 * MiB) {
            written += chunk.length;
            if (!req.write(chunk)) return void req.once('drain', pump);
          }
          req.end(() => done(written)); // the relay read all of it
        };
        pump();
      });
    expect(await endless('/v1/traces', 'application/json'), 'over the cap').toBeLessThan(16 * MiB);
    expect(await endless('/v1/traces', 'application/x-protobuf'), 'protobuf').toBeLessThan(16 * MiB);
    expect(await endless('/v1/other', 'application/json'), 'unknown path').toBeLessThan(16 * MiB);
  });

  it('refuses malformed and hostile bodies and keeps serving', async () => {
    const { socketPath, upstream } = await setup();
    const nested = `${'{"arrayValue":{"values":['.repeat(20_000)}{}${']}}'.repeat(20_000)}`;
    const deep = JSON.stringify(traces([kv('deep', 'DEEP')])).replace('{"stringValue":"DEEP"}', nested);
    const cases: [string, string | Buffer, Json, number][] = [
      ['bad JSON', '{"resourceSpans": [', {}, 400],
      ['a JSON array', '[]', {}, 400],
      ['protobuf', Buffer.from([0x0a, 0x00]), { 'content-type': 'application/x-protobuf' }, 415],
      ['gzip', '{}', { 'content-encoding': 'gzip' }, 415],
      ['resources not a list', '{"resourceSpans": {}}', {}, 400],
      ['a null resource entry', '{"resourceSpans": [null]}', {}, 400],
      ['a number as a span', JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [1] }] }] }), {}, 400],
      ['a string resource', JSON.stringify({ resourceSpans: [{ resource: 'me' }] }), {}, 400],
      [
        'attributes not a list',
        JSON.stringify(traces([], [], { attributes: { 'session.id': OTHER } })),
        {},
        400,
      ],
      [
        'a proto-named alias the walk would not read',
        JSON.stringify({ resource_spans: traces().resourceSpans }),
        {},
        400,
      ],
      [
        'a proto-named alias deeper down',
        JSON.stringify(traces()).replace('"scopeSpans"', '"scope_spans"'),
        {},
        400,
      ],
      ['a string as an attribute', JSON.stringify(traces([], [], { attributes: ['session.id'] })), {}, 400],
      ['nested past what can be re-encoded', deep, {}, 400],
    ];
    for (const [label, body, headers, status] of cases)
      expect((await send(socketPath, '/v1/traces', body, headers)).status, label).toBe(status);
    expect((await sendJson(socketPath, '/api/sessions', {})).status).toBe(404);
    expect(upstream.received).toHaveLength(0);
    expect((await sendJson(socketPath, '/v1/traces', traces())).status).toBe(200);
  });
});
