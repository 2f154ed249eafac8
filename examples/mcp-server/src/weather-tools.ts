import { type WeatherApiConfig } from '@agentrt/example-models';

/** A weather API answer that is not what a tool can use; its message is what the MCP client sees. */
export class WeatherToolError extends Error {
  override readonly name = 'WeatherToolError';
}

async function getJson(api: WeatherApiConfig, path: string): Promise<Record<string, unknown>> {
  const url = `${api.baseUrl}${path}`;
  const res = await fetch(url, {
    headers: { 'user-agent': api.userAgent, accept: 'application/geo+json' },
    signal: AbortSignal.timeout(api.timeoutMs),
  });
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok)
    throw new WeatherToolError(
      `weather API answered ${res.status} for ${path}: ${String(body.detail ?? body.title ?? 'no detail')}`,
    );
  return body;
}

/** The next forecast periods for a point: `/points/{lat},{lon}`, then the forecast URL it names. */
export async function getForecast(api: WeatherApiConfig, latitude: number, longitude: number, periods = 5) {
  const point = await getJson(api, `/points/${latitude},${longitude}`);
  const forecastUrl = (point.properties as { forecast?: unknown } | undefined)?.forecast;
  if (typeof forecastUrl !== 'string') throw new WeatherToolError('the points lookup named no forecast URL');
  const path = new URL(forecastUrl).pathname;
  const forecast = await getJson(api, path);
  const list = ((forecast.properties as { periods?: unknown[] } | undefined)?.periods ?? []) as {
    name: string;
    temperature: number;
    temperatureUnit: string;
    windSpeed: string;
    windDirection: string;
    shortForecast: string;
  }[];
  return list.slice(0, periods).map((p) => ({
    name: p.name,
    temperature: `${p.temperature}°${p.temperatureUnit}`,
    wind: `${p.windSpeed} ${p.windDirection}`,
    forecast: p.shortForecast,
  }));
}

/** Active alerts for a US state: `/alerts/active?area={state}`. */
export async function getAlerts(api: WeatherApiConfig, state: string) {
  const body = await getJson(api, `/alerts/active?area=${encodeURIComponent(state)}`);
  const features = (body.features ?? []) as { properties: Record<string, unknown> }[];
  return features.map((f) => ({
    event: String(f.properties.event ?? ''),
    severity: String(f.properties.severity ?? ''),
    headline: String(f.properties.headline ?? ''),
  }));
}
