/**
 * Random spans for checking the OTLP encoder against upstream's: every attribute value kind upstream
 * encodes (some the SDK would drop or never makes), ids upstream reads oddly, counts and times at
 * varint and 64-bit edges, several resources and scopes (some alike but not the same object).
 */
import { SpanStatusCode, type HrTime, type Link, type SpanKind } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-base';

export type Resource = ReadableSpan['resource'];
export type Scope = ReadableSpan['instrumentationScope'];

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
export const NUMBERS = [
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
export const STRINGS = [
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

/** Random spans, attribute values and batches, as upstream could be handed them. */
export class Gen {
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
