import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type HrTime, type Link } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
  type TimedEvent,
} from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { serializeTraceRequest } from './trace-serializer.js';

type Resource = ReadableSpan['resource'];
type Scope = ReadableSpan['instrumentationScope'];

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

// ---- random spans ------------------------------------------------------------------------------

/** mulberry32: a small seeded generator, so a failing seed can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const KEYS = [
  'http.request.method',
  'url.path',
  'server.port',
  'k',
  '',
  '0',
  '17',
  'clé',
  'emoji.🙂',
  'long.'.repeat(40),
];
const NUMBERS = [
  0,
  -0,
  1,
  -1,
  127,
  128,
  2 ** 31,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 35,
  2 ** 53 + 2,
  2 ** 62,
  2 ** 63,
  -(2 ** 63),
  -(2 ** 31),
  -123456789012,
  0.5,
  -2.75,
  1e300,
  Number.MIN_VALUE,
  NaN,
  Infinity,
  -Infinity,
];
const STRINGS = [
  '',
  'POST',
  '127.0.0.1',
  'é',
  'naïve café',
  '中文字符',
  '🙂 emoji',
  'lone \ud800 high',
  'lone \udc00 low',
];

class Gen {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = random(seed);
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  ascii(length: number): string {
    let s = '';
    for (let i = 0; i < length; i++) s += String.fromCharCode(32 + this.int(95));
    return s;
  }
  string(): string {
    switch (this.int(6)) {
      case 0:
        return this.pick(STRINGS);
      case 1:
        return this.ascii(100 + this.int(300)); // lengths past one varint byte, and past the copy loop
      case 2:
        return this.pick(STRINGS) + this.ascii(this.int(40)) + this.pick(STRINGS);
      default:
        return this.ascii(this.int(24));
    }
  }
  number(): number {
    if (this.chance(0.5)) return this.pick(NUMBERS);
    return this.chance(0.5) ? this.int(100_000) : (this.next() - 0.5) * 1e6;
  }
  /** A hex id, now and then in capitals, with an odd digit or with a non-hex char (as upstream reads them). */
  hex(bytes: number): string {
    let s = '';
    for (let i = 0; i < bytes; i++) s += this.int(256).toString(16).padStart(2, '0');
    switch (this.int(20)) {
      case 0:
        return s.toUpperCase();
      case 1:
        return s + 'a';
      case 2:
        return s.slice(0, -2) + this.pick(['zz', 'g0', '-1', 'é0', '中0']);
      default:
        return s;
    }
  }
  /** Any attribute value upstream encodes, including the ones the SDK would drop or never makes. */
  value(depth: number): unknown {
    switch (this.int(depth > 0 ? 12 : 8)) {
      case 0:
      case 1:
        return this.string();
      case 2:
        return this.number();
      case 3:
        return this.chance(0.5);
      case 4:
        return this.pick([null, undefined, () => 1, Symbol('s'), 10n]);
      case 5:
        return this.pick([
          new Uint8Array(0),
          Uint8Array.of(0, 1, 255),
          Buffer.from('bytes'),
          Int8Array.of(-1, 2),
        ]);
      case 6:
        return Array.from({ length: this.int(4) }, () => this.pick([this.string(), null, undefined]));
      case 7:
        return Array.from({ length: this.int(4) }, () => this.number());
      case 8:
        return Array.from({ length: this.int(3) }, () => this.value(depth - 1));
      default:
        return this.attributes(depth - 1, 4);
    }
  }
  attributes(depth: number, max: number): Record<string, unknown> {
    const attributes: Record<string, unknown> = {};
    const n = this.int(max + 1);
    for (let i = 0; i < n; i++) {
      attributes[this.chance(0.8) ? this.pick(KEYS) : this.string()] = this.value(depth);
    }
    return attributes;
  }
  count(): number {
    return this.pick([0, 0, 1, 127, 128, 16_384, this.int(1_000_000)]);
  }
  time(): HrTime {
    return this.pick<HrTime>([
      [0, 0],
      [1_700_000_000 + this.int(100_000_000), this.int(1_000_000_000)],
      [2 ** 32 + this.int(1000), 999_999_999],
      [18_446_744_072, 999_999_999],
    ]);
  }
  traceState(): TraceState | undefined {
    return this.pick([undefined, undefined, new TraceState(''), new TraceState('vendor=v1,other=x-y')]);
  }
  event(): TimedEvent {
    return {
      name: this.string(),
      time: this.time(),
      attributes: this.chance(0.3) ? undefined : (this.attributes(2, 5) as TimedEvent['attributes']),
      droppedAttributesCount: this.chance(0.5) ? undefined : this.count(),
    };
  }
  link(): Link {
    return {
      context: {
        traceId: this.hex(16),
        spanId: this.hex(8),
        traceFlags: this.pick([0, 1, this.int(256)]),
        isRemote: this.pick([undefined, true, false]),
        traceState: this.traceState(),
      },
      attributes: this.chance(0.3) ? undefined : (this.attributes(2, 5) as Link['attributes']),
      droppedAttributesCount: this.chance(0.5) ? undefined : this.count(),
    };
  }
  span(resource: Resource, scope: Scope): ReadableSpan {
    const context = {
      traceId: this.hex(16),
      spanId: this.hex(8),
      traceFlags: this.pick([0, 1, this.int(256)]),
      traceState: this.traceState(),
    };
    const parentSpanContext = this.pick([
      undefined,
      {
        traceId: context.traceId,
        spanId: this.hex(8),
        traceFlags: 1,
        isRemote: this.pick([undefined, true, false]),
      },
      { traceId: context.traceId, spanId: '', traceFlags: 1 },
    ]);
    return {
      name: this.string(),
      kind: this.pick([0, 1, 2, 3, 4, undefined]) as SpanKind,
      spanContext: () => context,
      parentSpanContext,
      startTime: this.time(),
      endTime: this.time(),
      duration: [0, 0],
      ended: true,
      status: {
        code: this.pick([SpanStatusCode.UNSET, SpanStatusCode.OK, SpanStatusCode.ERROR]),
        message: this.pick([undefined, '', this.string()]),
      },
      attributes: this.attributes(2, this.pick([0, 3, 16])) as ReadableSpan['attributes'],
      events: Array.from({ length: this.pick([0, 0, 1, 3]) }, () => this.event()),
      links: Array.from({ length: this.pick([0, 0, 1, 2]) }, () => this.link()),
      resource,
      instrumentationScope: scope,
      droppedAttributesCount: this.count(),
      droppedEventsCount: this.count(),
      droppedLinksCount: this.count(),
    };
  }
  resource(): Resource {
    if (this.chance(0.3)) {
      return resourceFromAttributes(
        { 'service.name': this.string(), 'process.pid': this.int(100_000) },
        this.chance(0.5) ? { schemaUrl: 'https://opentelemetry.io/schemas/1.30.0' } : undefined,
      );
    }
    const schemaUrl = this.pick([undefined, '', 'https://opentelemetry.io/schemas/1.28.0']);
    return { attributes: this.attributes(1, 8), schemaUrl } as unknown as Resource;
  }
  scope(): Scope {
    const scope: Record<string, unknown> = {
      name: this.pick(['@opentelemetry/instrumentation-http', 'agent', '', 'spé']),
      version: this.pick([undefined, '', '0.223.0']),
      schemaUrl: this.pick([undefined, '', 'https://opentelemetry.io/schemas/1.30.0']),
    };
    if (this.chance(0.2)) {
      // newer scopes carry attributes: upstream already encodes them
      scope.attributes = this.attributes(1, 3);
      scope.droppedAttributesCount = this.pick([0, 2]);
    }
    return scope as unknown as Scope;
  }
  /** Spans spread over a few resources and scopes (some alike but not the same object), shuffled. */
  batch(size: number): ReadableSpan[] {
    const resources = Array.from({ length: 1 + this.int(3) }, () => this.resource());
    const scope = this.scope();
    const scopes = [scope, { ...scope }, ...Array.from({ length: this.int(3) }, () => this.scope())];
    return Array.from({ length: size }, () => this.span(this.pick(resources), this.pick(scopes)));
  }
}

// ---- a protobuf reader, for checking what the bytes say ------------------------------------------

type Message = Map<number, (bigint | Uint8Array)[]>;

/** The fields of one message: varints and fixed-width values as bigint, length-delimited as bytes. */
function decode(bytes: Uint8Array): Message {
  const fields: Message = new Map();
  let p = 0;
  const varint = () => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const b = bytes[p++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
  };
  const fixed = (n: number) => {
    let v = 0n;
    for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(bytes[p + i]!);
    p += n;
    return v;
  };
  while (p < bytes.length) {
    const tag = Number(varint());
    const wire = tag & 7;
    let value: bigint | Uint8Array;
    if (wire === 0) value = varint();
    else if (wire === 1) value = fixed(8);
    else if (wire === 5) value = fixed(4);
    else if (wire === 2) {
      const length = Number(varint());
      value = bytes.subarray(p, p + length);
      p += length;
    } else throw new Error(`wire type ${wire} at ${p}`);
    const list = fields.get(tag >>> 3) ?? [];
    list.push(value);
    fields.set(tag >>> 3, list);
  }
  expect(p).toBe(bytes.length);
  return fields;
}

const all = (m: Message, field: number) => m.get(field) ?? [];
const bytesOf = (m: Message, field: number) => all(m, field)[0] as Uint8Array | undefined;
const textOf = (m: Message, field: number) => Buffer.from(bytesOf(m, field) ?? []).toString('utf8');
const numberOf = (m: Message, field: number) => all(m, field)[0] as bigint | undefined;

function anyValue(m: Message): unknown {
  if (m.has(1)) return textOf(m, 1);
  if (m.has(2)) return numberOf(m, 2) === 1n;
  if (m.has(3)) return Number(BigInt.asIntN(64, numberOf(m, 3)!));
  if (m.has(4))
    return Buffer.from(
      BigInt.asUintN(64, numberOf(m, 4)!).toString(16).padStart(16, '0'),
      'hex',
    ).readDoubleBE();
  if (m.has(5)) return all(decode(bytesOf(m, 5)!), 1).map((v) => anyValue(decode(v as Uint8Array)));
  if (m.has(6)) return keyValues(decode(bytesOf(m, 6)!), 1);
  if (m.has(7)) return Uint8Array.from(bytesOf(m, 7)!);
  return undefined;
}

function keyValues(m: Message, field: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of all(m, field)) {
    const pair = decode(kv as Uint8Array);
    out[textOf(pair, 1)] = anyValue(decode(bytesOf(pair, 2) ?? new Uint8Array()));
  }
  return out;
}

const nanos = (t: HrTime) => BigInt(t[0]) * 1_000_000_000n + BigInt(t[1]);
const hex = (b: Uint8Array | undefined) => Buffer.from(b ?? []).toString('hex');

// ---- tests -------------------------------------------------------------------------------------

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
