import { randomBytes } from 'node:crypto';
import {
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  type Tracer,
  context,
  propagation,
  trace,
} from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAttributeFilter } from '../attribute-filter.js';
import { type SamplerName, type SpanLimits, readConfig } from '../config.js';
import { createSampler } from '../sampler.js';
import {
  createAttributeFilterSpanProcessor,
  createBaggageSpanProcessor,
  filterSpan,
} from '../span-processors.js';
import { LeanBatch } from './batch.js';
import { LeanContext, LeanContextManager } from './context.js';
import { createLeanSampler } from './sampler.js';
import { LeanTracerProvider } from './tracer.js';

const resource = resourceFromAttributes({ 'service.name': 'diff' });
const filter = createAttributeFilter({ captureMessageContent: false, redactAttributes: ['user.email'] });
const BAGGAGE_KEYS = ['session.id'];

function otelTracer(limits: SpanLimits, sampler: SamplerName = 'parentbased_always_on', ratio = 1) {
  const spans = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource,
    sampler: createSampler(sampler, ratio),
    spanLimits: limits,
    spanProcessors: [
      createBaggageSpanProcessor(BAGGAGE_KEYS),
      createAttributeFilterSpanProcessor(filter),
      new SimpleSpanProcessor(spans),
    ],
  });
  return { tracer: provider.getTracer('diff', '1.0.0'), ended: () => spans.getFinishedSpans() };
}

function leanTracer(limits: SpanLimits, sampler: SamplerName = 'parentbased_always_on', ratio = 1) {
  const ended: ReadableSpan[] = [];
  const provider = new LeanTracerProvider({
    resource,
    sampler: createLeanSampler(sampler, ratio),
    limits,
    baggageKeys: BAGGAGE_KEYS,
    onEnd: (span) => {
      filterSpan(filter, span);
      ended.push(span);
    },
  });
  return { tracer: provider.getTracer('diff', '1.0.0'), ended: () => ended };
}

/** A span as stored, ids replaced by their position among the run's spans, times by order. */
function normalize(spans: readonly ReadableSpan[]) {
  const ids = new Map<string, number>();
  const id = (spanId: string | undefined) =>
    spanId === undefined ? undefined : (ids.get(spanId) ?? 'outside');
  spans.forEach((s, i) => ids.set(s.spanContext().spanId, i));
  return spans.map((s) => ({
    name: s.name,
    kind: s.kind,
    parent: id(s.parentSpanContext?.spanId),
    traceFlags: s.spanContext().traceFlags,
    attributes: s.attributes,
    events: s.events.map((e) => ({
      name: e.name,
      attributes: e.attributes,
      dropped: e.droppedAttributesCount,
    })),
    links: s.links.map((l) => ({ attributes: l.attributes, dropped: l.droppedAttributesCount })),
    status: s.status,
    dropped: [s.droppedAttributesCount, s.droppedEventsCount, s.droppedLinksCount],
    scope: [s.instrumentationScope.name, s.instrumentationScope.version],
    resource: s.resource.attributes,
    positiveDuration: s.duration[0] > 0 || s.duration[1] >= 0,
  }));
}

/** The same calls an agent framework makes, on any tracer. */
function workload(tracer: Tracer, error: Error): void {
  const baggage = propagation.setBaggage(
    ROOT_CONTEXT,
    propagation.createBaggage({ 'session.id': { value: 's-1' } }),
  );
  context.with(baggage, () => {
    tracer.startActiveSpan(
      'invoke_agent',
      { kind: SpanKind.SERVER, attributes: { 'gen_ai.agent.name': 'a' } },
      (root) => {
        tracer.startActiveSpan('chat', (chat) => {
          chat.setAttributes({
            'gen_ai.input.messages': '[{"role":"user"}]',
            'user.email': 'x@y.z',
            long: 'abcdefghijklmnop',
            list: ['abcdefghijk', 'b'],
            '': 'empty key',
            bad: { nested: 1 } as never,
            nothing: undefined,
            n: 3,
          });
          for (let i = 0; i < 6; i++) chat.addEvent(`e${i}`, { i, a: 1, b: 2, c: 3, d: 4 });
          chat.addEvent('gen_ai.content.prompt', { content: 'secret' });
          chat.addEvent('timed', Date.now());
          chat.recordException(error);
          chat.recordException('plain');
          chat.setStatus({ code: SpanStatusCode.ERROR, message: 'failed' });
          chat.updateName('chat model');
          chat.end();
          chat.setAttribute('after', 'end');
        });
        const linked = tracer.startSpan('linked', {
          links: [
            { context: root.spanContext(), attributes: { a: 1, b: 2, c: 3, d: 4, e: 5 } },
            { context: root.spanContext() },
            { context: root.spanContext() },
            { context: root.spanContext() },
          ],
        });
        linked.setStatus({ code: SpanStatusCode.OK });
        linked.setStatus({ code: SpanStatusCode.ERROR, message: 'ignored after OK' });
        linked.end();
        tracer.startSpan('fresh root', { root: true }).end();
        tracer.startSpan('suppressed', {}, suppressTracing(context.active())).end();
        for (let i = 0; i < 8; i++) root.setAttribute(`k${i}`, i);
        root.setAttribute('gen_ai.agent.name', 'replaced');
        root.end();
      },
    );
  });
}

const SMALL: SpanLimits = {
  attributeCountLimit: 6,
  attributeValueLengthLimit: 5,
  eventCountLimit: 4,
  linkCountLimit: 3,
  attributePerEventCountLimit: 3,
  attributePerLinkCountLimit: 2,
};

let restore: () => void;
beforeEach(() => {
  const manager = new LeanContextManager().enable();
  context.setGlobalContextManager(manager);
  restore = () => context.disable();
});
afterEach(() => restore());

describe('lean tracer against the SDK (same calls, same spans)', () => {
  it.each([
    ['default limits', readConfig({}, {}).spanLimits],
    ['small limits', SMALL],
  ])('%s: names, kinds, parents, attributes, events, links, status, drop counts', (_name, limits) => {
    const otel = otelTracer(limits);
    const lean = leanTracer(limits);
    const error = new Error('boom');
    workload(otel.tracer, error);
    workload(lean.tracer, error);
    expect(normalize(lean.ended())).toEqual(normalize(otel.ended()));
    expect(lean.ended().map((s) => s.name)).toEqual(['chat model', 'linked', 'fresh root', 'invoke_agent']);
  });

  it.each(['parentbased_always_on', 'parentbased_always_off', 'always_on', 'always_off'] as const)(
    '%s: the same spans are recorded under sampled and unsampled remote parents',
    (sampler) => {
      const otel = otelTracer(SMALL, sampler);
      const lean = leanTracer(SMALL, sampler);
      for (const { tracer } of [otel, lean]) {
        for (const flags of [TraceFlags.SAMPLED, TraceFlags.NONE]) {
          const remote = trace.setSpanContext(ROOT_CONTEXT, {
            traceId: 'a'.repeat(32),
            spanId: 'b'.repeat(16),
            traceFlags: flags,
            isRemote: true,
          });
          const parent = tracer.startSpan(`under flags ${flags}`, {}, remote);
          tracer.startSpan('child', {}, trace.setSpan(remote, parent)).end();
          parent.end();
          tracer.startSpan('root').end();
        }
      }
      expect(normalize(lean.ended())).toEqual(normalize(otel.ended()));
    },
  );

  it('traceidratio makes the SDK decision for each trace id', () => {
    const otel = createSampler('traceidratio', 0.3);
    const lean = createLeanSampler('traceidratio', 0.3);
    let sampled = 0;
    for (let i = 0; i < 2000; i++) {
      const traceId = randomBytes(16).toString('hex');
      const expected =
        otel.shouldSample(ROOT_CONTEXT, traceId, 'x', SpanKind.INTERNAL, {}, []).decision === 2;
      expect(lean(traceId, undefined)).toBe(expected);
      if (expected) sampled++;
    }
    expect(sampled).toBeGreaterThan(400);
    expect(sampled).toBeLessThan(800);
  });

  it('a dropped span costs no new object under a non-recording parent and still propagates', () => {
    const lean = leanTracer(SMALL, 'parentbased_always_on');
    const remote = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: 'c'.repeat(32),
      spanId: 'd'.repeat(16),
      traceFlags: TraceFlags.NONE,
      isRemote: true,
    });
    const parent = trace.getSpan(remote)!;
    const child: Span = lean.tracer.startSpan('child', {}, remote);
    expect(child).toBe(parent);
    expect(child.isRecording()).toBe(false);
    child.end();
    expect(lean.ended()).toEqual([]);
  });
});

describe('LeanContext', () => {
  const keys = Array.from({ length: 40 }, (_, i) => Symbol(`k${i}`));

  it('is immutable and persistent: setValue and deleteValue leave the parent as it was', () => {
    const a = LeanContext.ROOT.setValue(keys[0]!, 1);
    const b = a.setValue(keys[1]!, 2).setValue(keys[0]!, 3);
    const c = b.deleteValue(keys[1]!);
    expect([a.getValue(keys[0]!), a.getValue(keys[1]!)]).toEqual([1, undefined]);
    expect([b.getValue(keys[0]!), b.getValue(keys[1]!)]).toEqual([3, 2]);
    expect([c.getValue(keys[0]!), c.getValue(keys[1]!)]).toEqual([3, undefined]);
    expect(c.deleteValue(keys[5]!)).toBe(c);
  });

  it('keeps every value through the fold of a long chain', () => {
    let ctx: Context = LeanContext.ROOT;
    for (let round = 0; round < 3; round++) {
      keys.forEach((key, i) => {
        ctx = ctx.setValue(key, round * 100 + i);
      });
    }
    ctx = ctx.deleteValue(keys[7]!);
    keys.forEach((key, i) => expect(ctx.getValue(key)).toBe(i === 7 ? undefined : 200 + i));
  });

  it('gives itself back for a value it already holds, and with() of the active context adds no frame', () => {
    const span = trace.wrapSpanContext({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: TraceFlags.NONE,
    });
    const ctx = trace.setSpan(LeanContext.ROOT, span);
    expect(trace.setSpan(ctx, span)).toBe(ctx);
    expect(ctx.setValue(keys[1]!, undefined)).toBe(ctx);
    const manager = new LeanContextManager().enable();
    const storage = (manager as unknown as { _asyncLocalStorage: { run: (...a: unknown[]) => unknown } })
      ._asyncLocalStorage;
    let runs = 0;
    const run = storage.run.bind(storage);
    storage.run = (...a: unknown[]) => (runs++, run(...a));
    manager.with(ctx, () => {
      // a dropped child under a non-recording parent is the parent: same context, no new frame
      const same = manager.with(
        trace.setSpan(manager.active(), span),
        function (this: unknown, x: number) {
          expect(this).toBe(storage);
          return [manager.active(), x];
        },
        storage,
        7,
      );
      expect(same).toEqual([ctx, 7]);
    });
    expect(runs).toBe(1);
  });

  it('is what context.active() derives from, inside and outside context.with', () => {
    expect(context.active()).toBe(LeanContext.ROOT);
    const ctx = context.active().setValue(keys[0]!, 'v');
    expect(ctx).toBeInstanceOf(LeanContext);
    context.with(ctx, () => expect(context.active().getValue(keys[0]!)).toBe('v'));
  });
});

describe('LeanBatch', () => {
  const batchConfig = {
    maxQueueSize: 5,
    maxExportBatchSize: 2,
    scheduledDelayMs: 60_000,
    exportTimeoutMs: 5000,
  };

  function recording(asyncResource = false) {
    let settle: (value: string) => void = () => {};
    const pending = new Promise<string>((resolve) => (settle = resolve));
    const res = asyncResource ? resourceFromAttributes({ 'host.id': pending }) : resource;
    const exported: { names: string[]; pending: boolean | undefined }[] = [];
    const exporter = {
      export(spans: ReadableSpan[], done: (result: { code: number }) => void) {
        exported.push({
          names: spans.map((s) => s.name),
          pending: spans[0]?.resource.asyncAttributesPending,
        });
        setImmediate(() => done({ code: 0 }));
      },
      shutdown: () => Promise.resolve(),
    };
    const batch = new LeanBatch(exporter, batchConfig);
    const span = (name: string) => ({ name, resource: res }) as unknown as ReadableSpan;
    return { batch, span, exported, settle };
  }

  it('exports full batches one at a time, drops past the queue size, and flushes the rest', async () => {
    const { batch, span, exported } = recording();
    for (let i = 0; i < 8; i++) batch.add(span(`s${i}`));
    await batch.flush();
    // s0, s1 go out at once; s2…s6 fill the queue of 5 behind that export; s7 is dropped
    expect(exported.map((e) => e.names)).toEqual([['s0', 's1'], ['s2', 's3'], ['s4', 's5'], ['s6']]);
  });

  it('waits for the resource’s async attributes before the first export (as the SDK does)', async () => {
    const { batch, span, exported, settle } = recording(true);
    batch.add(span('a'));
    batch.add(span('b'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(exported).toEqual([]);
    settle('h-1');
    await batch.flush();
    expect(exported).toEqual([{ names: ['a', 'b'], pending: false }]);
  });
});
