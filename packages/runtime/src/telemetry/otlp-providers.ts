// The runtime's own OpenTelemetry SDK providers (traces, metrics, logs; service `agentrt-runtime`),
// exporting OTLP/HTTP to one endpoint in protobuf or JSON; without an endpoint they export nothing.
import { OTLPLogExporter as OTLPLogExporterJson } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as OTLPLogExporterProto } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPMetricExporter as OTLPMetricExporterJson } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as OTLPMetricExporterProto } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as OTLPTraceExporterJson } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPTraceExporterProto } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

export const RUNTIME_SERVICE_NAME = 'agentrt-runtime';

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface RuntimeTelemetryOptions {
  /** OTLP/HTTP base endpoint; without one, spans still carry the trace on but nothing is exported. */
  otlpEndpoint: string | undefined;
  otlpProtocol: OtlpProtocol;
  /** How often metrics are exported (OTEL_METRIC_EXPORT_INTERVAL). */
  metricExportIntervalMs: number;
  region: string;
  accountId: string;
}

/** The three providers, sharing the runtime's resource (its cloud region and account). */
export function createOtlpProviders(options: RuntimeTelemetryOptions) {
  const resource = resourceFromAttributes({
    'service.name': RUNTIME_SERVICE_NAME,
    'cloud.provider': 'aws',
    'cloud.platform': 'aws_bedrock_agentcore',
    'cloud.region': options.region,
    'cloud.account.id': options.accountId,
  });
  const endpoint = options.otlpEndpoint?.replace(/\/+$/, '');
  const json = options.otlpProtocol === 'http/json';
  const tracerProvider = new BasicTracerProvider({
    resource,
    spanProcessors: endpoint
      ? [
          new BatchSpanProcessor(
            json
              ? new OTLPTraceExporterJson({ url: `${endpoint}/v1/traces` })
              : new OTLPTraceExporterProto({ url: `${endpoint}/v1/traces` }),
            { scheduledDelayMillis: 1000 },
          ),
        ]
      : [],
  });
  const meterProvider = new MeterProvider({
    resource,
    readers: endpoint
      ? [
          new PeriodicExportingMetricReader({
            exporter: json
              ? new OTLPMetricExporterJson({ url: `${endpoint}/v1/metrics` })
              : new OTLPMetricExporterProto({ url: `${endpoint}/v1/metrics` }),
            exportIntervalMillis: options.metricExportIntervalMs,
            exportTimeoutMillis: Math.min(30_000, options.metricExportIntervalMs),
          }),
        ]
      : [],
  });
  const loggerProvider = new LoggerProvider({
    resource,
    processors: endpoint
      ? [
          new BatchLogRecordProcessor(
            json
              ? new OTLPLogExporterJson({ url: `${endpoint}/v1/logs` })
              : new OTLPLogExporterProto({ url: `${endpoint}/v1/logs` }),
            { scheduledDelayMillis: 1000 },
          ),
        ]
      : [],
  });
  return { tracerProvider, meterProvider, loggerProvider };
}
