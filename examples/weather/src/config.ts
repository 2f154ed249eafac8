import {
  type LogLevel,
  type ModelConfig,
  type WeatherApiConfig,
  envInteger,
  envString,
  parseLogLevel,
  readModelConfig,
  readWeatherApiConfig,
} from '@agentrt/example-models';

/** Everything the weather service reads from the environment (the only reader of `process.env`). */
export interface WeatherServiceConfig {
  /** `PORT` (default 8000). */
  readonly port: number;
  /** `HOST` (default 0.0.0.0). */
  readonly host: string;
  /** `WEATHER_WORKERS` (default 2): worker processes behind node:cluster. */
  readonly workers: number;
  /** `WEATHER_API_KEYS`: comma-separated keys; when set, /weather and /weather-streaming need one. */
  readonly apiKeys: readonly string[];
  /** `WEATHER_MAX_BODY_BYTES` (default 1 MiB). */
  readonly maxBodyBytes: number;
  /** `WEATHER_DRAIN_TIMEOUT_MS` (default 10000): how long shutdown waits for in-flight requests. */
  readonly drainTimeoutMs: number;
  /** `AGENTRT_LOG_LEVEL` (default info). */
  readonly logLevel: LogLevel;
  readonly model: ModelConfig;
  readonly weatherApi: WeatherApiConfig;
  readonly warnings: readonly string[];
}

export function readConfig(env: Readonly<Record<string, string | undefined>>): WeatherServiceConfig {
  const warnings: string[] = [];
  const model = readModelConfig(env);
  const weatherApi = readWeatherApiConfig(env);
  const apiKeys = (envString(env, 'WEATHER_API_KEYS') ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter(Boolean);
  const config: WeatherServiceConfig = {
    port: envInteger(env, 'PORT', 8000, warnings, { max: 65_535 }),
    host: envString(env, 'HOST') ?? '0.0.0.0',
    workers: envInteger(env, 'WEATHER_WORKERS', 2, warnings, { min: 1, max: 64 }),
    apiKeys,
    maxBodyBytes: envInteger(env, 'WEATHER_MAX_BODY_BYTES', 1024 * 1024, warnings, { min: 1 }),
    drainTimeoutMs: envInteger(env, 'WEATHER_DRAIN_TIMEOUT_MS', 10_000, warnings, { max: 600_000 }),
    logLevel: parseLogLevel(envString(env, 'AGENTRT_LOG_LEVEL')),
    model,
    weatherApi,
    warnings: [...warnings, ...model.warnings, ...weatherApi.warnings],
  };
  return Object.freeze(config);
}

/** This process's settings. */
export function loadConfig(): WeatherServiceConfig {
  return readConfig(process.env);
}
