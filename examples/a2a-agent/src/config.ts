import { type AgentServiceConfig, envString, readAgentServiceConfig } from '@agentrt/example-models';

export interface A2aAgentConfig extends AgentServiceConfig {
  /**
   * The URL its agent card announces: `AGENTCORE_RUNTIME_URL` (set by the hosting runtime to the
   * agent's invocation URL), else `http://127.0.0.1:<PORT>/`.
   */
  readonly publicUrl: string;
}

/**
 * PORT (default 9000, the A2A container contract's), HOST, AGENTCORE_RUNTIME_URL, the model
 * settings and WEATHER_API_* (see the README). The only reader of `process.env` here.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): A2aAgentConfig {
  const base = readAgentServiceConfig(env, 9000);
  return Object.freeze({
    ...base,
    publicUrl: envString(env, 'AGENTCORE_RUNTIME_URL') ?? `http://127.0.0.1:${base.port}/`,
  });
}
