import { createRequire } from 'node:module';
import type { LogRecordExporter } from '@opentelemetry/sdk-logs';
import type { PushMetricExporter } from '@opentelemetry/sdk-metrics';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { OtlpProtocol, SignalConfig } from './config.js';

// Exporter packages are loaded on demand, only the encoding in use: each costs start-up time.
const require = createRequire(import.meta.url);

type Ctor<T> = new (config: { url: string }) => T;

function load<T>(protocol: OtlpProtocol, signal: 'trace' | 'logs' | 'metrics', name: string): Ctor<T> {
  const encoding = protocol === 'http/json' ? 'http' : 'proto';
  const mod = require(`@opentelemetry/exporter-${signal}-otlp-${encoding}`) as Record<string, unknown>;
  return mod[name] as Ctor<T>;
}

/** The OTLP/HTTP span exporter for `signal` (protobuf or JSON). */
export function createSpanExporter(signal: SignalConfig): SpanExporter {
  if (signal.exporter === 'console') {
    const { ConsoleSpanExporter } = require('@opentelemetry/sdk-trace-base') as {
      ConsoleSpanExporter: new () => SpanExporter;
    };
    return new ConsoleSpanExporter();
  }
  return new (load<SpanExporter>(signal.protocol, 'trace', 'OTLPTraceExporter'))({ url: signal.url });
}

/** The OTLP/HTTP log record exporter for `signal`. */
export function createLogExporter(signal: SignalConfig): LogRecordExporter {
  if (signal.exporter === 'console') {
    const { ConsoleLogRecordExporter } = require('@opentelemetry/sdk-logs') as {
      ConsoleLogRecordExporter: new () => LogRecordExporter;
    };
    return new ConsoleLogRecordExporter();
  }
  return new (load<LogRecordExporter>(signal.protocol, 'logs', 'OTLPLogExporter'))({ url: signal.url });
}

/** The OTLP/HTTP metric exporter for `signal`. */
export function createMetricExporter(signal: SignalConfig): PushMetricExporter {
  if (signal.exporter === 'console') {
    const { ConsoleMetricExporter } = require('@opentelemetry/sdk-metrics') as {
      ConsoleMetricExporter: new () => PushMetricExporter;
    };
    return new ConsoleMetricExporter();
  }
  return new (load<PushMetricExporter>(signal.protocol, 'metrics', 'OTLPMetricExporter'))({
    url: signal.url,
  });
}
