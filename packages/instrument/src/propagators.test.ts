import {
  ROOT_CONTEXT,
  TraceFlags,
  defaultTextMapGetter,
  defaultTextMapSetter,
  propagation,
  trace,
} from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import type { PropagatorName } from './config.js';
import { CachingBaggagePropagator, createPropagator } from './propagators.js';
import { W3CBaggagePropagator, suppressTracing } from '@opentelemetry/core';

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
