import { BatchSpanProcessor, SimpleSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { AttributeFilter } from './attribute-filter.js';
import type { InstrumentConfig } from './config.js';
import { createSpanExporter } from './exporters.js';
import type { TracePipeline } from './lean/start.js';
import { createPropagator } from './propagators.js';
import type { createResource } from './resource.js';
import { createSampler } from './sampler.js';
import { createAttributeFilterSpanProcessor, createBaggageSpanProcessor } from './span-processors.js';

// Loaded by telemetry.ts only in otel mode: lean mode does not load the trace SDK at all.

/** The otel mode's traces: the upstream SDK's NodeTracerProvider with agentrt's processors. */
export function startOtelTraces(
  config: Readonly<InstrumentConfig>,
  resource: ReturnType<typeof createResource>,
  filter: AttributeFilter,
): TracePipeline {
  const spanProcessors: SpanProcessor[] = [
    createBaggageSpanProcessor(config.baggageSpanAttributes),
    createAttributeFilterSpanProcessor(filter),
  ];
  const exporters: object[] = [];
  if (config.traces.exporter !== 'none') {
    const exporter = createSpanExporter(config.traces);
    exporters.push(exporter);
    spanProcessors.push(
      config.traces.exporter === 'console'
        ? new SimpleSpanProcessor(exporter)
        : new BatchSpanProcessor(exporter),
    );
  }
  const tracerProvider = new NodeTracerProvider({
    resource,
    sampler: createSampler(config.sampler, config.samplerRatio),
    spanProcessors,
  });
  tracerProvider.register({ propagator: createPropagator(config.propagators) });
  return {
    tracerProvider,
    exporters,
    forceFlush: () => tracerProvider.forceFlush(),
    shutdown: () => tracerProvider.shutdown(),
  };
}
