import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import {
  all,
  bytesOf,
  decode,
  hex,
  keyValues,
  nanos,
  numberOf,
  textOf,
} from './protobuf-reader.test-util.js';
import { Gen, NUMBERS, STRINGS } from './random-spans.test-util.js';
import { serializeTraceRequest } from './trace-serializer.js';

/** Fails with where the two encodings part, rather than with two unreadable buffers. */
function expectSameAsUpstream(spans: ReadableSpan[]): Buffer {
  const ours = Buffer.from(serializeTraceRequest(spans));
  const theirs = Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!);
  if (!ours.equals(theirs)) {
    let i = 0;
    while (i < ours.length && ours[i] === theirs[i]) i++;
    const around = (b: Buffer) => b.subarray(Math.max(0, i - 16), i + 16).toString('hex');
    expect.fail(
      `${ours.length} bytes vs upstream's ${theirs.length}, first difference at ${i}:\n` +
        `  ours     ${around(ours)}\n  upstream ${around(theirs)}`,
    );
  }
  return ours;
}

describe('serializeTraceRequest', () => {
  it('matches upstream byte for byte on random batches', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const g = new Gen(seed);
      const spans = g.batch(g.pick([1, 2, 5, 20, 60]));
      try {
        expectSameAsUpstream(spans);
      } catch (e) {
        throw new Error(`seed ${seed}: ${(e as Error).message}`, { cause: e });
      }
    }
  });

  it('encodes no spans as an empty request, as upstream', () => {
    expect(expectSameAsUpstream([]).length).toBe(0);
  });

  it('encodes every kind of attribute value as upstream', () => {
    const values: unknown[] = [
      ...STRINGS,
      'a'.repeat(127),
      'a'.repeat(128),
      'a'.repeat(20_000),
      'é'.repeat(70),
      ...NUMBERS,
      true,
      false,
      [],
      ['a', null, undefined, 'b'],
      [1, 2.5, -3],
      [true, false],
      [[1, [2, ['deep']]], { nested: { object: [null] } }],
      {},
      { a: 1, b: 'two', c: [3], '2': 'integer-like keys come first' },
      new Uint8Array(0),
      Uint8Array.of(0, 128, 255),
      Buffer.from('a buffer'),
      new Uint8Array(300),
      Int8Array.of(-1, 2),
      null,
      undefined,
      () => 'function',
      Symbol('symbol'),
      10n,
    ];
    const g = new Gen(7);
    const resource = g.resource();
    const scope = g.scope();
    const spans = values.map((value) => {
      const span = g.span(resource, scope);
      return { ...span, attributes: { value } as ReadableSpan['attributes'] };
    });
    expectSameAsUpstream(spans);
    expectSameAsUpstream([{ ...spans[0]!, attributes: {} }]);
  });

  it('encodes a value afresh when its key last had another (the KeyValue cache)', () => {
    const g = new Gen(11);
    const resource = g.resource();
    const scope = g.scope();
    const withValue = (value: unknown) => ({
      ...g.span(resource, scope),
      attributes: { 'cached.key': value, other: 'x' } as ReadableSpan['attributes'],
    });
    const sequence = [
      'a',
      'a',
      'a',
      'b',
      'b',
      1,
      1,
      true,
      'a',
      'é',
      'é',
      1.5,
      '1',
      1,
      -0,
      0,
      'a'.repeat(300),
      'a',
    ];
    for (const value of sequence) expectSameAsUpstream([withValue(value), withValue(value)]);
    expectSameAsUpstream(sequence.map(withValue));
  });

  it('matches upstream on spans made by the SDK', () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'svc', 'process.pid': 42 }),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const http = provider.getTracer('@opentelemetry/instrumentation-http', '0.223.0');
    const agent = provider.getTracer('agent');
    const remote = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: 1,
      isRemote: true,
      traceState: new TraceState('congo=t61rcWkgMzE'),
    });
    const server = http.startSpan(
      'POST /invocations',
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': 'POST', 'server.port': 8080 } },
      remote,
    );
    const child = agent.startSpan(
      'invoke_agent',
      {
        links: [
          { context: server.spanContext(), attributes: { reason: 'caused by' } },
          { context: trace.getSpanContext(remote)! },
        ],
      },
      trace.setSpan(ROOT_CONTEXT, server),
    );
    child.addEvent('started', { step: 1 });
    child.recordException(new Error('boom: ünïcode'));
    child.setStatus({ code: SpanStatusCode.ERROR, message: 'it failed' });
    child.end();
    server.setAttribute('http.response.status_code', 500);
    server.end();
    expectSameAsUpstream(exporter.getFinishedSpans());
  });

  it('says what the spans say (read back with a protobuf reader)', () => {
    const g = new Gen(3);
    const resource = resourceFromAttributes({ 'service.name': 'svc' }, { schemaUrl: 'https://s/1' });
    const scope = { name: 'scope', version: '1.0', schemaUrl: 'https://s/2' };
    const spans = Array.from({ length: 5 }, (_, i) => {
      const span = g.span(resource, scope);
      return {
        ...span,
        name: `span ${i} – ü`,
        kind: SpanKind.CLIENT,
        attributes: {
          s: 'text é',
          i: -5,
          d: 0.25,
          b: true,
          a: ['x', 'y'],
          o: { k: 1 },
        } as unknown as ReadableSpan['attributes'],
        parentSpanContext: {
          traceId: span.spanContext().traceId,
          spanId: g.hex(8),
          traceFlags: 1,
          isRemote: true,
        },
        events: [{ name: 'ev', time: g.time(), attributes: { n: 2 } }],
        status: { code: SpanStatusCode.ERROR, message: 'bad' },
      };
    });
    const request = decode(serializeTraceRequest(spans));
    const resourceSpans = all(request, 1).map((b) => decode(b as Uint8Array));
    expect(resourceSpans).toHaveLength(1);
    const [rs] = resourceSpans;
    expect(keyValues(decode(bytesOf(rs!, 1)!), 1)).toEqual({ 'service.name': 'svc' });
    expect(textOf(rs!, 3)).toBe('https://s/1');
    const [ss] = all(rs!, 2).map((b) => decode(b as Uint8Array));
    const scopeMessage = decode(bytesOf(ss!, 1)!);
    expect([textOf(scopeMessage, 1), textOf(scopeMessage, 2), textOf(ss!, 3)]).toEqual([
      'scope',
      '1.0',
      'https://s/2',
    ]);
    const decoded = all(ss!, 2).map((b) => decode(b as Uint8Array));
    expect(decoded).toHaveLength(spans.length);
    decoded.forEach((m, i) => {
      const span = spans[i]!;
      const ctx = span.spanContext();
      expect(hex(bytesOf(m, 1))).toBe(ctx.traceId);
      expect(hex(bytesOf(m, 2))).toBe(ctx.spanId);
      expect(hex(bytesOf(m, 4))).toBe(span.parentSpanContext.spanId);
      expect(textOf(m, 5)).toBe(span.name);
      expect(numberOf(m, 6)).toBe(BigInt(SpanKind.CLIENT + 1));
      expect(numberOf(m, 7)).toBe(BigInt.asUintN(64, nanos(span.startTime)));
      expect(numberOf(m, 8)).toBe(BigInt.asUintN(64, nanos(span.endTime)));
      expect(keyValues(m, 9)).toEqual(span.attributes);
      expect(numberOf(m, 10)).toBe(BigInt(span.droppedAttributesCount));
      const event = decode(all(m, 11)[0] as Uint8Array);
      expect([textOf(event, 2), keyValues(event, 3)]).toEqual(['ev', { n: 2 }]);
      const status = decode(bytesOf(m, 15)!);
      expect([textOf(status, 2), numberOf(status, 3)]).toEqual(['bad', 2n]);
      expect(numberOf(m, 16)).toBe(BigInt((ctx.traceFlags & 0xff) | 0x100 | 0x200));
    });
  });

  it('handles batches bigger than its buffer, and results stay intact after later calls', () => {
    const g = new Gen(5);
    const resource = g.resource();
    const scope = g.scope();
    const big = {
      ...g.span(resource, scope),
      attributes: { blob: 'x'.repeat(5_000_000), utf8: 'é'.repeat(40_000) },
    };
    const many = Array.from({ length: 3000 }, () => g.span(resource, scope));
    const first = serializeTraceRequest([big, ...many]);
    const copy = Buffer.from(first);
    expectSameAsUpstream([big, ...many]);
    expectSameAsUpstream(many.slice(0, 3));
    expect(Buffer.from(first).equals(copy)).toBe(true);
  });
});
