import { createRequire } from 'node:module';
import type * as ExporterBase from '@opentelemetry/otlp-exporter-base';
import type * as ExporterBaseNodeHttp from '@opentelemetry/otlp-exporter-base/node-http';
import type * as Transformer from '@opentelemetry/otlp-transformer';
import type { LogRecordExporter } from '@opentelemetry/sdk-logs';
import type { PushMetricExporter } from '@opentelemetry/sdk-metrics';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type {
  HistogramAggregation,
  MetricTemporalityPreference,
  OtlpProtocol,
  SignalConfig,
} from './config.js';
import { aggregationOf, temporalityOf } from './lean/metric-kinds.js';
import { serializeTraceRequest } from './otlp/trace-serializer.js';

// Exporter packages are loaded on demand, only the encoding in use: each costs start-up time.
const require = createRequire(import.meta.url);

type Ctor<T> = new (config: { url: string }) => T;

function load<T>(protocol: OtlpProtocol, signal: 'trace' | 'logs' | 'metrics', name: string): Ctor<T> {
  const encoding = protocol === 'http/json' ? 'http' : 'proto';
  const mod = require(`@opentelemetry/exporter-${signal}-otlp-${encoding}`) as Record<string, unknown>;
  return mod[name] as Ctor<T>;
}

/** Method of a lazy exporter that loads the real one now (see {@link warmUpExporter}). */
const WARM_UP = Symbol('agentrt.instrument.warmUp');

/**
 * Wraps an exporter factory so the exporter package (and the OTLP transformer under it) is not
 * loaded on the app's start-up path: {@link warmUpExporter} loads it on the next turn of the event
 * loop, and the first export loads it if that has not happened yet.
 */
function lazy<T extends { export: unknown; shutdown(): Promise<void>; forceFlush?(): Promise<void> }>(
  create: () => T,
): T {
  let inner: T | undefined;
  const get = () => (inner ??= create());
  return {
    export: (...args: unknown[]) => (get().export as (...a: unknown[]) => void)(...args),
    shutdown: () => inner?.shutdown() ?? Promise.resolve(),
    forceFlush: () => inner?.forceFlush?.() ?? Promise.resolve(),
    [WARM_UP]: () => void get(),
  } as unknown as T;
}

/** Loads a lazy exporter's real exporter now (so a flush at shutdown does not have to). */
export function warmUpExporter(exporter: object): void {
  (exporter as { [WARM_UP]?: () => void })[WARM_UP]?.();
}

/** The OTLP/HTTP span exporter for `signal` (protobuf or JSON). */
export function createSpanExporter(signal: SignalConfig): SpanExporter {
  if (signal.exporter === 'console') {
    const { ConsoleSpanExporter } = require('@opentelemetry/sdk-trace-base') as {
      ConsoleSpanExporter: new () => SpanExporter;
    };
    return new ConsoleSpanExporter();
  }
  if (signal.protocol === 'http/json') {
    return lazy(
      () => new (load<SpanExporter>(signal.protocol, 'trace', 'OTLPTraceExporter'))({ url: signal.url }),
    );
  }
  return lazy(() => createProtobufSpanExporter(signal.url));
}

/**
 * Upstream's OTLP/HTTP protobuf span exporter (its transport: retries, timeouts, compression,
 * headers and OTEL_EXPORTER_OTLP_* settings) with our serializer, which costs the app's main thread
 * a fraction of upstream's for the same bytes.
 */
function createProtobufSpanExporter(url: string): SpanExporter {
  const { OTLPExporterBase } = require('@opentelemetry/otlp-exporter-base') as typeof ExporterBase;
  const { createOtlpHttpExportDelegate, convertLegacyHttpOptions } =
    require('@opentelemetry/otlp-exporter-base/node-http') as typeof ExporterBaseNodeHttp;
  const { ProtobufTraceSerializer } = require('@opentelemetry/otlp-transformer') as typeof Transformer;
  const options = convertLegacyHttpOptions({ url }, 'TRACES', 'v1/traces', {
    'Content-Type': 'application/x-protobuf',
  });
  return new OTLPExporterBase<ReadableSpan[]>(
    createOtlpHttpExportDelegate(options, {
      serializeRequest: serializeTraceRequest,
      deserializeResponse: (data) => ProtobufTraceSerializer.deserializeResponse(data),
    }),
  );
}

/** The OTLP/HTTP log record exporter for `signal`. */
export function createLogExporter(signal: SignalConfig): LogRecordExporter {
  if (signal.exporter === 'console') {
    const { ConsoleLogRecordExporter } = require('@opentelemetry/sdk-logs') as {
      ConsoleLogRecordExporter: new () => LogRecordExporter;
    };
    return new ConsoleLogRecordExporter();
  }
  return lazy(
    () => new (load<LogRecordExporter>(signal.protocol, 'logs', 'OTLPLogExporter'))({ url: signal.url }),
  );
}

/** Which temporality and histogram aggregation the reader asks the exporter for. */
export interface MetricSelection {
  readonly temporality: MetricTemporalityPreference;
  readonly histogram: HistogramAggregation;
}

/**
 * The OTLP/HTTP metric exporter for `signal`, with selectors for the SDK's reader that follow
 * `selection` (the lazy wrapper would hide the exporter's own).
 */
export function createMetricExporter(signal: SignalConfig, selection: MetricSelection): PushMetricExporter {
  const exporter = createPlainMetricExporter(signal);
  exporter.selectAggregationTemporality = (type) => temporalityOf(selection.temporality, type);
  exporter.selectAggregation = (type) => aggregationOf(selection.histogram, type);
  return exporter;
}

function createPlainMetricExporter(signal: SignalConfig): PushMetricExporter {
  if (signal.exporter === 'console') {
    const { ConsoleMetricExporter } = require('@opentelemetry/sdk-metrics') as {
      ConsoleMetricExporter: new () => PushMetricExporter;
    };
    return new ConsoleMetricExporter();
  }
  return lazy(
    () =>
      new (load<PushMetricExporter>(signal.protocol, 'metrics', 'OTLPMetricExporter'))({ url: signal.url }),
  );
}
