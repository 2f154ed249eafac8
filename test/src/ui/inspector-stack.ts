/**
 * The stack the Inspector tests drive: a collector, a runtime host that lets the collector's page in
 * (AGENTRT_RUNTIME_ALLOWED_ORIGINS) and one agent runtime of a reference example calling the
 * weather API fixture, which sandboxed workers reach on its loopback port.
 */
import { type WeatherApiFixture, startWeatherApiFixture } from '@agentrt/example-models/fixtures';
import type { RuntimeServerOptions } from '@agentrt/runtime';
import {
  type RuntimeStack,
  type RuntimeStackOptions,
  startRuntimeStack,
} from '../observability/runtime-stack.js';

export interface InspectorStack {
  stack: RuntimeStack;
  weather: WeatherApiFixture;
  /** The environment of an agent named `service`: the offline model and the fixture. */
  environment(service: string): Record<string, string>;
  close(): Promise<void>;
}

export async function startInspectorStack(
  options: Pick<RuntimeStackOptions, 'name' | 'example' | 'serverProtocol'> & {
    service: string;
    /** Runtime host options besides the page's origin and the fixture's port (AGENTRT_API_KEYS…). */
    runtime?: Partial<RuntimeServerOptions>;
  },
): Promise<InspectorStack> {
  const weather = await startWeatherApiFixture();
  const environment = (service: string) => ({
    AGENTRT_MODEL_PROVIDER: 'offline',
    OTEL_SERVICE_NAME: service,
    WEATHER_API_BASE_URL: weather.url,
  });
  const { service, runtime, ...stackOptions } = options;
  const stack = await startRuntimeStack({
    ...stackOptions,
    environment: environment(service),
    runtime: (collector) => ({
      ...runtime,
      allowedOrigins: [collector.url],
      sandboxHostPorts: [Number(new URL(weather.url).port)],
    }),
  }).catch(async (error: unknown) => {
    await weather.close();
    throw error;
  });
  return {
    stack,
    weather,
    environment,
    async close() {
      await stack.close();
      await weather.close();
    },
  };
}
