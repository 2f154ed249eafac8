import { type AgentServiceConfig, readAgentServiceConfig } from '@agentrt/example-models';

/**
 * This agent's settings: PORT (default 8080), HOST, AGENTRT_DRAIN_TIMEOUT_MS, AGENTRT_LOG_LEVEL,
 * the model settings and WEATHER_API_* (see the README). The only reader of `process.env` here.
 */
export function loadConfig(): AgentServiceConfig {
  return readAgentServiceConfig(process.env, 8080);
}
