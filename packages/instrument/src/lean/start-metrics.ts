import { metrics } from '@opentelemetry/api';
import type { ResourceMetrics } from '@opentelemetry/sdk-metrics';
import type { InstrumentConfig } from '../config.js';
import { createMetricExporter } from '../exporters.js';
import { LeanMeterProvider } from './meter.js';
import { LeanMetricExport } from './metric-export.js';

/** The metrics half of a pipeline, whichever implementation runs it. */
export interface MetricsPipeline {
  readonly meterProvider: LeanMeterProvider;
  /** Exporters to load off the start-up path (see warmUpExporter). */
  readonly exporters: readonly object[];
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * Lean mode's metrics: agentrt's meter provider registered as the API global at once (it loads
 * nothing), exported every `OTEL_METRIC_EXPORT_INTERVAL` through the same exporter as otel mode.
 */
export function startLeanMetrics(
  config: Readonly<InstrumentConfig>,
  resource: ResourceMetrics['resource'],
): MetricsPipeline {
  const selection = { temporality: config.metricTemporality, histogram: config.histogramAggregation };
  const meterProvider = new LeanMeterProvider(selection);
  const exporter = createMetricExporter(config.metrics, selection);
  const reader = new LeanMetricExport(meterProvider, resource, exporter, {
    intervalMs: config.metricExportIntervalMs,
    timeoutMs: Math.min(30_000, config.metricExportIntervalMs),
  }).start();
  metrics.setGlobalMeterProvider(meterProvider);
  return {
    meterProvider,
    exporters: [exporter],
    forceFlush: () => reader.forceFlush(),
    shutdown: () => reader.shutdown(),
  };
}
