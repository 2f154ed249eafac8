import {
  type LogLevel,
  type WeatherApiConfig,
  envBoolean,
  envInteger,
  envString,
  parseLogLevel,
  readWeatherApiConfig,
} from '@agentrt/example-models';

export interface McpServerConfig {
  readonly port: number;
  readonly host: string;
  /** `MCP_JSON_RESPONSE=1`: answer requests with JSON instead of an SSE stream. */
  readonly jsonResponse: boolean;
  readonly logLevel: LogLevel;
  readonly weatherApi: WeatherApiConfig;
  readonly warnings: readonly string[];
}

/**
 * PORT (default 8001: the MCP container contract's 8000 is the weather service's in the local stack,
 * so the image and the runtime set PORT=8000 themselves), HOST (0.0.0.0), MCP_JSON_RESPONSE,
 * AGENTRT_LOG_LEVEL and WEATHER_API_*. The only reader of `process.env` here.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): McpServerConfig {
  const warnings: string[] = [];
  const weatherApi = readWeatherApiConfig(env);
  return Object.freeze({
    port: envInteger(env, 'PORT', 8001, warnings, { max: 65_535 }),
    host: envString(env, 'HOST') ?? '0.0.0.0',
    jsonResponse: envBoolean(env, 'MCP_JSON_RESPONSE', false, warnings),
    logLevel: parseLogLevel(envString(env, 'AGENTRT_LOG_LEVEL')),
    weatherApi,
    warnings: Object.freeze([...warnings, ...weatherApi.warnings]),
  });
}
