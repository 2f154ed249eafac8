/**
 * The only reader of `process.env` in @agentrt/instrument. Rules (as in opentelemetry-js core's
 * environment.ts): a blank value is unset; a bad value produces one warning and the default; an
 * explicit option passed to `startTelemetry` beats the environment.
 */

/** OTLP/HTTP body encoding. */
export type OtlpProtocol = 'http/protobuf' | 'http/json';
/** Where a signal goes. */
export type SignalExporter = 'otlp' | 'console' | 'none';
/** Propagator names accepted in `OTEL_PROPAGATORS`. */
export type PropagatorName = 'tracecontext' | 'baggage' | 'xray' | 'session' | 'b3' | 'b3multi' | 'jaeger';
/** Sampler names accepted in `OTEL_TRACES_SAMPLER`. */
export type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

/** Which instruments export deltas (the OTLP metric exporter's selectors). */
export type MetricTemporalityPreference = 'cumulative' | 'delta' | 'lowmemory';
/** Default aggregation of histogram instruments. */
export type HistogramAggregation = 'explicit_bucket_histogram' | 'base2_exponential_bucket_histogram';

/** Per-signal export settings. */
export interface SignalConfig {
  exporter: SignalExporter;
  protocol: OtlpProtocol;
  /** Full URL including the `/v1/<signal>` path. */
  url: string;
}

/** Span limits (`OTEL_SPAN_*_LIMIT`, `OTEL_ATTRIBUTE_*_LIMIT`), as the SDK reads them. */
export interface SpanLimits {
  attributeCountLimit: number;
  /** Characters kept of a string attribute value (Infinity: all). */
  attributeValueLengthLimit: number;
  eventCountLimit: number;
  linkCountLimit: number;
  attributePerEventCountLimit: number;
  attributePerLinkCountLimit: number;
}

/** Batch span processor settings (`OTEL_BSP_*`). */
export interface BatchConfig {
  maxQueueSize: number;
  maxExportBatchSize: number;
  scheduledDelayMs: number;
  exportTimeoutMs: number;
}

/** Everything the launcher needs, resolved from options, then env, then defaults. */
export interface InstrumentConfig {
  disabled: boolean;
  /**
   * Which implementation of the OpenTelemetry API globals runs (`AGENTRT_SDK`): `lean`, agentrt's
   * own (src/lean/, the default), or `otel`, the upstream SDK.
   */
  sdk: 'otel' | 'lean';
  /** Read for lean mode; the upstream SDK reads the same variables itself. */
  spanLimits: Readonly<SpanLimits>;
  /** Read for lean mode; the upstream SDK reads the same variables itself. */
  batch: Readonly<BatchConfig>;
  /** `OTEL_SERVICE_NAME`; undefined means "take it from the app's package.json". */
  serviceName: string | undefined;
  /** Parsed `OTEL_RESOURCE_ATTRIBUTES`. */
  resourceAttributes: Readonly<Record<string, string>>;
  /** `deployment.environment.name` when `OTEL_RESOURCE_ATTRIBUTES` has none (from `NODE_ENV`). */
  deploymentEnvironment: string;
  traces: SignalConfig;
  logs: SignalConfig;
  metrics: SignalConfig;
  /** Metric export interval (`OTEL_METRIC_EXPORT_INTERVAL`). */
  metricExportIntervalMs: number;
  /** `OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE`: which instruments export deltas. */
  metricTemporality: MetricTemporalityPreference;
  /** `OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION`: histograms' default aggregation. */
  histogramAggregation: HistogramAggregation;
  propagators: readonly PropagatorName[];
  sampler: SamplerName;
  samplerRatio: number;
  /** Baggage keys copied onto every span at start (always includes `session.id`). */
  baggageSpanAttributes: readonly string[];
  /** Record GenAI message content (prompts, completions, tool arguments). Off by default. */
  captureMessageContent: boolean;
  /** Extra attribute key patterns to redact (`*` wildcard), on top of the built-in list. */
  redactAttributes: readonly string[];
  /** Extra query parameter names redacted in URL-valued attributes, on top of the built-in list. */
  redactQueryParams: readonly string[];
  /** Short instrumentation names (`http`, `koa`, …) to enable; undefined = the default set. */
  enabledInstrumentations: readonly string[] | undefined;
  disabledInstrumentations: readonly string[];
  /** Spans for every Koa/Express middleware (off: only router layers and the HTTP span). */
  middlewareSpans: boolean;
  /**
   * Who makes the SERVER span of incoming HTTP requests: `agentrt` (lean, see http-server.ts) or
   * `upstream` (@opentelemetry/instrumentation-http, with its extra attributes and metrics).
   */
  httpServerSpans: 'agentrt' | 'upstream';
  /**
   * Who makes the CLIENT span of outgoing fetch()/undici requests: `agentrt` (lean, see
   * fetch-client.ts; the same span and metric) or `upstream` (@opentelemetry/instrumentation-undici).
   */
  fetchSpans: 'agentrt' | 'upstream';
  /** Wrap `console.*` so each call is also an OTLP log record. */
  captureConsole: boolean;
  /** ESM loader hooks for `--import`: in-thread `registerHooks` where supported (auto), or forced. */
  esmLoader: 'auto' | 'sync' | 'async';
  /** Turn on Node's module compile cache before loading the SDK (faster warm starts). */
  compileCache: boolean;
  /** Deadline of the flush on SIGTERM/SIGINT/beforeExit. */
  shutdownTimeoutMs: number;
  /** `OTEL_LOG_LEVEL` for OTel's diag logger (`none|error|warn|info|debug|verbose|all`). */
  logLevel: DiagLevelName;
}

export type DiagLevelName = 'none' | 'error' | 'warn' | 'info' | 'debug' | 'verbose' | 'all';

/** Explicit options of `startTelemetry`; each beats the matching env var. */
export type InstrumentOptions = Partial<InstrumentConfig>;

export const DEFAULT_OTLP_ENDPOINT = 'http://127.0.0.1:4318';
export const DEFAULT_PROPAGATORS: readonly PropagatorName[] = ['xray', 'tracecontext', 'baggage', 'session'];
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 2000;
const PROPAGATOR_NAMES = new Set<string>([
  'tracecontext',
  'baggage',
  'xray',
  'session',
  'b3',
  'b3multi',
  'jaeger',
  'none',
]);
const SAMPLER_NAMES = new Set<string>([
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
]);
const LOG_LEVELS = new Set<string>(['none', 'error', 'warn', 'info', 'debug', 'verbose', 'all']);

type Env = Readonly<Record<string, string | undefined>>;

/** A warning about one bad setting; the caller prints each once. */
export type ConfigWarn = (message: string) => void;

/** Reads the launcher's configuration. Never throws: bad values warn and fall back. */
export function readConfig(
  options: InstrumentOptions = {},
  env: Env = process.env,
  warn: ConfigWarn = () => {},
): Readonly<InstrumentConfig> {
  const r: EnvReader = { env, warn };
  // Warnings come in the order of the reads: these first, then the fields below in their order.
  const base = readExportDefaults(r);
  const propagators = readPropagators(r);
  const sampler = readSampler(r);
  const samplerRatio = readSamplerRatio(r);
  const logLevel = readLogLevel(r);
  const resourceAttributes = parseResourceAttributes(str(r, 'OTEL_RESOURCE_ATTRIBUTES'), warn);
  const baggageKeys =
    list(r, 'AGENTRT_BAGGAGE_SPAN_ATTRIBUTES') ?? list(r, 'OTEL_BAGGAGE_SPAN_ATTRIBUTE_KEYS') ?? [];
  // The groups' types are inferred; this annotation checks every field.
  const fromEnv: InstrumentConfig = {
    ...readSdkSettings(r),
    serviceName: str(r, 'OTEL_SERVICE_NAME'),
    resourceAttributes,
    deploymentEnvironment: str(r, 'NODE_ENV') ?? 'development',
    ...readSignalSettings(r, base),
    propagators,
    sampler,
    samplerRatio,
    baggageSpanAttributes: [...new Set(['session.id', ...baggageKeys])],
    ...readInstrumentationSettings(r),
    logLevel,
  };
  return withOptions(fromEnv, options);
}

/** Explicit options beat the environment; an option left undefined does not. */
function withOptions(fromEnv: InstrumentConfig, options: InstrumentOptions): Readonly<InstrumentConfig> {
  const merged: InstrumentConfig = { ...fromEnv };
  for (const [key, value] of Object.entries(options)) {
    if (value !== undefined) (merged as unknown as Record<string, unknown>)[key] = value;
  }
  return Object.freeze(merged);
}

/** The environment and where its warnings go: what every reader below takes. */
interface EnvReader {
  readonly env: Env;
  readonly warn: ConfigWarn;
}

/** A trimmed value; blank is unset. */
function str(r: EnvReader, name: string): string | undefined {
  const value = r.env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function bool(r: EnvReader, name: string, fallback: boolean): boolean {
  const value = str(r, name)?.toLowerCase();
  if (value === undefined) return fallback;
  if (value === 'true') return true;
  if (value === 'false') return false;
  r.warn(`${name}="${value}" is not true or false; using ${fallback}`);
  return fallback;
}

function int(r: EnvReader, name: string, fallback: number, min: number, max: number): number {
  const value = str(r, name);
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    r.warn(`${name}="${value}" is not an integer in [${min}, ${max}]; using ${fallback}`);
    return fallback;
  }
  return n;
}

/** Comma-separated, entries trimmed, blank entries dropped; undefined when unset. */
function list(r: EnvReader, name: string): string[] | undefined {
  const value = str(r, name);
  if (value === undefined) return undefined;
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** A lower-cased choice among `values`; the first is the default. */
function oneOf<T extends string>(r: EnvReader, name: string, values: readonly [T, ...T[]]): T {
  const value = str(r, name)?.toLowerCase();
  if (value === undefined) return values[0];
  if ((values as readonly string[]).includes(value)) return value as T;
  r.warn(`${name}="${value}" is not ${values.join(', ')}; using ${values[0]}`);
  return values[0];
}

function protocolOf(r: EnvReader, name: string, fallback: OtlpProtocol): OtlpProtocol {
  const value = str(r, name);
  if (value === undefined) return fallback;
  if (value === 'http/protobuf' || value === 'http/json') return value;
  r.warn(`${name}="${value}" is not supported (http/protobuf or http/json); using ${fallback}`);
  return fallback;
}

/** `OTEL_EXPORTER_OTLP_PROTOCOL` and `_ENDPOINT`: what a signal without its own setting uses. */
interface ExportDefaults {
  protocol: OtlpProtocol;
  endpoint: string | undefined;
}

function readExportDefaults(r: EnvReader): ExportDefaults {
  const protocol = protocolOf(r, 'OTEL_EXPORTER_OTLP_PROTOCOL', 'http/protobuf');
  const endpoint = endpointOf(str(r, 'OTEL_EXPORTER_OTLP_ENDPOINT'), r.warn, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  return { protocol, endpoint };
}

/** Whether telemetry runs at all, which SDK, and the lean SDK's limits. */
function readSdkSettings(r: EnvReader) {
  return {
    disabled: bool(r, 'OTEL_SDK_DISABLED', false),
    sdk: oneOf(r, 'AGENTRT_SDK', ['lean', 'otel'] as const),
    spanLimits: readSpanLimits(r),
    batch: readBatchConfig(r),
  };
}

/** Where each signal goes, and how metrics are exported. */
function readSignalSettings(r: EnvReader, base: ExportDefaults) {
  return {
    traces: readSignal(r, base, 'TRACES', 'v1/traces'),
    logs: readSignal(r, base, 'LOGS', 'v1/logs'),
    metrics: readSignal(r, base, 'METRICS', 'v1/metrics'),
    metricExportIntervalMs: int(r, 'OTEL_METRIC_EXPORT_INTERVAL', 60_000, 100, 3_600_000),
    metricTemporality: oneOf(r, 'OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE', [
      'cumulative',
      'delta',
      'lowmemory',
    ] as const),
    histogramAggregation: oneOf(r, 'OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION', [
      'explicit_bucket_histogram',
      'base2_exponential_bucket_histogram',
    ] as const),
  };
}

/** One signal: its own endpoint (a full URL) beats the shared one plus `/v1/<signal>`. */
function readSignal(
  r: EnvReader,
  base: ExportDefaults,
  name: 'TRACES' | 'LOGS' | 'METRICS',
  path: string,
): SignalConfig {
  const exporter = readExporter(r, `OTEL_${name}_EXPORTER`);
  const endpointVar = `OTEL_EXPORTER_OTLP_${name}_ENDPOINT`;
  const url =
    endpointOf(str(r, endpointVar), r.warn, endpointVar) ??
    `${(base.endpoint ?? DEFAULT_OTLP_ENDPOINT).replace(/\/+$/, '')}/${path}`;
  return {
    exporter,
    protocol: protocolOf(r, `OTEL_EXPORTER_OTLP_${name}_PROTOCOL`, base.protocol),
    url,
  };
}

/** `none` anywhere in the list wins; otherwise the first entry, which must be otlp or console. */
function readExporter(r: EnvReader, exporterVar: string): SignalExporter {
  const exporters = list(r, exporterVar) ?? ['otlp'];
  const first = exporters[0] ?? 'otlp';
  if (exporters.includes('none')) return 'none';
  if (first === 'otlp' || first === 'console') return first;
  r.warn(`${exporterVar}="${exporters.join(',')}" is not supported (otlp, console, none); using otlp`);
  return 'otlp';
}

/** Unknown names are dropped with a warning; if none is left, the defaults; `none` means none. */
function readPropagators(r: EnvReader): readonly PropagatorName[] {
  const names = list(r, 'OTEL_PROPAGATORS');
  if (names === undefined) return DEFAULT_PROPAGATORS;
  const bad = names.filter((n) => !PROPAGATOR_NAMES.has(n));
  if (bad.length > 0) {
    r.warn(
      `OTEL_PROPAGATORS has unsupported ${bad.join(',')} (${[...PROPAGATOR_NAMES].join(', ')}); ignoring them`,
    );
  }
  if (names.includes('none')) return [];
  const good = names.filter((n): n is PropagatorName => PROPAGATOR_NAMES.has(n));
  return good.length > 0 || bad.length === 0 ? good : DEFAULT_PROPAGATORS;
}

function readSampler(r: EnvReader): SamplerName {
  const value = str(r, 'OTEL_TRACES_SAMPLER');
  if (value === undefined) return 'parentbased_always_on';
  if (SAMPLER_NAMES.has(value)) return value as SamplerName;
  r.warn(`OTEL_TRACES_SAMPLER="${value}" is not supported; using parentbased_always_on`);
  return 'parentbased_always_on';
}

function readSamplerRatio(r: EnvReader): number {
  const value = str(r, 'OTEL_TRACES_SAMPLER_ARG');
  if (value === undefined) return 1;
  const n = Number(value);
  if (Number.isFinite(n) && n >= 0 && n <= 1) return n;
  r.warn(`OTEL_TRACES_SAMPLER_ARG="${value}" is not a number in [0, 1]; using 1`);
  return 1;
}

function readLogLevel(r: EnvReader): DiagLevelName {
  const value = str(r, 'OTEL_LOG_LEVEL')?.toLowerCase();
  if (value === undefined) return 'warn';
  if (LOG_LEVELS.has(value)) return value as DiagLevelName;
  r.warn(`OTEL_LOG_LEVEL="${value}" is not supported; using warn`);
  return 'warn';
}

/** What is instrumented and recorded, how the launcher loads, and how long it flushes at exit. */
function readInstrumentationSettings(r: EnvReader) {
  return {
    captureMessageContent: bool(r, 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT', false),
    redactAttributes: list(r, 'AGENTRT_REDACT_ATTRIBUTES') ?? [],
    redactQueryParams: list(r, 'AGENTRT_REDACT_QUERY_PARAMS') ?? [],
    enabledInstrumentations: list(r, 'OTEL_NODE_ENABLED_INSTRUMENTATIONS'),
    disabledInstrumentations: list(r, 'OTEL_NODE_DISABLED_INSTRUMENTATIONS') ?? [],
    middlewareSpans: bool(r, 'AGENTRT_MIDDLEWARE_SPANS', false),
    httpServerSpans: oneOf(r, 'AGENTRT_HTTP_SERVER_SPANS', ['agentrt', 'upstream'] as const),
    fetchSpans: oneOf(r, 'AGENTRT_FETCH_SPANS', ['agentrt', 'upstream'] as const),
    captureConsole: bool(r, 'AGENTRT_CAPTURE_CONSOLE', true),
    compileCache: bool(r, 'AGENTRT_COMPILE_CACHE', true),
    esmLoader: oneOf(r, 'AGENTRT_ESM_LOADER', ['auto', 'sync', 'async'] as const),
    shutdownTimeoutMs: int(r, 'AGENTRT_SHUTDOWN_TIMEOUT_MS', DEFAULT_SHUTDOWN_TIMEOUT_MS, 0, 600_000),
  };
}

const MAX_LIMIT = 2 ** 31 - 1;

/** The SDK's defaults: 128 of everything, values untruncated; span-specific beats general. */
function readSpanLimits(r: EnvReader): SpanLimits {
  const attributeCount = int(r, 'OTEL_ATTRIBUTE_COUNT_LIMIT', 128, 0, MAX_LIMIT);
  const valueLength = int(r, 'OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT', MAX_LIMIT, 0, MAX_LIMIT);
  const spanValueLength = int(r, 'OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT', valueLength, 0, MAX_LIMIT);
  return {
    attributeCountLimit: int(r, 'OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT', attributeCount, 0, MAX_LIMIT),
    attributeValueLengthLimit: spanValueLength === MAX_LIMIT ? Infinity : spanValueLength,
    eventCountLimit: int(r, 'OTEL_SPAN_EVENT_COUNT_LIMIT', 128, 0, MAX_LIMIT),
    linkCountLimit: int(r, 'OTEL_SPAN_LINK_COUNT_LIMIT', 128, 0, MAX_LIMIT),
    attributePerEventCountLimit: int(r, 'OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT', 128, 0, MAX_LIMIT),
    attributePerLinkCountLimit: int(r, 'OTEL_LINK_ATTRIBUTE_COUNT_LIMIT', 128, 0, MAX_LIMIT),
  };
}

/** The batch span processor's settings and defaults (the batch never exceeds the queue). */
function readBatchConfig(r: EnvReader): BatchConfig {
  const maxQueueSize = int(r, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048, 1, 1_000_000);
  const batchSize = int(r, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, 1, 1_000_000);
  return {
    maxQueueSize,
    maxExportBatchSize: Math.min(batchSize, maxQueueSize),
    scheduledDelayMs: int(r, 'OTEL_BSP_SCHEDULE_DELAY', 5000, 0, 3_600_000),
    exportTimeoutMs: int(r, 'OTEL_BSP_EXPORT_TIMEOUT', 30_000, 0, 3_600_000),
  };
}

function endpointOf(value: string | undefined, warn: ConfigWarn, name: string): string | undefined {
  if (value === undefined) return undefined;
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return value;
  } catch {
    // fall through to the warning: an unparsable URL is a bad setting like any other
  }
  warn(`${name}="${value}" is not an http(s) URL; using the default`);
  return undefined;
}

/** Parses `key1=value1,key2=value2` (values percent-encoded, as the OTel spec says). */
export function parseResourceAttributes(
  value: string | undefined,
  warn: ConfigWarn = () => {},
): Record<string, string> {
  const out: Record<string, string> = {};
  if (value === undefined) return out;
  for (const pair of value.split(',')) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    const key = eq > 0 ? pair.slice(0, eq).trim() : '';
    if (key === '') {
      warn(`OTEL_RESOURCE_ATTRIBUTES has an entry without key=value ("${pair}"); ignoring it`);
      continue;
    }
    const raw = pair.slice(eq + 1).trim();
    try {
      out[key] = decodeURIComponent(raw);
    } catch {
      out[key] = raw;
    }
  }
  return out;
}
