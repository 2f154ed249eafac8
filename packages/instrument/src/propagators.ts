import { createRequire } from 'node:module';
import { type TextMapPropagator, diag } from '@opentelemetry/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
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
  if (wanted.has('baggage')) candidates.push(new W3CBaggagePropagator());
  if (wanted.has('session')) candidates.push(new SessionHeaderPropagator());
  const propagators = candidates.filter((p): p is TextMapPropagator => p !== undefined);
  return new CompositePropagator({ propagators });
}
