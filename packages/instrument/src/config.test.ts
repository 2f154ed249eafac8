import { describe, expect, it } from 'vitest';
import { DEFAULT_PROPAGATORS, parseResourceAttributes, readConfig } from './config.js';

function read(env: Record<string, string>, options = {}) {
  const warnings: string[] = [];
  const config = readConfig(options, env, (m) => warnings.push(m));
  return { config, warnings };
}

describe('readConfig', () => {
  it('has agentrt defaults: local collector, protobuf, all four propagators, content off', () => {
    const { config, warnings } = read({});
    expect(warnings).toEqual([]);
    expect(config.traces).toEqual({
      exporter: 'otlp',
      protocol: 'http/protobuf',
      url: 'http://127.0.0.1:4318/v1/traces',
    });
    expect(config.logs.url).toBe('http://127.0.0.1:4318/v1/logs');
    expect(config.propagators).toEqual(DEFAULT_PROPAGATORS);
    expect(config.captureMessageContent).toBe(false);
    expect(config.baggageSpanAttributes).toEqual(['session.id']);
    expect(config.shutdownTimeoutMs).toBe(2000);
    expect(config.sampler).toBe('parentbased_always_on');
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('treats blank values as unset', () => {
    const { config, warnings } = read({ OTEL_EXPORTER_OTLP_PROTOCOL: '  ', OTEL_SERVICE_NAME: '' });
    expect(warnings).toEqual([]);
    expect(config.traces.protocol).toBe('http/protobuf');
    expect(config.serviceName).toBeUndefined();
  });

  it('resolves per-signal endpoints and protocols over the shared ones', () => {
    const { config } = read({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'http://logs:9999/custom',
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/protobuf',
      OTEL_METRICS_EXPORTER: 'none',
    });
    expect(config.traces).toEqual({
      exporter: 'otlp',
      protocol: 'http/json',
      url: 'http://collector:4318/v1/traces',
    });
    expect(config.logs.url).toBe('http://logs:9999/custom');
    expect(config.metrics).toMatchObject({ exporter: 'none', protocol: 'http/protobuf' });
  });

  it('warns once per bad value and falls back to the default', () => {
    const { config, warnings } = read({
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url',
      AGENTRT_SHUTDOWN_TIMEOUT_MS: '-5',
      OTEL_SDK_DISABLED: 'yes',
      OTEL_TRACES_SAMPLER: 'sometimes',
      OTEL_TRACES_SAMPLER_ARG: '2',
      OTEL_PROPAGATORS: 'ottrace',
      OTEL_LOG_LEVEL: 'loud',
    });
    expect(config.traces.protocol).toBe('http/protobuf');
    expect(config.traces.url).toBe('http://127.0.0.1:4318/v1/traces');
    expect(config.shutdownTimeoutMs).toBe(2000);
    expect(config.disabled).toBe(false);
    expect(config.sampler).toBe('parentbased_always_on');
    expect(config.samplerRatio).toBe(1);
    expect(config.propagators).toEqual(DEFAULT_PROPAGATORS);
    expect(config.logLevel).toBe('warn');
    expect(warnings).toHaveLength(8);
    expect(warnings.join('\n')).toContain('OTEL_EXPORTER_OTLP_PROTOCOL="grpc"');
    // the per-signal protocol falls back to the shared one without warning again
    expect(warnings.filter((w) => w.includes('grpc'))).toHaveLength(1);
  });

  it('reads the switches and lists', () => {
    const { config } = read({
      OTEL_SDK_DISABLED: 'TRUE',
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
      AGENTRT_BAGGAGE_SPAN_ATTRIBUTES: 'user.id, tenant.id',
      AGENTRT_REDACT_ATTRIBUTES: 'user.email,*.ssn',
      OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'http,koa',
      OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'koa',
      OTEL_PROPAGATORS: 'tracecontext,baggage',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_SERVICE_NAME: 'svc',
    });
    expect(config.disabled).toBe(true);
    expect(config.captureMessageContent).toBe(true);
    expect(config.baggageSpanAttributes).toEqual(['session.id', 'user.id', 'tenant.id']);
    expect(config.redactAttributes).toEqual(['user.email', '*.ssn']);
    expect(config.enabledInstrumentations).toEqual(['http', 'koa']);
    expect(config.disabledInstrumentations).toEqual(['koa']);
    expect(config.propagators).toEqual(['tracecontext', 'baggage']);
    expect(config.samplerRatio).toBe(0.25);
    expect(config.serviceName).toBe('svc');
  });

  it('OTEL_PROPAGATORS takes b3, b3multi and jaeger too, and names all it takes when one is unknown', () => {
    expect(read({ OTEL_PROPAGATORS: 'b3, tracecontext,jaeger' }).config.propagators).toEqual([
      'b3',
      'tracecontext',
      'jaeger',
    ]);
    const { config, warnings } = read({ OTEL_PROPAGATORS: 'b3multi,ottrace' });
    expect(config.propagators).toEqual(['b3multi']);
    expect(warnings).toEqual([
      'OTEL_PROPAGATORS has unsupported ottrace (tracecontext, baggage, xray, session, b3, b3multi, jaeger, none); ignoring them',
    ]);
  });

  it('OTEL_PROPAGATORS=none turns propagation off', () => {
    expect(read({ OTEL_PROPAGATORS: 'none' }).config.propagators).toEqual([]);
  });

  it('AGENTRT_SDK picks the implementation; lean mode reads span limits and OTEL_BSP_* like the SDK', () => {
    expect(read({}).config.sdk).toBe('lean');
    expect(read({ AGENTRT_SDK: 'OTEL' }).config.sdk).toBe('otel');
    expect(read({}).config.spanLimits).toEqual({
      attributeCountLimit: 128,
      attributeValueLengthLimit: Infinity,
      eventCountLimit: 128,
      linkCountLimit: 128,
      attributePerEventCountLimit: 128,
      attributePerLinkCountLimit: 128,
    });
    const { config, warnings } = read({
      AGENTRT_SDK: 'LEAN',
      OTEL_ATTRIBUTE_COUNT_LIMIT: '10',
      OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: '100',
      OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT: '50',
      OTEL_SPAN_EVENT_COUNT_LIMIT: '-1',
      OTEL_BSP_MAX_QUEUE_SIZE: '64',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '512',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    expect(config.sdk).toBe('lean');
    expect(config.spanLimits.attributeCountLimit).toBe(10);
    expect(config.spanLimits.attributeValueLengthLimit).toBe(50);
    expect(config.spanLimits.eventCountLimit).toBe(128);
    expect(config.batch).toEqual({
      maxQueueSize: 64,
      maxExportBatchSize: 64,
      scheduledDelayMs: 100,
      exportTimeoutMs: 30_000,
    });
    expect(warnings).toEqual([
      'OTEL_SPAN_EVENT_COUNT_LIMIT="-1" is not an integer in [0, 2147483647]; using 128',
    ]);
    expect(read({ AGENTRT_SDK: 'datadog' }).warnings).toEqual([
      'AGENTRT_SDK="datadog" is not lean, otel; using lean',
    ]);
  });

  it('reads the metric temporality preference and histogram aggregation for both modes', () => {
    expect(read({}).config).toMatchObject({
      metricTemporality: 'cumulative',
      histogramAggregation: 'explicit_bucket_histogram',
    });
    const { config } = read({
      OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'Delta',
      OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: 'base2_exponential_bucket_histogram',
    });
    expect(config).toMatchObject({
      metricTemporality: 'delta',
      histogramAggregation: 'base2_exponential_bucket_histogram',
    });
    expect(read({ OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'sometimes' }).warnings).toEqual([
      'OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE="sometimes" is not cumulative, delta, lowmemory; using cumulative',
    ]);
  });

  it('explicit options beat the environment', () => {
    const { config } = read(
      { OTEL_SERVICE_NAME: 'from-env', AGENTRT_SHUTDOWN_TIMEOUT_MS: '100' },
      {
        serviceName: 'from-options',
      },
    );
    expect(config.serviceName).toBe('from-options');
    expect(config.shutdownTimeoutMs).toBe(100);
  });
});

describe('parseResourceAttributes', () => {
  it('parses percent-encoded key=value pairs and skips malformed entries with a warning', () => {
    const warnings: string[] = [];
    expect(
      parseResourceAttributes('cloud.resource_id=arn%3Aaws%3Ax,team = agents,broken,,=nokey', (m) =>
        warnings.push(m),
      ),
    ).toEqual({ 'cloud.resource_id': 'arn:aws:x', team: 'agents' });
    expect(warnings).toHaveLength(2);
  });
});
