/**
 * The SDK agent as its container runs it: the Dockerfile's CMD from dist with the Dockerfile's ENV,
 * as a real child process. Needs a build (`npx tsc -b examples/sdk-agent`).
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type WeatherApiFixture, startWeatherApiFixture } from '@agentrt/example-models/fixtures';
import {
  checkDockerfile,
  exampleDockerfile,
  loggedOfflineNotice,
  useExampleContainers,
} from '@agentrt/example-models/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';

const exampleDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const startExample = useExampleContainers();
let weather: WeatherApiFixture;
beforeAll(async () => void (weather = await startWeatherApiFixture()));
afterAll(() => weather?.close());

it('builds from the shared examples/Dockerfile: multi-stage, non-root, exposing 8080 with a /ping HEALTHCHECK and the instrumented CMD', () => {
  const expected = { port: 8080, healthPath: '/ping', workdir: '/app/examples/sdk-agent' };
  const image = exampleDockerfile(exampleDir);
  expect(image.path).toBe(join(exampleDir, '..', 'Dockerfile'));
  expect(checkDockerfile(image.path, expected, image.buildArgs)).toEqual([]);
});

it(
  'serves the contract from dist under the container CMD and exits 0 on SIGTERM',
  { timeout: 150_000 },
  async () => {
    const { container, url } = await startExample(exampleDir, { WEATHER_API_BASE_URL: weather.url });
    expect(loggedOfflineNotice(container)).toBe(true);
    expect(await (await fetch(`${url}/ping`)).json()).toMatchObject({ status: 'Healthy' });
    const response = await fetch(`${url}/invocations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Weather in Chicago' }),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { result: string }).result).toContain('Chicago, IL');
    expect(await container.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  },
);
