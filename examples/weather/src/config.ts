import {
  type AgentServiceConfig,
  envInteger,
  envString,
  readAgentServiceConfig,
} from '@agentrt/example-models';

/** Everything the weather service reads from the environment (the only reader of `process.env`). */
export interface WeatherServiceConfig extends AgentServiceConfig {
  /** `WEATHER_WORKERS` (default 2): worker processes behind node:cluster. */
  readonly workers: number;
  /** `WEATHER_API_KEYS`: comma-separated keys; when set, /weather and /weather-streaming need one. */
  readonly apiKeys: readonly string[];
  /** `WEATHER_MAX_BODY_BYTES` (default 1 MiB). */
  readonly maxBodyBytes: number;
}

/** PORT defaults to 8000 here (seed section 8); the rest as in every example. */
export function readConfig(env: Readonly<Record<string, string | undefined>>): WeatherServiceConfig {
  const base = readAgentServiceConfig(env, 8000);
  const warnings: string[] = [];
  const apiKeys = (envString(env, 'WEATHER_API_KEYS') ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter(Boolean);
  return Object.freeze({
    ...base,
    workers: envInteger(env, 'WEATHER_WORKERS', 2, warnings, { min: 1, max: 64 }),
    apiKeys,
    maxBodyBytes: envInteger(env, 'WEATHER_MAX_BODY_BYTES', 1024 * 1024, warnings, { min: 1 }),
    warnings: [...base.warnings, ...warnings],
  });
}

/** This process's settings. */
export function loadConfig(): WeatherServiceConfig {
  return readConfig(process.env);
}
