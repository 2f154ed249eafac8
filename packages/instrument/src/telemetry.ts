import { dirname } from 'node:path';
import { diag, metrics, propagation, trace } from '@opentelemetry/api';
import { logs } from '@opentelemetry/api-logs';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { BatchLogRecordProcessor, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { BatchSpanProcessor, SimpleSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type * as SdkMetrics from '@opentelemetry/sdk-metrics';
import type { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createRequire } from 'node:module';
import { createAttributeFilter } from './attribute-filter.js';
import { type InstrumentConfig, type InstrumentOptions, readConfig } from './config.js';
import { bridgeConsole } from './console-bridge.js';
import { createOnceLogger, installDiagLogger } from './diag-logger.js';
import { createLogExporter, createMetricExporter, createSpanExporter } from './exporters.js';
import { createInstrumentations } from './instrumentations.js';
import { createPropagator } from './propagators.js';
import { createResource } from './resource.js';
import { createSampler } from './sampler.js';
import {
  createAttributeFilterLogProcessor,
  createAttributeFilterSpanProcessor,
  createBaggageSpanProcessor,
} from './span-processors.js';

const require = createRequire(import.meta.url);

/** A running telemetry pipeline. */
export interface Telemetry {
  /** The resolved configuration. */
  readonly config: Readonly<InstrumentConfig>;
  /** Exports everything buffered; resolves (never rejects) within `timeoutMs`. */
  forceFlush(timeoutMs?: number): Promise<void>;
  /** Flushes and stops every provider and instrumentation; resolves within `timeoutMs`. */
  shutdown(timeoutMs?: number): Promise<void>;
}

/** Options of {@link startTelemetry}: any config field, plus where the app lives. */
export interface StartTelemetryOptions extends InstrumentOptions {
  /** Directory of the app (its package.json names the service). Default: the entry script's. */
  appDir?: string;
  /** Environment to read instead of `process.env` (tests). */
  env?: Readonly<Record<string, string | undefined>>;
}

/** Resolves after `promise` settles or `timeoutMs` passes, whichever is first; never rejects. */
export function withDeadline(promise: Promise<unknown>, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      diag.warn(`telemetry flush did not finish within ${timeoutMs} ms; giving up on it`);
      resolve();
    }, timeoutMs);
    timer.unref();
    promise.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      (error: unknown) => {
        clearTimeout(timer);
        diag.warn('telemetry flush failed', error);
        resolve();
      },
    );
  });
}

function defaultAppDir(): string {
  const entry = process.argv[1];
  return entry !== undefined && entry !== '' ? dirname(entry) : process.cwd();
}

/**
 * Starts traces, logs and metrics export with the agentrt defaults and registers them globally
 * (one pipeline per process). Explicit options beat `OTEL_*`/`AGENTRT_*` env vars, which beat
 * defaults. Never throws for a bad setting: it warns once and uses the default.
 */
export function startTelemetry(options: StartTelemetryOptions = {}): Telemetry {
  const { appDir = defaultAppDir(), env = process.env, ...explicit } = options;
  const logger = createOnceLogger();
  const config = readConfig(explicit, env, (message) => logger.warnOnce(message));
  installDiagLogger(logger, config.logLevel);
  if (config.disabled) {
    return { config, forceFlush: () => Promise.resolve(), shutdown: () => Promise.resolve() };
  }

  const resource = createResource(config, appDir);
  const filter = createAttributeFilter(config);

  const spanProcessors: SpanProcessor[] = [
    createBaggageSpanProcessor(config.baggageSpanAttributes),
    createAttributeFilterSpanProcessor(filter),
  ];
  if (config.traces.exporter !== 'none') {
    const exporter = createSpanExporter(config.traces);
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

  let loggerProvider: LoggerProvider | undefined;
  if (config.logs.exporter !== 'none') {
    const exporter = createLogExporter(config.logs);
    loggerProvider = new LoggerProvider({
      resource,
      processors: [
        createAttributeFilterLogProcessor(filter),
        config.logs.exporter === 'console'
          ? new SimpleLogRecordProcessor(exporter)
          : new BatchLogRecordProcessor(exporter),
      ],
    });
    logs.setGlobalLoggerProvider(loggerProvider);
  }

  let meterProvider: MeterProvider | undefined;
  if (config.metrics.exporter !== 'none') {
    const sdkMetrics = require('@opentelemetry/sdk-metrics') as typeof SdkMetrics;
    meterProvider = new sdkMetrics.MeterProvider({
      resource,
      readers: [
        new sdkMetrics.PeriodicExportingMetricReader({
          exporter: createMetricExporter(config.metrics),
          exportIntervalMillis: config.metricExportIntervalMs,
          exportTimeoutMillis: Math.min(30_000, config.metricExportIntervalMs),
        }),
      ],
    });
    metrics.setGlobalMeterProvider(meterProvider);
  }

  const disableInstrumentations = registerInstrumentations({
    instrumentations: createInstrumentations({
      enabled: config.enabledInstrumentations,
      disabled: config.disabledInstrumentations,
      captureMessageContent: config.captureMessageContent,
      appDir,
    }),
    tracerProvider,
    ...(meterProvider ? { meterProvider } : {}),
    ...(loggerProvider ? { loggerProvider } : {}),
  });

  const undoConsole =
    config.captureConsole && loggerProvider ? bridgeConsole(loggerProvider.getLogger('console')) : () => {};

  const flushAll = () =>
    Promise.all([tracerProvider.forceFlush(), loggerProvider?.forceFlush(), meterProvider?.forceFlush()]);
  let stopped: Promise<void> | undefined;
  return {
    config,
    forceFlush: (timeoutMs = config.shutdownTimeoutMs) => withDeadline(flushAll(), timeoutMs),
    shutdown(timeoutMs = config.shutdownTimeoutMs) {
      stopped ??= (() => {
        undoConsole();
        disableInstrumentations();
        const done = Promise.all([
          tracerProvider.shutdown(),
          loggerProvider?.shutdown(),
          meterProvider?.shutdown(),
        ]).finally(() => {
          trace.disable();
          propagation.disable();
          logs.disable();
          metrics.disable();
        });
        return withDeadline(done, timeoutMs);
      })();
      return stopped;
    },
  };
}
