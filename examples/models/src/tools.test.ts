import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type WeatherApiFixture, startWeatherApiFixture } from './fixtures/weather-api-server.js';
import { createHttpRequestTool, createReadyToSummarizeTool } from './tools.js';

let weather: WeatherApiFixture;
beforeAll(async () => {
  weather = await startWeatherApiFixture();
});
afterAll(() => weather?.close());

const tool = () =>
  createHttpRequestTool({ baseUrl: weather.url, userAgent: 'agentrt-test/1', timeoutMs: 5000 });

describe('http_request tool', () => {
  it('GETs the weather API with the User-Agent and returns status and parsed JSON', async () => {
    const result = await tool().invoke({ url: `${weather.url}/points/39.7456,-97.0892` });
    expect(result.status).toBe(200);
    expect(result.contentType).toBe('application/geo+json');
    expect((result.body as { properties: { gridId: string } }).properties.gridId).toBe('TOP');
    expect(weather.requests.at(-1)).toMatchObject({ userAgent: 'agentrt-test/1', status: 200 });
  });

  it('refuses other origins and non-URLs, so a prompt cannot turn it into a proxy', async () => {
    await expect(tool().invoke({ url: 'http://169.254.169.254/latest/meta-data/' })).rejects.toThrow(
      `url must be on ${weather.url}; refusing http://169.254.169.254`,
    );
    await expect(tool().invoke({ url: '/points/1,1' })).rejects.toThrow('is not an absolute URL');
  });

  it('turns an API error into a message with status and detail', async () => {
    await expect(tool().invoke({ url: `${weather.url}/points/nope` })).rejects.toThrow(
      /^HTTP 400 from .*\/points\/nope: Parameter "point" is invalid/,
    );
  });

  it('stops reading a response larger than the limit, and times out a stalled API', async () => {
    const server = createServer((req, res) => {
      if (req.url === '/big') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`"${'x'.repeat(4096)}"`);
      }
      // any other path never answers
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const limited = createHttpRequestTool({
        baseUrl: base,
        userAgent: 'ua',
        timeoutMs: 300,
        maxResponseBytes: 1024,
      });
      await expect(limited.invoke({ url: `${base}/big` })).rejects.toThrow('is larger than 1024 bytes');
      await expect(limited.invoke({ url: `${base}/stall` })).rejects.toThrow(/request to .*\/stall failed/);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe('ready_to_summarize tool', () => {
  it('flips the flag and tells the model to continue', async () => {
    let ready = false;
    const result = await createReadyToSummarizeTool(() => (ready = true)).invoke({});
    expect(ready).toBe(true);
    expect(result).toContain('continue providing the summary');
  });
});
