import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPTraceExporter as OTLPHttpJsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateSync, gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ProtobufReader } from '../otlp/protobuf-reader.js';
import type { SqliteStore } from '../store/sqlite/sqlite-store.js';
import {
  SQLITE_ONLY,
  hex,
  jsonRequest,
  jsonSpan,
  postJson,
  startCollector,
  tempDir,
} from '../testing.test-util.js';
import type {
  KeyListResponse,
  QueryErrorBody,
  QueryResponse,
  ServiceListResponse,
  SessionListResponse,
  SessionResponse,
  SpanNode,
  TraceListResponse,
  TraceResponse,
} from '../wire-types.js';

type Started = Awaited<ReturnType<typeof startCollector>>;

async function query(url: string, q: string, extra: Record<string, unknown> = {}): Promise<QueryResponse> {
  const res = await postJson(`${url}/api/query`, { query: q, ...extra });
  expect(res.status).toBe(200);
  return (await res.json()) as QueryResponse;
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as T;
}

const count = async (url: string, filter = ''): Promise<number> =>
  (await query(url, `${filter ? `filter ${filter} | ` : ''}stats count(*) as n`)).rows[0]!.n as number;

/** Decodes an ExportTraceServiceResponse / google.rpc.Status: field number → value. */
function protoFields(bytes: Uint8Array): Map<number, unknown> {
  const out = new Map<number, unknown>();
  const r = new ProtobufReader(Buffer.from(bytes));
  while (!r.done) {
    const tag = r.tag();
    if ((tag & 7) === 0) out.set(tag >>> 3, r.varint());
    else if ((tag & 7) === 2) out.set(tag >>> 3, r.sub());
    else r.skip(tag & 7);
  }
  return out;
}

function agentTrace(
  tracer: ReturnType<BasicTracerProvider['getTracer']>,
  session: string,
  model: string,
): string {
  const root = tracer.startSpan('invoke_agent weather', {
    kind: SpanKind.SERVER,
    attributes: {
      'session.id': session,
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.usage.input_tokens': 30,
    },
  });
  const ctx = trace.setSpan(context.active(), root);
  const chat = tracer.startSpan(
    `chat ${model}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'session.id': session,
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': model,
        'gen_ai.usage.input_tokens': 30,
        'gen_ai.usage.output_tokens': 7,
        'gen_ai.input.messages': JSON.stringify([
          { role: 'user', parts: [{ type: 'text', content: 'x'.repeat(50_000) }] },
        ]),
      },
    },
    ctx,
  );
  chat.end();
  const tool = tracer.startSpan('execute_tool get_weather', { attributes: { 'session.id': session } }, ctx);
  tool.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream 503' });
  tool.end();
  root.end();
  return root.spanContext().traceId;
}

describe('collector with the real OpenTelemetry exporters', () => {
  let c: Started;
  beforeAll(async () => {
    c = await startCollector();
  });
  afterAll(() => c.cleanup());

  it('ingests OTLP/HTTP JSON, protobuf (gzip) and logs, then finds them by query, trace, session and service', async () => {
    const jsonProvider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'agent-json' }),
      spanProcessors: [new SimpleSpanProcessor(new OTLPHttpJsonTraceExporter({ url: `${c.url}/v1/traces` }))],
    });
    const protoProvider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'agent-proto' }),
      spanProcessors: [
        new SimpleSpanProcessor(
          new OTLPProtoTraceExporter({
            url: `${c.url}/v1/traces`,
            compression: 'gzip' as ConstructorParameters<typeof OTLPProtoTraceExporter>[0] extends infer O
              ? O extends { compression?: infer C }
                ? C
                : never
              : never,
          }),
        ),
      ],
    });
    const t1 = agentTrace(jsonProvider.getTracer('t'), 'sess-json', 'claude');
    const t2 = agentTrace(protoProvider.getTracer('t'), 'sess-proto', 'nova');
    await Promise.all([jsonProvider.forceFlush(), protoProvider.forceFlush()]);

    const logProvider = new LoggerProvider({
      resource: resourceFromAttributes({ 'service.name': 'agent-json' }),
      processors: [new SimpleLogRecordProcessor(new OTLPLogExporter({ url: `${c.url}/v1/logs` }))],
    });
    const rootSpanContext = { traceId: t1, spanId: 'aaaaaaaaaaaaaaaa', traceFlags: 1 };
    logProvider.getLogger('l').emit({
      severityNumber: SeverityNumber.INFO,
      body: 'model answered',
      attributes: { 'event.name': 'gen_ai.choice' },
      context: trace.setSpanContext(context.active(), rootSpanContext),
    });
    await logProvider.forceFlush();
    await Promise.all([jsonProvider.shutdown(), protoProvider.shutdown(), logProvider.shutdown()]);

    // Query language.
    const bySession = await query(c.url, 'filter attributes.session.id = "sess-proto" | sort @timestamp asc');
    expect(bySession.rows.map((r) => r.name).sort()).toEqual([
      'chat nova',
      'execute_tool get_weather',
      'invoke_agent weather',
    ]);
    expect(bySession.rows.every((r) => r['resource.attributes.service.name'] === 'agent-proto')).toBe(true);
    const chat = bySession.rows.find((r) => r.name === 'chat nova')!['@message'] as {
      attributes: Record<string, string>;
    };
    expect(chat.attributes['gen_ai.input.messages']!.length).toBeGreaterThan(50_000);
    const errors = await query(
      c.url,
      'filter status.code = 2 | fields resource.attributes.service.name as service, status.message',
    );
    expect(errors.rows).toHaveLength(2);
    expect(errors.rows[0]!['status.message']).toBe('upstream 503');
    const models = await query(
      c.url,
      'stats sum(attributes.gen_ai.usage.output_tokens) as out by attributes.gen_ai.request.model as model | sort model',
    );
    expect(models.rows).toEqual(
      [
        { model: null, out: 0 },
        { model: 'claude', out: 7 },
        { model: 'nova', out: 7 },
      ].sort((a, b) => String(a.model ?? '\uffff').localeCompare(String(b.model ?? '\uffff'))),
    );

    // Trace tree with its log record (the log names a span we never received: trace-level log).
    const t = await getJson<TraceResponse>(`${c.url}/api/traces/${t1}`);
    expect(t.summary).toMatchObject({
      traceId: t1,
      rootName: 'invoke_agent weather',
      serviceName: 'agent-json',
      spanCount: 3,
      errorCount: 1,
      sessionId: 'sess-json',
      inProgress: false,
    });
    // Root and chat both report input tokens: counted once.
    expect(t.summary.tokens).toEqual({ input: 30, output: 7, total: 37 });
    expect(t.roots).toHaveLength(1);
    expect(t.roots[0]!.children.map((n: SpanNode) => n.span.name).sort()).toEqual([
      'chat claude',
      'execute_tool get_weather',
    ]);
    expect(t.logs).toEqual([
      expect.objectContaining({ body: 'model answered', traceId: t1, spanId: 'aaaaaaaaaaaaaaaa' }),
    ]);

    // Sessions, traces, services, keys.
    const sessions = await getJson<SessionListResponse>(`${c.url}/api/sessions`);
    expect(sessions.sessions.map((s) => s.sessionId).sort()).toEqual(['sess-json', 'sess-proto']);
    const s = await getJson<SessionResponse>(`${c.url}/api/sessions/sess-proto`);
    expect(s.session).toMatchObject({
      traceCount: 1,
      spanCount: 3,
      errorCount: 1,
      serviceNames: ['agent-proto'],
    });
    expect(s.traces[0]!.traceId).toBe(t2);
    const list = await getJson<TraceListResponse>(`${c.url}/api/traces?service=agent-proto`);
    expect(list.traces.map((x) => x.traceId)).toEqual([t2]);
    expect((await getJson<TraceListResponse>(`${c.url}/api/traces?status=ok`)).traces).toEqual([]);
    expect(
      (await getJson<TraceListResponse>(`${c.url}/api/traces?q=NOVA`)).traces.map((x) => x.traceId),
    ).toEqual([t2]);
    expect((await getJson<TraceListResponse>(`${c.url}/api/traces?minDurationMs=100000`)).traces).toEqual([]);
    const services = await getJson<ServiceListResponse>(`${c.url}/api/services`);
    expect(services.services.map((x) => [x.name, x.spanCount]).sort()).toEqual([
      ['agent-json', 3],
      ['agent-proto', 3],
    ]);
    const keys = await getJson<KeyListResponse>(`${c.url}/api/keys`);
    expect(keys.keys).toEqual(
      expect.arrayContaining([
        'attributes.session.id',
        'attributes.gen_ai.request.model',
        'durationNano',
        'resource.attributes.service.name',
      ]),
    );
  });
});

describe('collector with raw OTLP bodies', () => {
  let c: Started;
  beforeAll(async () => {
    c = await startCollector({ maxBodyBytes: 1024 * 1024 });
  });
  afterAll(() => c.cleanup());

  const body = (traceId: string, n = 1, service = 'raw') =>
    jsonRequest(
      service,
      Array.from({ length: n }, (_, i) =>
        jsonSpan({
          traceId,
          spanId: hex(i + 1, 8),
          name: `op${i}`,
          startMs: Date.now(),
          durationMs: 5,
          attributes: { 'session.id': 'raw-session' },
        }),
      ),
    );

  it('accepts gzip and deflate JSON, hex and base64 ids, and answers in the request content type', async () => {
    const t1 = hex(0xa1, 16);
    const gz = await fetch(`${c.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(JSON.stringify(body(t1, 2))),
    });
    expect(gz.status).toBe(200);
    expect(gz.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await gz.json()).toEqual({});
    const t2 = hex(0xa2, 16);
    const b64 = body(t2);
    const span = (b64.resourceSpans as { scopeSpans: { spans: Record<string, string>[] }[] }[])[0]!
      .scopeSpans[0]!.spans[0]!;
    span.traceId = Buffer.from(t2, 'hex').toString('base64');
    span.spanId = Buffer.from(hex(1, 8), 'hex').toString('base64');
    const df = await fetch(`${c.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', 'content-encoding': 'deflate' },
      body: deflateSync(JSON.stringify(b64)),
    });
    expect(df.status).toBe(200);
    expect(await count(c.url, `traceId = "${t2}" and spanId = "${hex(1, 8)}"`)).toBe(1);
    expect(await count(c.url, `traceId = "${t1}"`)).toBe(2);
  });

  it('reports partial success for invalid spans in protobuf, with a protobuf response', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    provider.getTracer('x').startSpan('proto-ok').end();
    const good = ProtobufTraceSerializer.serializeRequest(exporter.getFinishedSpans())!;
    // Append a ResourceSpans whose only span has a 3-byte trace id.
    const badSpan = [0x0a, 3, 1, 2, 3, 0x12, 8, 1, 2, 3, 4, 5, 6, 7, 8, 0x2a, 1, 0x62];
    const scope = [0x12, badSpan.length, ...badSpan];
    const rs = [0x12, scope.length, ...scope];
    const bytes = Buffer.concat([Buffer.from(good), Buffer.from([0x0a, rs.length, ...rs])]);
    const res = await fetch(`${c.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf' },
      body: bytes,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-protobuf');
    const partial = protoFields(new Uint8Array(await res.arrayBuffer())).get(1) as ProtobufReader;
    const fields = new Map<number, unknown>();
    while (!partial.done) {
      const tag = partial.tag();
      fields.set(tag >>> 3, (tag & 7) === 0 ? partial.varint() : partial.string());
    }
    expect(fields.get(1)).toBe(1);
    expect(fields.get(2)).toMatch(/valid 16-byte traceId/);
    expect(await count(c.url, 'name = "proto-ok"')).toBe(1);
    expect(await count(c.url, 'name = "b"')).toBe(0);
  });

  it('refuses spans starting at time 0 or in 2200 (outside what retention handles), naming the field', async () => {
    const t = hex(0xa3, 16);
    const span = (id: number, startMs: number) =>
      jsonSpan({ traceId: t, spanId: hex(id, 8), name: `when${id}`, startMs, durationMs: 1 });
    const res = await postJson(`${c.url}/v1/traces`, {
      resourceSpans: [
        {
          scopeSpans: [
            { spans: [span(1, 0), span(2, Date.UTC(2200, 0, 1)), span(3, Date.now()), span(4, 1000)] },
          ],
        },
      ],
    });
    expect(res.status).toBe(200);
    const { partialSuccess } = (await res.json()) as {
      partialSuccess: { rejectedSpans: string; errorMessage: string };
    };
    expect(partialSuccess.rejectedSpans).toBe('3');
    expect(partialSuccess.errorMessage).toMatch(
      /3 span\(s\) with startTimeUnixNano before 2000-01-01 or more than 24 h ahead/,
    );
    expect(await count(c.url, `traceId = "${t}"`)).toBe(1);
  });

  it('answers malformed, truncated, oversized and wrong-type bodies with the right status and keeps stored data intact', async () => {
    const before = await count(c.url);
    const post = (b: string | Buffer, headers: Record<string, string>) =>
      fetch(`${c.url}/v1/traces`, { method: 'POST', headers, body: b });

    const garbage = await post(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 1, 2]), {
      'content-type': 'application/x-protobuf',
    });
    expect(garbage.status).toBe(400);
    expect(garbage.headers.get('content-type')).toBe('application/x-protobuf');
    const status = protoFields(new Uint8Array(await garbage.arrayBuffer()));
    expect(status.get(1)).toBe(3);
    expect(
      (status.get(2) as ProtobufReader).buf.toString(
        'utf8',
        (status.get(2) as ProtobufReader).pos,
        (status.get(2) as ProtobufReader).end,
      ),
    ).toMatch(/runs past the end/);

    const badJson = await post('{"resourceSpans": [', { 'content-type': 'application/json' });
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toMatchObject({ code: 3, message: expect.stringMatching(/not valid JSON/) });

    const wrongShape = await post(
      JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 5 }] }] }] }),
      { 'content-type': 'application/json' },
    );
    expect(wrongShape.status).toBe(400);
    expect(((await wrongShape.json()) as { message: string }).message).toBe(
      'resourceSpans[0].scopeSpans[0].spans[0].traceId must be a string',
    );

    const truncatedGzip = await post(gzipSync(JSON.stringify(body(hex(0xb1, 16)))).subarray(0, 30), {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
    });
    expect(truncatedGzip.status).toBe(400);

    // 64 MiB of zeros gzip to ~64 KB: refused at 1 MiB decompressed.
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    expect(bomb.length).toBeLessThan(200_000);
    const bombRes = await post(bomb, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    expect(bombRes.status).toBe(413);
    expect(((await bombRes.json()) as { message: string }).message).toMatch(
      /exceeds 1048576 bytes \(after decompression\)/,
    );
    const plainTooBig = await post(Buffer.alloc(2 * 1024 * 1024, 32), { 'content-type': 'application/json' });
    expect(plainTooBig.status).toBe(413);

    const wrongType = await post('hello', { 'content-type': 'text/plain' });
    expect(wrongType.status).toBe(415);
    expect(((await wrongType.json()) as { message: string }).message).toMatch(/text\/plain.*not supported/);
    const wrongEncoding = await post('x', { 'content-type': 'application/json', 'content-encoding': 'zstd' });
    expect(wrongEncoding.status).toBe(415);
    const getTraces = await fetch(`${c.url}/v1/traces`);
    expect(getTraces.status).toBe(405);

    // Hostile: deep nesting, 20k attributes, prototype keys.
    // 5000 levels of kvlist, written as text (JSON.stringify itself would overflow the stack).
    const levels = 5000;
    const deep =
      '{"kvlistValue":{"values":[{"key":"k","value":'.repeat(levels) +
      '{"stringValue":"x"}' +
      '}]}}'.repeat(levels);
    const deepBody = JSON.stringify(body(hex(0xc1, 16))).replace(
      '"attributes":[',
      `"attributes":[{"key":"deep","value":${deep}},`,
    );
    const deepRes = await post(deepBody, { 'content-type': 'application/json' });
    expect(deepRes.status).toBe(400);
    expect(((await deepRes.json()) as { message: string }).message).toMatch(/nested deeper/);

    const wide = body(hex(0xc2, 16));
    const wideSpan = (wide.resourceSpans as { scopeSpans: { spans: Record<string, unknown>[] }[] }[])[0]!
      .scopeSpans[0]!.spans[0]!;
    wideSpan.attributes = [
      ...Array.from({ length: 20_000 }, (_, i) => ({ key: `k${i}`, value: { intValue: String(i) } })),
      {
        key: '__proto__',
        value: { kvlistValue: { values: [{ key: 'polluted', value: { boolValue: true } }] } },
      },
      { key: 'constructor', value: { stringValue: 'hostile' } },
    ];
    const wideRes = await post(JSON.stringify(wide), { 'content-type': 'application/json' });
    expect(wideRes.status).toBe(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const stored = await query(
      c.url,
      `filter traceId = "${hex(0xc2, 16)}" | fields attributes.k19999 as last, attributes.constructor as ctor`,
    );
    expect(stored.rows).toEqual([{ last: 19999, ctor: 'hostile' }]);

    expect(await count(c.url)).toBe(before + 1);
  });

  it('answers every truncation and corruption of a protobuf body with 200 or 400, and keeps serving', async () => {
    const fuzz = await startCollector();
    try {
      const exporter = new InMemorySpanExporter();
      const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
      for (let i = 0; i < 20; i++)
        provider
          .getTracer('fuzz')
          .startSpan(`fuzz${i}`, { attributes: { i, s: 'x'.repeat(i * 10) } })
          .end();
      const good = Buffer.from(ProtobufTraceSerializer.serializeRequest(exporter.getFinishedSpans())!);
      let seed = 7;
      const rand = (n: number): number => (seed = (seed * 48271) % 2147483647) % n;
      const statuses = new Set<number>();
      for (let i = 0; i < 60; i++) {
        const body = Buffer.from(good.subarray(0, rand(good.length)));
        if (i % 2) body[rand(body.length || 1)] = rand(256);
        const res = await fetch(`${fuzz.url}/v1/traces`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-protobuf' },
          body,
        });
        statuses.add(res.status);
        await res.arrayBuffer();
      }
      expect([...statuses].every((s) => s === 200 || s === 400)).toBe(true);
      expect(statuses.has(400)).toBe(true);
      const ok = await fetch(`${fuzz.url}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-protobuf' },
        body: good,
      });
      expect(ok.status).toBe(200);
      expect(await count(fuzz.url, 'name like /^fuzz/ and ispresent(attributes.i)')).toBeGreaterThanOrEqual(
        20,
      );
    } finally {
      await fuzz.cleanup();
    }
  });

  it('returns 429 with Retry-After when the ingest queue is full, and 503 while shutting down', async () => {
    const slow = await startCollector({ flushDelayMs: 1500, maxPendingRecords: 5 });
    try {
      const first = postJson(`${slow.url}/v1/traces`, body(hex(0xd1, 16), 5));
      // Wait until the first batch is queued, then overflow.
      for (let i = 0; i < 200; i++) {
        const h = await getJson<{ pendingRecords: number }>(`${slow.url}/healthz`);
        if (h.pendingRecords === 5) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      const second = await postJson(`${slow.url}/v1/traces`, body(hex(0xd2, 16), 1));
      expect(second.status).toBe(429);
      expect(second.headers.get('retry-after')).toBe('1');
      expect((await first).status).toBe(200);
      expect(await count(slow.url, `traceId = "${hex(0xd1, 16)}"`)).toBe(5);
      const pending = postJson(`${slow.url}/v1/traces`, body(hex(0xd3, 16), 2));
      for (let i = 0; i < 200; i++) {
        if ((await getJson<{ pendingRecords: number }>(`${slow.url}/healthz`)).pendingRecords === 2) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      const closing = slow.close();
      // Queued data is written on close and acknowledged.
      expect((await pending).status).toBe(200);
      await closing;
      const reopened = await startCollector({ dataDir: slow.dataDir });
      try {
        expect(await count(reopened.url, `traceId = "${hex(0xd3, 16)}"`)).toBe(2);
      } finally {
        await reopened.close();
      }
    } finally {
      await slow.cleanup();
    }
  });

  it('loses nothing acknowledged across a restart on the same data dir', async () => {
    const tmp = tempDir();
    try {
      const first = await startCollector({ dataDir: tmp.dir });
      const acks = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          postJson(`${first.url}/v1/traces`, body(hex(0xe00 + i, 16), 50, 'restart')),
        ),
      );
      expect(acks.every((r) => r.status === 200)).toBe(true);
      await first.close();
      const second = await startCollector({ dataDir: tmp.dir });
      try {
        expect(await count(second.url, 'resource.attributes.service.name = "restart"')).toBe(500);
        expect(
          (await getJson<TraceListResponse>(`${second.url}/api/traces?service=restart&limit=1000`)).traces,
        ).toHaveLength(10);
      } finally {
        await second.close();
      }
    } finally {
      tmp.remove();
    }
  });

  it.skipIf(SQLITE_ONLY)(
    `answers 503 with a clear message while the writer thread is down, and loses nothing it acknowledged ${SQLITE_ONLY ?? ''}`,
    async () => {
      const crashy = await startCollector();
      try {
        expect((await postJson(`${crashy.url}/v1/traces`, body(hex(0xc1, 16), 3, 'crash'))).status).toBe(200);
        // Requests in flight when the thread dies: each is acknowledged (stored) or refused (503).
        const inFlight = Array.from({ length: 8 }, (_, i) =>
          postJson(`${crashy.url}/v1/traces`, body(hex(0xc10 + i, 16), 200, 'crash')),
        );
        await new Promise((resolve) => setTimeout(resolve, 5));
        await (crashy.backend as SqliteStore).writer.terminateForTest();
        const answers = await Promise.all(inFlight);
        expect(answers.every((r) => r.status === 200 || r.status === 503)).toBe(true);
        const refused = await postJson(`${crashy.url}/v1/traces`, body(hex(0xc2, 16), 1, 'crash'));
        expect(refused.status).toBe(503);
        expect(refused.headers.get('retry-after')).toBe('5');
        expect(((await refused.json()) as { message: string }).message).toMatch(
          /^cannot store data now \(the store's writer thread stopped unexpectedly \(exit code 1\)\); retry later$/,
        );
        // A new thread within a second or so; then everything acknowledged is there.
        await vi.waitFor(
          async () =>
            expect((await postJson(`${crashy.url}/v1/traces`, body(hex(0xc3, 16), 2, 'crash'))).status).toBe(
              200,
            ),
          { timeout: 5000, interval: 100 },
        );
        expect(await count(crashy.url, `traceId = "${hex(0xc1, 16)}"`)).toBe(3);
        expect(await count(crashy.url, `traceId = "${hex(0xc3, 16)}"`)).toBe(2);
        for (const [i, r] of answers.entries()) {
          const n = await count(crashy.url, `traceId = "${hex(0xc10 + i, 16)}"`);
          // Acknowledged: all there. Refused: all or nothing (the thread may die between its commit
          // and its answer; the client's retry is then deduplicated).
          if (r.status === 200) expect(n).toBe(200);
          else expect([0, 200]).toContain(n);
        }
      } finally {
        await crashy.cleanup();
      }
    },
  );

  it('gives clear 4xx errors on the API naming the field', async () => {
    const bad = await postJson(`${c.url}/api/query`, { query: 'filter name = | limit 5' });
    expect(bad.status).toBe(400);
    const err = (await bad.json()) as QueryErrorBody;
    expect(err).toMatchObject({ error: 'QuerySyntaxError', position: 14, line: 1, column: 15 });
    expect(err.message).toMatch(/expected a string or a number .* but found '\|'/);
    const cases: [Promise<Response>, number, RegExp][] = [
      [postJson(`${c.url}/api/query`, { q: 'x' }), 400, /query must be a string/],
      [
        postJson(`${c.url}/api/query`, { query: 'limit 1', startMs: 'yesterday' }),
        400,
        /startMs must be a number/,
      ],
      [postJson(`${c.url}/api/query`, '[1]'), 400, /JSON object/],
      [postJson(`${c.url}/api/query`, '{'), 400, /not valid JSON/],
      [
        fetch(`${c.url}/api/query`, { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } }),
        415,
        /application\/json/,
      ],
      [fetch(`${c.url}/api/query`), 405, /POST/],
      [fetch(`${c.url}/api/traces?limit=abc`), 400, /limit must be a number/],
      [fetch(`${c.url}/api/traces?limit=0`), 400, /limit must be a whole number from 1 to 1000/],
      [fetch(`${c.url}/api/traces?status=bad`), 400, /status must be 'error' or 'ok'/],
      [fetch(`${c.url}/api/traces?minDurationMs=x`), 400, /minDurationMs must be a number/],
      [fetch(`${c.url}/api/traces/not-a-trace`), 400, /traceId must be 32 hex characters/],
      [fetch(`${c.url}/api/traces/${hex(0xfff, 16)}`), 404, /not found/],
      [fetch(`${c.url}/api/sessions/nope`), 404, /session "nope" not found/],
      [fetch(`${c.url}/api/nope`), 404, /no API route/],
      [postJson(`${c.url}/api/query`, { query: 'x'.repeat(2 * 1024 * 1024) }), 413, /exceeds/],
    ];
    for (const [res, status, message] of cases) {
      const r = await res;
      expect(r.status).toBe(status);
      expect(((await r.json()) as { message: string }).message).toMatch(message);
    }
  });

  it('streams new spans to /api/live as server-sent events', async () => {
    const controller = new AbortController();
    const res = await fetch(`${c.url}/api/live`, { signal: controller.signal });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reader = res.body!.getReader();
    const traceId = hex(0xf1, 16);
    await postJson(`${c.url}/v1/traces`, body(traceId, 2));
    let text = '';
    while (!text.includes(traceId)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    controller.abort();
    const event = text.split('\n\n').find((e) => e.startsWith('event: spans'))!;
    const data = JSON.parse(
      event
        .split('\n')
        .find((l) => l.startsWith('data: '))!
        .slice(6),
    );
    expect(data.spans.map((s: { traceId: string }) => s.traceId)).toEqual([traceId, traceId]);
  });

  it('forwards everything received to upstream endpoints without waiting for them', async () => {
    const upstream = await startCollector();
    const front = await startCollector({
      forwardEndpoints: [upstream.url, 'http://127.0.0.1:9/unreachable'],
    });
    try {
      const traceId = hex(0xf2, 16);
      expect((await postJson(`${front.url}/v1/traces`, body(traceId, 3))).status).toBe(200);
      for (let i = 0; i < 300 && (await count(upstream.url, `traceId = "${traceId}"`)) < 3; i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(await count(upstream.url, `traceId = "${traceId}"`)).toBe(3);
    } finally {
      await front.cleanup();
      await upstream.cleanup();
    }
  });
});

describe('GET /api/logs on the query threads', () => {
  const RECORDS = 20_000;
  const logRequest = (from: number, n: number) => ({
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'logs-load' } }] },
        scopeLogs: [
          {
            logRecords: Array.from({ length: n }, (_, i) => ({
              timeUnixNano: String((Date.now() - 60_000 + from + i) * 1e6),
              severityNumber: 9,
              body: { stringValue: `line ${from + i} ${'x'.repeat(200)}` },
              attributes: [{ key: 'session.id', value: { stringValue: `s${(from + i) % 50}` } }],
            })),
          },
        ],
      },
    ],
  });
  const fill = async (url: string) => {
    for (let from = 0; from < RECORDS; from += 5000)
      expect((await postJson(`${url}/v1/logs`, logRequest(from, 5000))).status).toBe(200);
  };
  const queries = async (url: string) =>
    ((await (await fetch(`${url}/healthz`)).json()) as { queries?: { queries: number } }).queries?.queries;

  it('runs each search on a query thread (the /healthz query count counts it)', async () => {
    const c = await startCollector();
    try {
      await fill(c.url);
      const before = await queries(c.url);
      const res = await fetch(`${c.url}/api/logs?q=line%2019999&limit=10`);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { logs: { body: string }[] }).logs.map((l) => l.body)).toEqual([
        `line 19999 ${'x'.repeat(200)}`,
      ]);
      expect(await queries(c.url)).toBe(before! + 1);
    } finally {
      await c.cleanup();
    }
  });

  it.skipIf(SQLITE_ONLY)(
    `stops a search that scans every record at the query deadline with a 400 ${SQLITE_ONLY ?? ''}`,
    async () => {
      const c = await startCollector({ queryTimeoutMs: 1 });
      try {
        await fill(c.url);
        const res = await fetch(`${c.url}/api/logs?q=no%20such%20text`);
        expect(res.status).toBe(400);
        expect((await res.json()) as { error: string; message: string }).toMatchObject({
          error: 'query_stopped',
          message: expect.stringMatching(/stopped|deadline/),
        });
      } finally {
        await c.cleanup();
      }
    },
  );
});

describe('collector web UI and export', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const f of cleanups.splice(0)) await f();
  });

  it('explains how to build the UI when it is missing, and serves it with a client-route fallback when built', async () => {
    const empty = tempDir();
    cleanups.push(empty.remove);
    const bare = await startCollector({ uiDir: empty.dir });
    cleanups.push(bare.cleanup);
    const page = await fetch(`${bare.url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/UI is not built[\s\S]*npm run build -w @agentrt\/collector/);

    const ui = tempDir();
    cleanups.push(ui.remove);
    mkdirSync(join(ui.dir, 'assets'));
    writeFileSync(join(ui.dir, 'index.html'), '<!doctype html><title>ui</title>');
    writeFileSync(join(ui.dir, 'assets', 'app.js'), 'console.log(1)');
    const built = await startCollector({ uiDir: ui.dir });
    cleanups.push(built.cleanup);
    expect(await (await fetch(`${built.url}/`)).text()).toContain('<title>ui</title>');
    expect(await (await fetch(`${built.url}/sessions/abc`)).text()).toContain('<title>ui</title>');
    const js = await fetch(`${built.url}/assets/app.js`);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    expect(await (await fetch(`${built.url}/..%2f..%2fetc%2fpasswd`)).text()).toContain('<title>ui</title>');
    expect((await fetch(`${built.url}/healthz`)).status).toBe(200);
  });

  it('exports a trace as OTLP/JSON lines that import into another collector', async () => {
    const a = await startCollector();
    const b = await startCollector();
    cleanups.push(a.cleanup, b.cleanup);
    const traceId = hex(0x123, 16);
    await postJson(
      `${a.url}/v1/traces`,
      jsonRequest('exp', [
        jsonSpan({
          traceId,
          spanId: hex(1, 8),
          name: 'root',
          startMs: Date.now(),
          durationMs: 3,
          attributes: { 'session.id': 'e', n: 1.5 },
        }),
      ]),
    );
    const res = await fetch(`${a.url}/api/export?traceId=${traceId}`);
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    const lines = (await res.text()).trim().split('\n');
    expect(lines).toHaveLength(1);
    expect((await postJson(`${b.url}/v1/traces`, lines[0]!)).status).toBe(200);
    const [x] = (await query(a.url, 'fields @message')).rows;
    const [y] = (await query(b.url, 'fields @message')).rows;
    // Epoch-ns numbers are doubles (256 ns apart today); durations and everything else are exact.
    type Msg = { '@message': { endTimeUnixNano: number } };
    const end = (r: unknown) => (r as Msg)['@message'].endTimeUnixNano;
    expect(Math.abs(end(y) - end(x))).toBeLessThan(1000);
    (x as Msg)['@message'].endTimeUnixNano = (y as Msg)['@message'].endTimeUnixNano = 0;
    expect(y).toEqual(x);
  });
});
