import type { LoggerProvider } from '@opentelemetry/api-logs';
import type { ReadableLogRecord } from '@opentelemetry/sdk-logs';
import type { AttributeFilter } from '../attribute-filter.js';
import type { BatchConfig, InstrumentConfig } from '../config.js';
import { createLogExporter } from '../exporters.js';
import { LeanBatch } from './batch.js';
import { type LeanLogRecord, LeanLoggerProvider } from './logger.js';

/** The logs half of a pipeline, whichever implementation runs it. */
export interface LogsPipeline {
  readonly loggerProvider: LoggerProvider;
  /** Exporters to load off the start-up path (see warmUpExporter). */
  readonly exporters: readonly object[];
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** The batch log record processor's defaults (sdk-logs reads no environment variable for them). */
const LOG_BATCH: BatchConfig = {
  maxQueueSize: 2048,
  maxExportBatchSize: 512,
  scheduledDelayMs: 5000,
  exportTimeoutMs: 30_000,
};

/**
 * Lean mode's logs: agentrt's logger provider; emitted records filtered (content capture,
 * redaction) and batched to the same exporter the otel mode uses (console: one at a time).
 */
export function startLeanLogs(
  config: Readonly<InstrumentConfig>,
  resource: ReadableLogRecord['resource'],
  filter: AttributeFilter,
): LogsPipeline {
  const exporter = createLogExporter(config.logs);
  const batch = new LeanBatch<ReadableLogRecord>(
    exporter,
    config.logs.exporter === 'console' ? { ...LOG_BATCH, maxExportBatchSize: 1 } : LOG_BATCH,
    'log record',
  );
  const onEmit = (record: LeanLogRecord) => {
    filter.apply(record.attributes as Record<string, unknown>);
    batch.add(record);
  };
  return {
    loggerProvider: new LeanLoggerProvider({ resource, onEmit }),
    exporters: [exporter],
    forceFlush: () => batch.flush(),
    shutdown: () => batch.shutdown(),
  };
}
