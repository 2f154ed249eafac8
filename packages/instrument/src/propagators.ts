import { createRequire } from 'node:module';
import {
  type Baggage,
  type Context,
  type TextMapPropagator,
  type TextMapSetter,
  defaultTextMapSetter,
  diag,
  propagation,
} from '@opentelemetry/api';
import {
  CompositePropagator,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
  isTracingSuppressed,
} from '@opentelemetry/core';
import type * as B3 from '@opentelemetry/propagator-b3';
import type * as Jaeger from '@opentelemetry/propagator-jaeger';
import { CloudXRayPropagator, SessionHeaderPropagator } from '@agentrt/propagation';
import type { PropagatorName } from './config.js';

// B3 and Jaeger are loaded only when named: most agents never see those headers.
const require = createRequire(import.meta.url);

/** A propagator from an optional package; undefined (with a warning) when it cannot be loaded. */
function optional(name: PropagatorName, create: () => TextMapPropagator): TextMapPropagator | undefined {
  try {
    return create();
  } catch (error) {
    diag.warn(`propagator "${name}" could not be loaded; continuing without it`, error);
    return undefined;
  }
}

const BAGGAGE_HEADER = 'baggage';
/** The `baggage` header value of each Baggage already serialized (undefined: nothing to send). */
const baggageHeaders = new WeakMap<Baggage, string | undefined>();

/**
 * W3C baggage that serializes each Baggage once. A Baggage is immutable (setEntry returns a new
 * one), and the one extracted from an incoming request rides along to every outgoing call it makes:
 * the upstream propagator percent-encodes and joins its entries again on every inject (2.7 µs for
 * one `session.id` entry, against a WeakMap lookup). Extraction and the header's value are the
 * upstream propagator's own.
 */
export class CachingBaggagePropagator extends W3CBaggagePropagator {
  override inject(context: Context, carrier: unknown, setter: TextMapSetter = defaultTextMapSetter): void {
    const baggage = propagation.getBaggage(context);
    if (baggage === undefined || isTracingSuppressed(context)) return;
    let header = baggageHeaders.get(baggage);
    if (header === undefined && !baggageHeaders.has(baggage)) {
      super.inject(context, undefined, { set: (_carrier, _key, value) => (header = value) });
      baggageHeaders.set(baggage, header);
    }
    if (header !== undefined) setter.set(carrier, BAGGAGE_HEADER, header);
  }
}

/**
 * The propagators named in `OTEL_PROPAGATORS`, in a fixed order whatever order they were listed
 * in: X-Ray, B3 and Jaeger first so `traceparent` wins when several are sent, and the session
 * header last so it only fills in `session.id` when the W3C baggage has none.
 */
export function createPropagator(names: readonly PropagatorName[]): TextMapPropagator {
  const wanted = new Set(names);
  const candidates: (TextMapPropagator | undefined)[] = [];
  if (wanted.has('xray')) candidates.push(new CloudXRayPropagator());
  for (const b3 of ['b3', 'b3multi'] as const) {
    if (!wanted.has(b3)) continue;
    candidates.push(
      optional(b3, () => {
        const { B3Propagator, B3InjectEncoding } = require('@opentelemetry/propagator-b3') as typeof B3;
        const injectEncoding = b3 === 'b3' ? B3InjectEncoding.SINGLE_HEADER : B3InjectEncoding.MULTI_HEADER;
        return new B3Propagator({ injectEncoding });
      }),
    );
  }
  if (wanted.has('jaeger')) {
    candidates.push(
      optional('jaeger', () => {
        const { JaegerPropagator } = require('@opentelemetry/propagator-jaeger') as typeof Jaeger;
        return new JaegerPropagator();
      }),
    );
  }
  if (wanted.has('tracecontext')) candidates.push(new W3CTraceContextPropagator());
  if (wanted.has('baggage')) candidates.push(new CachingBaggagePropagator());
  if (wanted.has('session')) candidates.push(new SessionHeaderPropagator());
  const propagators = candidates.filter((p): p is TextMapPropagator => p !== undefined);
  return new CompositePropagator({ propagators });
}
