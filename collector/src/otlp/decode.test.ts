import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { decodeTraceRequestJson, decodeLogsRequestJson, decodeMetricsRequestJson } from './decode-json.js';
import { decodeMetricsRequest, decodeTraceRequest } from './decode-protobuf.js';
import { OtlpDecodeError } from './otlp-decode-error.js';
import { spansToOtlpJson } from './encode-json.js';

function sdkSpans() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': 'decode-test',
      'deployment.environment.name': 'test',
    }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('decode-scope', '2.0.0');
  tracer.startActiveSpan('invoke_agent weather', { kind: SpanKind.SERVER }, (root) => {
    root.setAttribute('session.id', 'sess-1');
    const child = tracer.startSpan(
      'chat claude',
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.request.model': 'claude',
          'gen_ai.usage.input_tokens': 12,
          temperature: 0.5,
          'gen_ai.response.finish_reasons': ['stop'],
          big: 'x'.repeat(100_000),
          negative: -42,
        },
      },
      trace.setSpan(context.active(), root),
    );
    child.addEvent('gen_ai.choice', { index: 0 });
    child.setStatus({ code: SpanStatusCode.ERROR, message: 'boom' });
    child.end();
    root.end();
  });
  return exporter.getFinishedSpans();
}

describe('OTLP trace decoding', () => {
  it('decodes protobuf and JSON from the OTel serializers into the same span records', () => {
    const spans = sdkSpans();
    const proto = ProtobufTraceSerializer.serializeRequest(spans)!;
    const json = JsonTraceSerializer.serializeRequest(spans)!;
    const a = decodeTraceRequest(proto);
    const b = decodeTraceRequestJson(json);
    expect(a.rejected).toBe(0);
    expect(a.spans).toHaveLength(2);
    expect(a.spans).toEqual(b.spans);
    const chat = a.spans.find((s) => s.name === 'chat claude')!;
    const root = a.spans.find((s) => s.name === 'invoke_agent weather')!;
    expect(chat.parentSpanId).toBe(root.spanId);
    expect(root.parentSpanId).toBeUndefined();
    expect(chat.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(chat.kind).toBe('CLIENT');
    expect(root.kind).toBe('SERVER');
    expect(chat.status).toEqual({ code: 'ERROR', message: 'boom' });
    expect(chat.attributes['gen_ai.usage.input_tokens']).toBe(12);
    expect(chat.attributes.negative).toBe(-42);
    expect(chat.attributes.temperature).toBe(0.5);
    expect(chat.attributes['gen_ai.response.finish_reasons']).toEqual(['stop']);
    expect((chat.attributes.big as string).length).toBe(100_000);
    expect(chat.events[0]).toMatchObject({ name: 'gen_ai.choice', attributes: { index: 0 } });
    expect(chat.resource.attributes['service.name']).toBe('decode-test');
    expect(chat.scope).toEqual({ name: 'decode-scope', version: '2.0.0' });
    const ns = spans[1]!.duration[0] * 1e9 + spans[1]!.duration[1];
    expect(root.durationNano).toBe(ns);
  });

  it('round-trips its own OTLP/JSON export', () => {
    const decoded = decodeTraceRequest(ProtobufTraceSerializer.serializeRequest(sdkSpans())!).spans;
    const again = decodeTraceRequestJson(JSON.stringify(spansToOtlpJson(decoded))).spans;
    // Epoch-ns numbers are doubles (about 256 ns apart at today's epoch); durations stay exact.
    const withoutEnd = (s: (typeof decoded)[number]) => ({ ...s, endTimeUnixNano: 0 });
    expect(again.map(withoutEnd)).toEqual(decoded.map(withoutEnd));
    again.forEach((s, i) =>
      expect(Math.abs(s.endTimeUnixNano - decoded[i]!.endTimeUnixNano)).toBeLessThan(1000),
    );
  });

  it('never throws anything but OtlpDecodeError on truncated or random bytes', () => {
    const proto = ProtobufTraceSerializer.serializeRequest(sdkSpans())!;
    let rejected = 0;
    const tryDecode = (bytes: Uint8Array): void => {
      try {
        decodeTraceRequest(bytes);
      } catch (error) {
        expect(error).toBeInstanceOf(OtlpDecodeError);
        rejected++;
      }
    };
    for (let len = 0; len < proto.length; len += Math.max(1, Math.floor(proto.length / 2000))) {
      tryDecode(proto.subarray(0, len));
    }
    let seed = 42;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 500; i++) {
      const garbage = Uint8Array.from({ length: 1 + Math.floor(rand() * 300) }, () =>
        Math.floor(rand() * 256),
      );
      tryDecode(garbage);
      // Valid prefix with flipped bytes inside.
      const flipped = Uint8Array.from(proto.subarray(0, 400));
      flipped[Math.floor(rand() * flipped.length)] = Math.floor(rand() * 256);
      tryDecode(flipped);
    }
    expect(rejected).toBeGreaterThan(100);
  });

  it('accepts the JSON quirks: base64 or hex ids, int64 strings or numbers, enum names or numbers', () => {
    const traceHex = '5b8efff798038103d269b633813fc60c';
    const spanHex = 'eee19b7ec3c1b174';
    const body = (span: Record<string, unknown>) => ({
      resourceSpans: [{ resource: {}, scopeSpans: [{ scope: { name: 's' }, spans: [span] }] }],
    });
    const hexForm = decodeTraceRequestJson(
      JSON.stringify(
        body({
          traceId: traceHex.toUpperCase(),
          spanId: spanHex,
          name: 'a',
          kind: 2,
          startTimeUnixNano: '1763742720000000000',
          endTimeUnixNano: '1763742721500000001',
          status: { code: 2 },
          attributes: [{ key: 'n', value: { intValue: '7' } }],
        }),
      ),
    ).spans[0]!;
    const b64Form = decodeTraceRequestJson(
      JSON.stringify(
        body({
          traceId: Buffer.from(traceHex, 'hex').toString('base64'),
          spanId: Buffer.from(spanHex, 'hex').toString('base64'),
          name: 'a',
          kind: 'SPAN_KIND_SERVER',
          startTimeUnixNano: 1763742720000000000,
          endTimeUnixNano: '1763742721500000001',
          status: { code: 'STATUS_CODE_ERROR' },
          attributes: [{ key: 'n', value: { intValue: 7 } }],
        }),
      ),
    ).spans[0]!;
    expect(hexForm.traceId).toBe(traceHex);
    expect(hexForm.spanId).toBe(spanHex);
    expect(hexForm.durationNano).toBe(1_500_000_001);
    expect(b64Form).toEqual({ ...hexForm, durationNano: b64Form.durationNano });
    expect(b64Form.kind).toBe('SERVER');
    expect(b64Form.status.code).toBe('ERROR');
  });

  it('rejects spans without valid ids as partial success and names bad fields', () => {
    const d = decodeTraceRequestJson(
      JSON.stringify({
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  { traceId: '00000000000000000000000000000000', spanId: '0000000000000001', name: 'x' },
                  { traceId: '5b8efff798038103d269b633813fc60c', spanId: 'eee19b7ec3c1b174', name: 'ok' },
                ],
              },
            ],
          },
        ],
      }),
    );
    expect(d.spans.map((s) => s.name)).toEqual(['ok']);
    expect(d.rejected).toBe(1);
    expect(() => decodeTraceRequestJson('{"resourceSpans": {}}')).toThrow(/resourceSpans must be an array/);
    expect(() =>
      decodeTraceRequestJson('{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}'),
    ).toThrow(/resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.traceId must be 16 bytes/);
    expect(() => decodeTraceRequestJson('[1,2]')).toThrow(OtlpDecodeError);
    expect(() => decodeTraceRequestJson('{"resourceSpans": [')).toThrow(/not valid JSON/);
  });

  it('refuses deep nesting and keeps __proto__ keys as plain data', () => {
    let value: Record<string, unknown> = { stringValue: 'leaf' };
    for (let i = 0; i < 200; i++) value = { arrayValue: { values: [value] } };
    const deep = JSON.stringify({
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                {
                  traceId: '5b8efff798038103d269b633813fc60c',
                  spanId: 'eee19b7ec3c1b174',
                  attributes: [{ key: 'deep', value }],
                },
              ],
            },
          ],
        },
      ],
    });
    expect(() => decodeTraceRequestJson(deep)).toThrow(/nested deeper than 64/);
    const hostile = decodeTraceRequestJson(
      JSON.stringify({
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  {
                    traceId: '5b8efff798038103d269b633813fc60c',
                    spanId: 'eee19b7ec3c1b174',
                    attributes: [
                      {
                        key: '__proto__',
                        value: { kvlistValue: { values: [{ key: 'polluted', value: { boolValue: true } }] } },
                      },
                      { key: 'constructor', value: { stringValue: 'c' } },
                    ],
                  },
                ],
              },
            ],
          },
        ],
      }),
    ).spans[0]!;
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(hostile.attributes)).toBe(Object.prototype);
    expect(Object.hasOwn(hostile.attributes, '__proto__')).toBe(true);
    expect(JSON.parse(JSON.stringify(hostile.attributes))).toHaveProperty('constructor', 'c');
  });
});

describe('OTLP logs and metrics decoding', () => {
  it('decodes JSON logs with severity names and ids', () => {
    const d = decodeLogsRequestJson(
      JSON.stringify({
        resourceLogs: [
          {
            resource: { attributes: [{ key: 'service.name', value: { stringValue: 'svc' } }] },
            scopeLogs: [
              {
                logRecords: [
                  {
                    timeUnixNano: '1763742720000000000',
                    severityNumber: 'SEVERITY_NUMBER_WARN',
                    body: { stringValue: 'hello' },
                    traceId: '5b8efff798038103d269b633813fc60c',
                    spanId: 'eee19b7ec3c1b174',
                  },
                ],
              },
            ],
          },
        ],
      }),
    );
    expect(d.logs[0]).toMatchObject({ severityNumber: 13, body: 'hello', spanId: 'eee19b7ec3c1b174' });
  });

  it('counts metric data points in both encodings', () => {
    const json = {
      resourceMetrics: [
        {
          scopeMetrics: [
            {
              metrics: [
                { name: 'a', sum: { dataPoints: [{ asInt: '1' }, { asInt: '2' }] } },
                { name: 'b', gauge: { dataPoints: [{ asDouble: 1 }] } },
              ],
            },
          ],
        },
      ],
    };
    expect(decodeMetricsRequestJson(JSON.stringify(json))).toEqual({
      metricNames: ['a', 'b'],
      dataPoints: 3,
    });
    // ResourceMetrics{ ScopeMetrics{ Metric{ name "m", sum { dp, dp } } } } by hand.
    const dp = [0x0a, 0x00];
    const sum = [0x3a, 4, ...dp, ...dp];
    const metric = [0x0a, 1, 0x6d, ...sum];
    const scope = [0x12, metric.length, ...metric];
    const rm = [0x12, scope.length, ...scope];
    const req = Uint8Array.from([0x0a, rm.length, ...rm]);
    expect(decodeMetricsRequest(req)).toEqual({ metricNames: ['m'], dataPoints: 2 });
  });
});
