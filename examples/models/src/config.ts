import { type LogLevel, parseLogLevel } from './logger.js';

/**
 * Settings shared by every reference agent. These are pure functions of an environment object:
 * each runnable example's own `config.ts` passes `process.env` in, so that file stays the only
 * reader of the environment in its package.
 */

/** The model providers an example can run on. */
export type ModelProviderName = 'bedrock' | 'openai' | 'offline';

/** Why a provider was chosen (shown in logs and in the answer metadata). */
export type ModelProviderSource = 'explicit' | 'credentials' | 'default';

export interface ModelConfig {
  readonly provider: ModelProviderName;
  readonly providerSource: ModelProviderSource;
  /** `AGENTRT_MODEL_ID`; each provider has its own default when unset. */
  readonly modelId: string | undefined;
  /** `OPENAI_BASE_URL`; the OpenAI client's default (api.openai.com) when unset. */
  readonly openaiBaseUrl: string | undefined;
  /** `OPENAI_API_KEY`. */
  readonly openaiApiKey: string | undefined;
  /** `AWS_REGION` or `AWS_DEFAULT_REGION`. */
  readonly awsRegion: string | undefined;
  /** `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` (the AWS SDK's service endpoint variable): a Bedrock-compatible endpoint. */
  readonly bedrockEndpoint: string | undefined;
  /** `AGENTRT_OFFLINE_CHUNK_DELAY_MS`: pause between the offline model's text chunks (default 15). */
  readonly offlineChunkDelayMs: number;
  /** `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` records prompts, answers and tool I/O. */
  readonly captureMessageContent: boolean;
  /** Settings that were present but unusable, for the caller to log once. */
  readonly warnings: readonly string[];
}

export interface WeatherApiConfig {
  /** `WEATHER_API_BASE_URL` (default https://api.weather.gov). */
  readonly baseUrl: string;
  /** `WEATHER_API_USER_AGENT`: api.weather.gov refuses requests without a User-Agent. */
  readonly userAgent: string;
  /** `WEATHER_API_TIMEOUT_MS` (default 15000). */
  readonly timeoutMs: number;
  readonly warnings: readonly string[];
}

export type Env = Readonly<Record<string, string | undefined>>;

export const DEFAULT_WEATHER_API_BASE_URL = 'https://api.weather.gov';
export const DEFAULT_WEATHER_API_USER_AGENT =
  'agentrt-weather-example/0.1 (+https://github.com/agentrt/agentrt)';

const PROVIDERS: readonly ModelProviderName[] = ['bedrock', 'openai', 'offline'];

/** Blank means unset, as in the OpenTelemetry SDK's environment reader. */
export function envString(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

/** A non-negative integer setting; a bad value is reported and the default used. */
export function envInteger(
  env: Env,
  name: string,
  fallback: number,
  warnings: string[],
  { min = 0, max = Number.MAX_SAFE_INTEGER }: { min?: number; max?: number } = {},
): number {
  const raw = envString(env, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    warnings.push(`${name}=${JSON.stringify(raw)} is not an integer in [${min}, ${max}]; using ${fallback}`);
    return fallback;
  }
  return value;
}

export function envBoolean(env: Env, name: string, fallback: boolean, warnings: string[]): boolean {
  const raw = envString(env, name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  warnings.push(`${name}=${JSON.stringify(raw)} is not true/false; using ${fallback}`);
  return fallback;
}

function hasAwsCredentials(env: Env): boolean {
  return Boolean(
    (envString(env, 'AWS_ACCESS_KEY_ID') && envString(env, 'AWS_SECRET_ACCESS_KEY')) ||
    envString(env, 'AWS_PROFILE') ||
    envString(env, 'AWS_WEB_IDENTITY_TOKEN_FILE') ||
    envString(env, 'AWS_CONTAINER_CREDENTIALS_FULL_URI') ||
    envString(env, 'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI'),
  );
}

/**
 * `AGENTRT_MODEL_PROVIDER` when set; otherwise Bedrock when AWS credentials are in the environment,
 * OpenAI when `OPENAI_API_KEY` is, and the offline deterministic model when there are none.
 */
export function readModelConfig(env: Env): ModelConfig {
  const warnings: string[] = [];
  const requested = envString(env, 'AGENTRT_MODEL_PROVIDER')?.toLowerCase();
  let provider: ModelProviderName;
  let providerSource: ModelProviderSource;
  if (requested && (PROVIDERS as readonly string[]).includes(requested)) {
    provider = requested as ModelProviderName;
    providerSource = 'explicit';
  } else {
    if (requested) {
      warnings.push(
        `AGENTRT_MODEL_PROVIDER=${JSON.stringify(requested)} is not one of ${PROVIDERS.join(', ')}; choosing from the credentials`,
      );
    }
    if (hasAwsCredentials(env)) {
      provider = 'bedrock';
      providerSource = 'credentials';
    } else if (envString(env, 'OPENAI_API_KEY')) {
      provider = 'openai';
      providerSource = 'credentials';
    } else {
      provider = 'offline';
      providerSource = 'default';
    }
  }
  return Object.freeze({
    provider,
    providerSource,
    modelId: envString(env, 'AGENTRT_MODEL_ID'),
    openaiBaseUrl: envString(env, 'OPENAI_BASE_URL'),
    openaiApiKey: envString(env, 'OPENAI_API_KEY'),
    awsRegion: envString(env, 'AWS_REGION') ?? envString(env, 'AWS_DEFAULT_REGION'),
    bedrockEndpoint: envString(env, 'AWS_ENDPOINT_URL_BEDROCK_RUNTIME') ?? envString(env, 'AWS_ENDPOINT_URL'),
    offlineChunkDelayMs: envInteger(env, 'AGENTRT_OFFLINE_CHUNK_DELAY_MS', 15, warnings, { max: 10_000 }),
    captureMessageContent: envBoolean(
      env,
      'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT',
      false,
      warnings,
    ),
    warnings: Object.freeze(warnings),
  });
}

export function readWeatherApiConfig(env: Env): WeatherApiConfig {
  const warnings: string[] = [];
  let baseUrl = envString(env, 'WEATHER_API_BASE_URL') ?? DEFAULT_WEATHER_API_BASE_URL;
  try {
    const url = new URL(baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)');
    baseUrl = url.href.replace(/\/+$/, '');
  } catch {
    warnings.push(
      `WEATHER_API_BASE_URL=${JSON.stringify(baseUrl)} is not an http(s) URL; using ${DEFAULT_WEATHER_API_BASE_URL}`,
    );
    baseUrl = DEFAULT_WEATHER_API_BASE_URL;
  }
  return Object.freeze({
    baseUrl,
    userAgent: envString(env, 'WEATHER_API_USER_AGENT') ?? DEFAULT_WEATHER_API_USER_AGENT,
    timeoutMs: envInteger(env, 'WEATHER_API_TIMEOUT_MS', 15_000, warnings, { min: 1, max: 600_000 }),
    warnings: Object.freeze(warnings),
  });
}

export interface FixtureServerConfig {
  /** `HOST` (default 127.0.0.1). */
  readonly host: string;
  /** `PORT` (default: the fixture's own, 8790 for the weather API, 8791 for the OpenAI stub, 8792 for the Bedrock stub). */
  readonly port: number;
  /** `WEATHER_FIXTURE_LATENCY_MS` (default 0): added to every weather API answer. */
  readonly latencyMs: number;
  /** `OPENAI_STUB_API_KEYS` / `BEDROCK_STUB_ACCESS_KEY_IDS`: comma-separated keys the stub accepts (any when unset). */
  readonly apiKeys: readonly string[] | undefined;
  readonly warnings: readonly string[];
}

export function readFixtureServerConfig(
  env: Env,
  defaultPort: number,
  keysVariable = 'OPENAI_STUB_API_KEYS',
): FixtureServerConfig {
  const warnings: string[] = [];
  const keys = envString(env, keysVariable)
    ?.split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  return Object.freeze({
    host: envString(env, 'HOST') ?? '127.0.0.1',
    port: envInteger(env, 'PORT', defaultPort, warnings, { max: 65_535 }),
    latencyMs: envInteger(env, 'WEATHER_FIXTURE_LATENCY_MS', 0, warnings, { max: 60_000 }),
    apiKeys: keys && keys.length > 0 ? keys : undefined,
    warnings: Object.freeze(warnings),
  });
}

/** The fixture servers' settings from this process's environment (the runnable fixtures call this). */
export function fixtureServerConfigFromProcess(
  defaultPort: number,
  keysVariable?: string,
): FixtureServerConfig {
  return readFixtureServerConfig(process.env, defaultPort, keysVariable);
}

/** What every example service reads: where to listen, logging, the model and the weather API. */
export interface AgentServiceConfig {
  /** `PORT` (default: the example's own, 8080 for the contract agents, 8000 for the weather service). */
  readonly port: number;
  /** `HOST` (default 0.0.0.0). */
  readonly host: string;
  /** `AGENTRT_DRAIN_TIMEOUT_MS` (default 10000): how long shutdown waits for in-flight requests. */
  readonly drainTimeoutMs: number;
  /** `AGENTRT_LOG_LEVEL` (default info). */
  readonly logLevel: LogLevel;
  readonly model: ModelConfig;
  readonly weatherApi: WeatherApiConfig;
  /** Unusable settings (each example logs them once at start). */
  readonly warnings: readonly string[];
}

export function readAgentServiceConfig(env: Env, defaultPort: number): AgentServiceConfig {
  const warnings: string[] = [];
  const model = readModelConfig(env);
  const weatherApi = readWeatherApiConfig(env);
  return Object.freeze({
    port: envInteger(env, 'PORT', defaultPort, warnings, { max: 65_535 }),
    host: envString(env, 'HOST') ?? '0.0.0.0',
    drainTimeoutMs: envInteger(env, 'AGENTRT_DRAIN_TIMEOUT_MS', 10_000, warnings, { max: 600_000 }),
    logLevel: parseLogLevel(envString(env, 'AGENTRT_LOG_LEVEL')),
    model,
    weatherApi,
    warnings: Object.freeze([...warnings, ...model.warnings, ...weatherApi.warnings]),
  });
}
