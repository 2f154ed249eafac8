import type { TextMapPropagator } from '@opentelemetry/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { CloudXRayPropagator, SessionHeaderPropagator } from '@agentrt/propagation';
import type { PropagatorName } from './config.js';

/**
 * The propagators named in `OTEL_PROPAGATORS`, in a fixed order whatever order they were listed
 * in: X-Ray first so `traceparent` wins when both are sent, and the session header last so it
 * only fills in `session.id` when the W3C baggage has none.
 */
export function createPropagator(names: readonly PropagatorName[]): TextMapPropagator {
  const wanted = new Set(names);
  const propagators: TextMapPropagator[] = [];
  if (wanted.has('xray')) propagators.push(new CloudXRayPropagator());
  if (wanted.has('tracecontext')) propagators.push(new W3CTraceContextPropagator());
  if (wanted.has('baggage')) propagators.push(new W3CBaggagePropagator());
  if (wanted.has('session')) propagators.push(new SessionHeaderPropagator());
  return new CompositePropagator({ propagators });
}
