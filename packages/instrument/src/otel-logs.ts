import { BatchLogRecordProcessor, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import type { AttributeFilter } from './attribute-filter.js';
import type { InstrumentConfig } from './config.js';
import { createLogExporter } from './exporters.js';
import type { LogsPipeline } from './lean/start-logs.js';
import type { createResource } from './resource.js';
import { createAttributeFilterLogProcessor } from './span-processors.js';

// Loaded by telemetry.ts only in otel mode: lean mode does not load the logs SDK at all.

/** The otel mode's logs: the upstream SDK's LoggerProvider with agentrt's filter. */
export function startOtelLogs(
  config: Readonly<InstrumentConfig>,
  resource: ReturnType<typeof createResource>,
  filter: AttributeFilter,
): LogsPipeline {
  const exporter = createLogExporter(config.logs);
  const loggerProvider = new LoggerProvider({
    resource,
    processors: [
      createAttributeFilterLogProcessor(filter),
      config.logs.exporter === 'console'
        ? new SimpleLogRecordProcessor(exporter)
        : new BatchLogRecordProcessor(exporter),
    ],
  });
  return {
    loggerProvider,
    exporters: [exporter],
    forceFlush: () => loggerProvider.forceFlush(),
    shutdown: () => loggerProvider.shutdown(),
  };
}
