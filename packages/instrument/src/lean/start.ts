import { type TracerProvider, context, propagation, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { AttributeFilter } from '../attribute-filter.js';
import type { InstrumentConfig } from '../config.js';
import { createSpanExporter } from '../exporters.js';
import { createPropagator } from '../propagators.js';
import { filterSpan } from '../span-processors.js';
import { LeanBatch } from './batch.js';
import { LeanContextManager } from './context.js';
import { createLeanSampler } from './sampler.js';
import type { LeanSpan } from './span.js';
import { LeanTracerProvider } from './tracer.js';

/** The traces half of a pipeline, whichever implementation runs it. */
export interface TracePipeline {
  readonly tracerProvider: TracerProvider;
  /** Exporters to load off the start-up path (see warmUpExporter). */
  readonly exporters: readonly object[];
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * Lean mode's traces: agentrt's tracer provider, context manager and the configured propagators
 * registered as the API globals; ended spans filtered (content capture, redaction) and batched to
 * the same exporter the otel mode uses.
 */
export function startLeanTraces(
  config: Readonly<InstrumentConfig>,
  resource: ReadableSpan['resource'],
  filter: AttributeFilter,
): TracePipeline {
  const exporter = config.traces.exporter === 'none' ? undefined : createSpanExporter(config.traces);
  const batch =
    exporter === undefined
      ? undefined
      : new LeanBatch(
          exporter,
          config.traces.exporter === 'console' ? { ...config.batch, maxExportBatchSize: 1 } : config.batch,
        );
  const onEnd = (span: LeanSpan) => {
    filterSpan(filter, span);
    batch?.add(span);
  };
  const tracerProvider = new LeanTracerProvider({
    resource,
    sampler: createLeanSampler(config.sampler, config.samplerRatio),
    limits: config.spanLimits,
    baggageKeys: config.baggageSpanAttributes,
    onEnd,
  });
  context.setGlobalContextManager(new LeanContextManager().enable());
  propagation.setGlobalPropagator(createPropagator(config.propagators));
  trace.setGlobalTracerProvider(tracerProvider);
  return {
    tracerProvider,
    exporters: exporter === undefined ? [] : [exporter],
    forceFlush: () => batch?.flush() ?? Promise.resolve(),
    shutdown: async () => {
      await batch?.shutdown();
      context.disable();
    },
  };
}
