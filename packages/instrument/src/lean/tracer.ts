import {
  type Context,
  type Span,
  type SpanContext,
  SpanKind,
  type SpanOptions,
  TraceFlags,
  type Tracer,
  type TracerProvider,
  context as contextApi,
  propagation,
  trace,
} from '@opentelemetry/api';
import { isTracingSuppressed } from '@opentelemetry/core';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { SpanLimits } from '../config.js';
import { newSpanId, newTraceId } from './ids.js';
import type { LeanSampler } from './sampler.js';
import { LeanSpan, type SpanShared } from './span.js';

/** What the lean tracer provider needs (see start.ts). */
export interface LeanTracerOptions {
  readonly resource: ReadableSpan['resource'];
  readonly sampler: LeanSampler;
  readonly limits: Readonly<SpanLimits>;
  /** Baggage keys copied onto every span at start (`session.id` first). */
  readonly baggageKeys: readonly string[];
  readonly onEnd: (span: LeanSpan) => void;
}

/** The span of a suppressed context (the SDK's too): invalid, non-recording, one for all. */
const SUPPRESSED = trace.wrapSpanContext({
  traceId: '00000000000000000000000000000000',
  spanId: '0000000000000000',
  traceFlags: TraceFlags.NONE,
});

/** One tracer per name, version and schema URL, so each has one scope object (the encoder groups by it). */
export class LeanTracerProvider implements TracerProvider {
  private readonly tracers = new Map<string, LeanTracer>();

  constructor(private readonly options: LeanTracerOptions) {}

  getTracer(name: string, version?: string, options?: { schemaUrl?: string }): Tracer {
    const key = `${name}@${version ?? ''}:${options?.schemaUrl ?? ''}`;
    let tracer = this.tracers.get(key);
    if (tracer === undefined) {
      const scope = { name, version, schemaUrl: options?.schemaUrl };
      tracer = new LeanTracer({ ...this.options, instrumentationScope: scope }, this.options);
      this.tracers.set(key, tracer);
    }
    return tracer;
  }
}

/**
 * Starts spans with the SDK's rules: `root` ignores the parent, a suppressed context gets the
 * invalid span, a child keeps its parent's trace id and trace state. A span the sampler drops is
 * a non-recording span carrying its context; under a non-recording parent, the parent itself.
 */
export class LeanTracer implements Tracer {
  constructor(
    private readonly shared: SpanShared,
    private readonly options: LeanTracerOptions,
  ) {}

  startSpan(name: string, options: SpanOptions = {}, context: Context = contextApi.active()): Span {
    if (options.root === true) context = trace.deleteSpan(context);
    if (isTracingSuppressed(context)) return SUPPRESSED;
    const parent = trace.getSpan(context);
    const parentContext = parent?.spanContext();
    // a LeanSpan's ids are ours, valid by construction: no hex checks for the common parent
    const valid =
      parentContext !== undefined && (parent instanceof LeanSpan || trace.isSpanContextValid(parentContext));
    const traceId = valid ? parentContext.traceId : newTraceId();
    const parentSampled = valid ? (parentContext.traceFlags & TraceFlags.SAMPLED) !== 0 : undefined;
    if (!this.options.sampler(traceId, parentSampled)) {
      if (parent !== undefined && valid && !(parent instanceof LeanSpan)) return parent;
      return trace.wrapSpanContext(
        spanContextOf(traceId, TraceFlags.NONE, valid ? parentContext : undefined),
      );
    }
    const spanContext = spanContextOf(traceId, TraceFlags.SAMPLED, valid ? parentContext : undefined);
    const kind = options.kind ?? SpanKind.INTERNAL;
    const span = new LeanSpan(
      this.shared,
      spanContext,
      name,
      kind,
      valid ? parentContext : undefined,
      options.startTime,
    );
    if (options.links !== undefined) span.addLinks(options.links);
    if (options.attributes !== undefined) span.setAttributes(options.attributes);
    this.copyBaggage(span, context);
    return span;
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, ...rest: unknown[]): ReturnType<F> {
    const fn = rest[rest.length - 1] as F;
    const options = rest.length >= 2 ? (rest[0] as SpanOptions | undefined) : undefined;
    const parent =
      rest.length >= 3 ? ((rest[1] as Context | undefined) ?? contextApi.active()) : contextApi.active();
    const span = this.startSpan(name, options, parent);
    return contextApi.with(trace.setSpan(parent, span), fn as (span: Span) => ReturnType<F>, undefined, span);
  }

  /** The configured baggage entries (`session.id`) as span attributes, at start. */
  private copyBaggage(span: LeanSpan, context: Context): void {
    const baggage = propagation.getBaggage(context);
    if (baggage === undefined) return;
    for (const key of this.options.baggageKeys) {
      const entry = baggage.getEntry(key);
      if (entry !== undefined && entry.value !== '') span.setAttribute(key, entry.value);
    }
  }
}

function spanContextOf(
  traceId: string,
  traceFlags: TraceFlags,
  parent: SpanContext | undefined,
): SpanContext {
  const traceState = parent?.traceState;
  return traceState === undefined
    ? { traceId, spanId: newSpanId(), traceFlags }
    : { traceId, spanId: newSpanId(), traceFlags, traceState };
}
