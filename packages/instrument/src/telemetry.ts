import { dirname } from 'node:path';
import { diag, metrics, propagation, trace } from '@opentelemetry/api';
import { logs } from '@opentelemetry/api-logs';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import type * as SdkMetrics from '@opentelemetry/sdk-metrics';
import type { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createRequire } from 'node:module';
import { type AttributeFilter, createAttributeFilter } from './attribute-filter.js';
import { type InstrumentConfig, type InstrumentOptions, readConfig } from './config.js';
import { bridgeConsole } from './console-bridge.js';
import { createOnceLogger, installDiagLogger } from './diag-logger.js';
import { createMetricExporter, warmUpExporter } from './exporters.js';
import { createInstrumentations } from './instrumentations.js';
import { LeanContext } from './lean/context.js';
import { type LogsPipeline, startLeanLogs } from './lean/start-logs.js';
import { startLeanMetrics } from './lean/start-metrics.js';
import { startLeanTraces } from './lean/start.js';
import { createResource } from './resource.js';
import type * as OtelTraces from './otel-traces.js';
import type * as OtelLogs from './otel-logs.js';

const require = createRequire(import.meta.url);

/** A running telemetry pipeline. */
export interface Telemetry {
  /** The resolved configuration. */
  readonly config: Readonly<InstrumentConfig>;
  /** Names of the modules the active instrumentations patch (an ESM loader hook's include list). */
  readonly moduleNames: readonly string[];
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

/** Module names an instrumentation patches (InstrumentationBase has them; the interface does not). */
function patchedModules(instrumentation: object): string[] {
  const withDefinitions = instrumentation as { getModuleDefinitions?: () => { name: string }[] };
  return withDefinitions.getModuleDefinitions?.().map((d) => d.name) ?? [];
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
  return config.disabled ? disabledTelemetry(config) : startWithConfig(config, appDir);
}

/** The handle returned when telemetry is off: every call is a no-op. */
export function disabledTelemetry(config: Readonly<InstrumentConfig>): Telemetry {
  return { config, moduleNames: [], forceFlush: () => Promise.resolve(), shutdown: () => Promise.resolve() };
}

/**
 * Logs, registered as the API global; optional: a failure here leaves traces working (the preload
 * catches the rest).
 */
function startLogs(
  config: Readonly<InstrumentConfig>,
  resource: ReturnType<typeof createResource>,
  filter: AttributeFilter,
): LogsPipeline | undefined {
  if (config.logs.exporter === 'none') return undefined;
  try {
    const pipeline =
      config.sdk === 'lean'
        ? startLeanLogs(config, resource, filter)
        : (require('./otel-logs.js') as typeof OtelLogs).startOtelLogs(config, resource, filter);
    logs.setGlobalLoggerProvider(pipeline.loggerProvider);
    return pipeline;
  } catch (error) {
    diag.warn('log export could not be started; continuing without it', error);
    return undefined;
  }
}

/** Starts the pipeline from an already resolved configuration (the preload reads it first). */
export function startWithConfig(
  config: Readonly<InstrumentConfig>,
  appDir: string = defaultAppDir(),
): Telemetry {
  const resource = createResource(config, appDir);
  const filter = createAttributeFilter(config);

  const traces =
    config.sdk === 'lean'
      ? startLeanTraces(config, resource, filter)
      : (require('./otel-traces.js') as typeof OtelTraces).startOtelTraces(config, resource, filter);
  const { tracerProvider } = traces;
  const exporters: object[] = [...traces.exporters];

  const logPipeline = startLogs(config, resource, filter);
  exporters.push(...(logPipeline?.exporters ?? []));
  const loggerProvider = logPipeline?.loggerProvider;

  const leanMetrics =
    config.sdk === 'lean' && config.metrics.exporter !== 'none'
      ? startLeanMetrics(config, resource)
      : undefined;
  exporters.push(...(leanMetrics?.exporters ?? []));

  const instrumentations = createInstrumentations({
    enabled: config.enabledInstrumentations,
    disabled: config.disabledInstrumentations,
    captureMessageContent: config.captureMessageContent,
    middlewareSpans: config.middlewareSpans,
    httpServerSpans: config.httpServerSpans,
    fetchSpans: config.fetchSpans,
    httpClientSpans: config.sdk === 'lean' ? 'agentrt' : 'upstream',
    appDir,
    ...(config.sdk === 'lean' ? { rootContext: LeanContext.ROOT } : {}),
  });
  const disableInstrumentations = registerInstrumentations({
    instrumentations,
    tracerProvider,
    ...(loggerProvider ? { loggerProvider } : {}),
    ...(leanMetrics ? { meterProvider: leanMetrics.meterProvider } : {}),
  });

  // The exporters and the metrics SDK are loaded on the next turn of the event loop, off the app's
  // start-up path (its first request comes later; instruments move to the new meter provider).
  let stopped: Promise<void> | undefined;
  let meterProvider: MeterProvider | undefined;
  const startMetrics = () => {
    if (config.metrics.exporter === 'none' || leanMetrics !== undefined) return;
    if (meterProvider !== undefined || stopped !== undefined) return;
    try {
      const sdkMetrics = require('@opentelemetry/sdk-metrics') as typeof SdkMetrics;
      meterProvider = new sdkMetrics.MeterProvider({
        resource,
        readers: [
          new sdkMetrics.PeriodicExportingMetricReader({
            exporter: createMetricExporter(config.metrics, {
              temporality: config.metricTemporality,
              histogram: config.histogramAggregation,
            }),
            exportIntervalMillis: config.metricExportIntervalMs,
            exportTimeoutMillis: Math.min(30_000, config.metricExportIntervalMs),
          }),
        ],
      });
      metrics.setGlobalMeterProvider(meterProvider);
      for (const instrumentation of instrumentations) instrumentation.setMeterProvider(meterProvider);
    } catch (error) {
      diag.warn('metrics could not be started; continuing without them', error);
    }
  };
  const warmUp = () => {
    try {
      for (const exporter of exporters) warmUpExporter(exporter);
    } catch (error) {
      diag.warn('OTLP exporter could not be loaded', error);
    }
    startMetrics();
  };
  setTimeout(warmUp, 0).unref();

  const undoConsole =
    config.captureConsole && loggerProvider ? bridgeConsole(loggerProvider.getLogger('console')) : () => {};

  const flushAll = () =>
    Promise.all([
      traces.forceFlush(),
      logPipeline?.forceFlush(),
      meterProvider?.forceFlush(),
      leanMetrics?.forceFlush(),
    ]);
  const moduleNames = [...new Set(instrumentations.flatMap((i) => patchedModules(i)))];
  return {
    config,
    moduleNames,
    forceFlush: (timeoutMs = config.shutdownTimeoutMs) => withDeadline(flushAll(), timeoutMs),
    shutdown(timeoutMs = config.shutdownTimeoutMs) {
      stopped ??= (() => {
        undoConsole();
        disableInstrumentations();
        const done = Promise.all([
          traces.shutdown(),
          logPipeline?.shutdown(),
          meterProvider?.shutdown(),
          leanMetrics?.shutdown(),
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
