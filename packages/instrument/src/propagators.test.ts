import {
  ROOT_CONTEXT,
  baggageEntryMetadataFromString,
  TraceFlags,
  defaultTextMapGetter,
  defaultTextMapSetter,
  propagation,
  trace,
} from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import type { PropagatorName } from './config.js';
import { CachingBaggagePropagator, baggageHeader, createPropagator } from './propagators.js';
import {
  CompositePropagator,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
  suppressTracing,
} from '@opentelemetry/core';
import { CloudXRayPropagator } from '@agentrt/propagation';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const SPAN_ID = 'b7ad6b7169203331';
const OTHER_TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SESSION = 'prop-session-0123456789abcdef0123456789';

function extract(names: PropagatorName[], headers: Record<string, string>) {
  return createPropagator(names).extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
}

function inject(names: PropagatorName[]): Record<string, string> {
  const parent = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: TRACE_ID,
    spanId: SPAN_ID,
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  });
  const withBaggage = propagation.setBaggage(
    parent,
    propagation.createBaggage({ 'session.id': { value: SESSION } }),
  );
  const carrier: Record<string, string> = {};
  createPropagator(names).inject(withBaggage, carrier, defaultTextMapSetter);
  return carrier;
}

describe('OTEL_PROPAGATORS', () => {
  it('b3 reads the single B3 header and writes it', () => {
    const sc = trace.getSpanContext(extract(['b3'], { b3: `${TRACE_ID}-${SPAN_ID}-1` }));
    expect(sc).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: TraceFlags.SAMPLED });
    expect(inject(['b3'])).toEqual({ b3: `${TRACE_ID}-${SPAN_ID}-1` });
  });

  it('b3multi reads and writes the X-B3-* headers', () => {
    const sc = trace.getSpanContext(
      extract(['b3multi'], { 'x-b3-traceid': TRACE_ID, 'x-b3-spanid': SPAN_ID, 'x-b3-sampled': '1' }),
    );
    expect(sc).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID });
    expect(inject(['b3multi'])).toEqual({
      'x-b3-traceid': TRACE_ID,
      'x-b3-spanid': SPAN_ID,
      'x-b3-sampled': '1',
    });
  });

  it('jaeger reads and writes uber-trace-id', () => {
    const sc = trace.getSpanContext(extract(['jaeger'], { 'uber-trace-id': `${TRACE_ID}:${SPAN_ID}:0:1` }));
    expect(sc).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: TraceFlags.SAMPLED });
    expect(inject(['jaeger'])['uber-trace-id']).toBe(`${TRACE_ID}:${SPAN_ID}:0:01`);
  });

  it('traceparent wins over B3 when both are sent, whatever the order they are listed in', () => {
    const headers = {
      b3: `${OTHER_TRACE_ID}-${SPAN_ID}-1`,
      traceparent: `00-${TRACE_ID}-${SPAN_ID}-01`,
    };
    expect(trace.getSpanContext(extract(['tracecontext', 'b3'], headers))?.traceId).toBe(TRACE_ID);
    expect(trace.getSpanContext(extract(['b3', 'tracecontext'], headers))?.traceId).toBe(TRACE_ID);
  });

  it('alongside the defaults, B3 is one more header on the way out, and session.id still flows', () => {
    const carrier = inject(['xray', 'b3', 'tracecontext', 'baggage', 'session']);
    expect(carrier).toMatchObject({
      b3: `${TRACE_ID}-${SPAN_ID}-1`,
      traceparent: `00-${TRACE_ID}-${SPAN_ID}-01`,
      baggage: `session.id=${SESSION}`,
    });
    expect(carrier['x-amzn-trace-id']).toMatch(
      /^Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1/,
    );
  });
});

describe('CachingBaggagePropagator', () => {
  const upstream = new W3CBaggagePropagator();
  const caching = new CachingBaggagePropagator();
  const headerOf = (p: W3CBaggagePropagator, ctx: ReturnType<typeof propagation.setBaggage>) => {
    const carrier: Record<string, string> = {};
    p.inject(ctx, carrier, defaultTextMapSetter);
    return carrier;
  };

  it('writes what the upstream propagator writes, every time, and a changed baggage anew', () => {
    const first = propagation.createBaggage({
      'session.id': { value: SESSION },
      'user id': { value: 'a b,c;d=é', metadata: undefined },
    });
    const ctx = propagation.setBaggage(ROOT_CONTEXT, first);
    expect(headerOf(caching, ctx)).toEqual(headerOf(upstream, ctx));
    expect(headerOf(caching, ctx)).toEqual(headerOf(upstream, ctx));
    const changed = propagation.setBaggage(ROOT_CONTEXT, first.setEntry('tenant', { value: 't1' }));
    expect(headerOf(caching, changed).baggage).toContain('tenant=t1');
    expect(headerOf(caching, changed)).toEqual(headerOf(upstream, changed));
  });

  it('writes nothing with no baggage, an empty one, or tracing suppressed', () => {
    const ctx = propagation.setBaggage(ROOT_CONTEXT, propagation.createBaggage({ a: { value: '1' } }));
    expect(headerOf(caching, ROOT_CONTEXT)).toEqual({});
    expect(headerOf(caching, propagation.setBaggage(ROOT_CONTEXT, propagation.createBaggage()))).toEqual({});
    expect(headerOf(caching, suppressTracing(ctx))).toEqual({});
    expect(headerOf(caching, ctx)).toEqual({ baggage: 'a=1' });
  });
});

describe('createPropagator: each context injected once', () => {
  const names: PropagatorName[] = ['xray', 'tracecontext', 'baggage', 'session'];
  const HEADERS = ['baggage', 'traceparent', 'x-amzn-trace-id', 'x-cloud-trace-id'];
  const contextWith = (spanId: string, session: string) =>
    propagation.setBaggage(
      trace.setSpanContext(ROOT_CONTEXT, { traceId: TRACE_ID, spanId, traceFlags: TraceFlags.SAMPLED }),
      propagation.createBaggage({ 'session.id': { value: session } }),
    );
  const injected = (p: ReturnType<typeof createPropagator>, ctx: ReturnType<typeof contextWith>) => {
    const carrier: Record<string, string> = {};
    p.inject(ctx, carrier, defaultTextMapSetter);
    return carrier;
  };

  it('writes what the uncached composite writes, for a context seen again and for new ones', () => {
    const cached = createPropagator(names);
    const uncached = new CompositePropagator({
      propagators: [new CloudXRayPropagator(), new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
    });
    const contexts = Array.from({ length: 10 }, (_, i) =>
      contextWith(`b7ad6b716920333${i}`, `${SESSION}${i}`),
    );
    for (const ctx of [...contexts, contexts[9]!, contexts[8]!, ...contexts]) {
      expect(injected(cached, ctx)).toEqual(injected(uncached, ctx));
    }
    expect(injected(cached, contexts[3]!).traceparent).toBe(`00-${TRACE_ID}-b7ad6b7169203333-01`);
  });

  it('writes neither traceparent nor baggage for a suppressed context, even after its parent', () => {
    const cached = createPropagator(names);
    const ctx = contextWith(SPAN_ID, SESSION);
    expect(Object.keys(injected(cached, ctx)).sort()).toEqual(HEADERS);
    expect(Object.keys(injected(cached, suppressTracing(ctx))).sort()).toEqual(HEADERS.slice(2));
  });
});

describe('baggageHeader', () => {
  const upstream = new W3CBaggagePropagator();
  const upstreamHeader = (baggage: ReturnType<typeof propagation.createBaggage>) => {
    const carrier: Record<string, string> = {};
    upstream.inject(propagation.setBaggage(ROOT_CONTEXT, baggage), carrier, defaultTextMapSetter);
    return carrier['baggage'];
  };
  const entries = (n: number, value: (i: number) => string) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, { value: value(i) }]));

  it('is what the upstream propagator writes, at and over every W3C limit', () => {
    const cases = [
      propagation.createBaggage(),
      propagation.createBaggage({ 'user id': { value: 'a b,c;d=é' }, 'session.id': { value: SESSION } }),
      propagation.createBaggage({ a: { value: '1', metadata: baggageEntryMetadataFromString('p=1;q') } }),
      propagation.createBaggage(entries(3, (i) => (i === 1 ? 'x'.repeat(4100) : 'v'))),
      propagation.createBaggage(entries(200, (i) => `v${i}`)),
      propagation.createBaggage(entries(5, (i) => 'y'.repeat(i === 2 ? 100 : 3000))),
    ];
    for (const baggage of cases) expect(baggageHeader(baggage)).toBe(upstreamHeader(baggage));
    expect(baggageHeader(cases[4]!)?.split(',')).toHaveLength(180);
  });
});
