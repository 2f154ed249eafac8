import { createLogger, createModel, readModelConfig, readWeatherApiConfig } from '@agentrt/example-models';
import {
  type OpenAiStub,
  type WeatherApiFixture,
  startOpenAiStub,
  startWeatherApiFixture,
} from '@agentrt/example-models/fixtures';
import { listenKoa } from '@agentrt/example-models/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWeatherApp } from './app.js';

let weather: WeatherApiFixture;
let stub: OpenAiStub;
const closers: (() => void)[] = [];
const logLines: string[] = [];

async function start(
  env: Record<string, string>,
  apiKeys: string[] = [],
  maxBodyBytes = 4096,
): Promise<string> {
  const app = createWeatherApp({
    model: createModel(readModelConfig({ AGENTRT_OFFLINE_CHUNK_DELAY_MS: '10', ...env })),
    weatherApi: readWeatherApiConfig({ WEATHER_API_BASE_URL: weather.url }),
    captureContent: false,
    logger: createLogger({ name: 'weather-test', write: (line) => logLines.push(line) }),
    apiKeys,
    maxBodyBytes,
  });
  const served = await listenKoa(app.koa);
  closers.push(served.close);
  return served.url;
}

let url: string;
let securedUrl: string;
let failingUrl: string;

beforeAll(async () => {
  weather = await startWeatherApiFixture();
  stub = await startOpenAiStub({ apiKeys: ['sk-right'], chunkDelayMs: 0 });
  url = await start({});
  securedUrl = await start({}, ['key-one', 'key-two']);
  failingUrl = await start({
    AGENTRT_MODEL_PROVIDER: 'openai',
    OPENAI_BASE_URL: stub.baseUrl,
    OPENAI_API_KEY: 'sk-wrong',
  });
});
afterAll(async () => {
  for (const close of closers) close();
  await Promise.all([weather?.close(), stub?.close()]);
});

const post = (base: string, path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });

describe('POST /weather', () => {
  it('answers the final text as text/plain, written from the forecast', async () => {
    const response = await post(
      url,
      '/weather',
      JSON.stringify({ prompt: 'What is the weather at 47.6062,-122.3321?' }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(response.headers.get('x-model-provider')).toBe('offline');
    expect(response.headers.get('x-model-offline')).toBe('true');
    expect(Number(response.headers.get('x-usage-input-tokens'))).toBeGreaterThan(0);
    const text = await response.text();
    expect(text).toMatch(/^Here is the forecast for Seattle, WA:\n\n- Tonight: /);
    expect(text).not.toContain('Let me find');
  });

  it.each([
    ['missing prompt', '{}'],
    ['empty prompt', '{"prompt": ""}'],
    ['blank prompt', '{"prompt": "   "}'],
    ['null prompt', '{"prompt": null}'],
    ['empty body', ''],
  ])('%s → 400 {"detail": "No prompt provided"}', async (_name, body) => {
    for (const path of ['/weather', '/weather-streaming']) {
      const response = await post(url, path, body);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ detail: 'No prompt provided' });
    }
  });

  it('rejects malformed, non-object, wrongly typed and oversized bodies with a clear detail', async () => {
    const badJson = await post(url, '/weather', '{"prompt": "x"');
    expect(badJson.status).toBe(400);
    expect(((await badJson.json()) as { detail: string }).detail).toMatch(/^Invalid JSON body: /);
    const array = await post(url, '/weather', '["prompt"]');
    expect(array.status).toBe(400);
    expect(((await array.json()) as { detail: string }).detail).toContain('"prompt"');
    const number = await post(url, '/weather', '{"prompt": 42}');
    expect(await number.json()).toEqual({ detail: 'prompt must be a string, got number' });
    const big = await post(url, '/weather', JSON.stringify({ prompt: 'x'.repeat(5000) }));
    expect(big.status).toBe(413);
    expect(await big.json()).toEqual({ detail: 'Request body exceeds 4096 bytes' });
    const hostile = await post(
      url,
      '/weather',
      JSON.stringify({ prompt: '<script>alert(1)</script>\u0000', __proto__: { x: 1 } }),
    );
    expect(hostile.status).toBe(200);
    expect(await hostile.text()).toContain('offline weather assistant');
  });

  it('any other failure → 500 with the exception text as detail', async () => {
    const response = await post(
      failingUrl,
      '/weather',
      JSON.stringify({ prompt: 'Weather at 47.6062,-122.3321' }),
    );
    expect(response.status).toBe(500);
    const body = (await response.json()) as { detail: string };
    expect(body.detail).toMatch(/401|Incorrect API key/);
    const streaming = await post(
      failingUrl,
      '/weather-streaming',
      JSON.stringify({ prompt: 'Weather at 47.6062,-122.3321' }),
    );
    expect(streaming.status).toBe(500);
    expect(((await streaming.json()) as { detail: string }).detail).toMatch(/401|Incorrect API key/);
  });
});

describe('POST /weather-streaming', () => {
  it('streams only the summary, in increments, as text/plain', async () => {
    const prompt = JSON.stringify({ prompt: 'Forecast for ZIP 98101' });
    const full = await (await post(url, '/weather', prompt)).text();
    const started = performance.now();
    const response = await post(url, '/weather-streaming', prompt);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(response.headers.get('transfer-encoding')).toBe('chunked');
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    const arrivals: { atMs: number; text: string }[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      arrivals.push({ atMs: performance.now() - started, text: decoder.decode(value, { stream: true }) });
    }
    const text = arrivals.map((a) => a.text).join('');
    expect(text).toBe(full);
    expect(text).not.toMatch(/Let me find|now fetching/);
    // Increments: several reads, spread over time rather than one buffered body.
    expect(arrivals.length).toBeGreaterThan(5);
    expect(arrivals.at(-1)!.atMs - arrivals[0]!.atMs).toBeGreaterThan(50);
  });
});

describe('routes and API keys', () => {
  it('GET /health, 404 and 405', async () => {
    const health = await fetch(`${url}/health`);
    expect(await health.json()).toMatchObject({ status: 'healthy', pid: process.pid });
    const missing = await fetch(`${url}/nope`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { detail: string }).detail).toBe('Not Found: GET /nope');
    const wrong = await fetch(`${url}/weather`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
  });

  it('with WEATHER_API_KEYS, a missing or wrong key is 401; x-api-key or Bearer passes; /health stays open', async () => {
    const body = JSON.stringify({ prompt: 'hello' });
    const none = await post(securedUrl, '/weather', body);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toContain('Bearer');
    expect(((await none.json()) as { detail: string }).detail).toContain('Missing API key');
    const wrong = await post(securedUrl, '/weather-streaming', body, { 'x-api-key': 'key-three' });
    expect(await wrong.json()).toEqual({ detail: 'Invalid API key' });
    const lookalike = await post(securedUrl, '/weather', body, { authorization: 'Bearer key-one-and-more' });
    expect(lookalike.status).toBe(401);
    expect((await post(securedUrl, '/weather', body, { 'x-api-key': 'key-one' })).status).toBe(200);
    expect((await post(securedUrl, '/weather', body, { authorization: 'Bearer key-two' })).status).toBe(200);
    expect((await fetch(`${securedUrl}/health`)).status).toBe(200);
  });

  it('logs JSON lines with the session id from the session header', async () => {
    const session = 'weather-session-0123456789abcdef0123456789';
    await post(url, '/weather', JSON.stringify({ prompt: 'hello' }), {
      'X-Cloud-Agent-Runtime-Session-Id': session,
    });
    const lines = logLines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.some((l) => l.msg === 'answered' && l.sessionId === session)).toBe(true);
  });
});
