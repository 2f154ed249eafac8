import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { type CloudXRayPropagatorOptions, CloudXRayPropagator } from './cloud-xray-propagator.js';
import { type SessionHeaderPropagatorOptions, SessionHeaderPropagator } from './session-header-propagator.js';

/** Options of {@link createAgentPropagator}. */
export interface AgentPropagatorOptions {
  /** Options of the X-Ray propagator (which headers `inject` writes). */
  xray?: CloudXRayPropagatorOptions;
  /** Options of the session-header propagator (whether `inject` also writes the header). */
  session?: SessionHeaderPropagatorOptions;
}

/**
 * The propagator an agent runtime needs, as one `CompositePropagator`, in this order:
 * 1. X-Ray (`X-Cloud-Trace-Id`, then `X-Amzn-Trace-Id`);
 * 2. W3C `traceparent`/`tracestate` — later extractors overwrite earlier ones, so `traceparent`
 *    wins when both it and an X-Ray header are sent;
 * 3. W3C `baggage`;
 * 4. the session header, copied into baggage `session.id` unless the baggage already has one.
 */
export function createAgentPropagator(options: AgentPropagatorOptions = {}): CompositePropagator {
  return new CompositePropagator({
    propagators: [
      new CloudXRayPropagator(options.xray),
      new W3CTraceContextPropagator(),
      new W3CBaggagePropagator(),
      new SessionHeaderPropagator(options.session),
    ],
  });
}
