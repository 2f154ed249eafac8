import { createLogger, createModel, readModelConfig, readWeatherApiConfig } from '@agentrt/example-models';
import {
  type OpenAiStub,
  type WeatherApiFixture,
  startOpenAiStub,
  startWeatherApiFixture,
} from '@agentrt/example-models/fixtures';
import { listenKoa } from '@agentrt/example-models/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL_LABEL, PROMPT_REQUIRED, createCustomAgentApp } from './app.js';

let weather: WeatherApiFixture;
let stub: OpenAiStub;
const closers: (() => void)[] = [];
let url: string;
let failingUrl: string;

async function start(env: Record<string, string>): Promise<string> {
  const app = createCustomAgentApp({
    model: createModel(readModelConfig({ AGENTRT_OFFLINE_CHUNK_DELAY_MS: '5', ...env })),
    weatherApi: readWeatherApiConfig({ WEATHER_API_BASE_URL: weather.url }),
    captureContent: false,
    logger: createLogger({ name: 'custom-agent-test', write: () => undefined }),
    maxBodyBytes: 4096,
  });
  const served = await listenKoa(app);
  closers.push(served.close);
  return served.url;
}

beforeAll(async () => {
  weather = await startWeatherApiFixture({ latencyMs: 200 });
  stub = await startOpenAiStub({ apiKeys: ['sk-right'], chunkDelayMs: 0 });
  url = await start({});
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

const invoke = (base: string, body: string) =>
  fetch(`${base}/invocations`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

describe('custom agent (plain Koa + agentContext)', () => {
  it('answers {"output": {message, timestamp, model}}', async () => {
    const before = Date.now();
    const response = await invoke(url, JSON.stringify({ input: { prompt: 'Weather at 42.3601,-71.0589' } }));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    const body = (await response.json()) as {
      output: { message: { role: string; content: { text: string }[] }; timestamp: string; model: string };
    };
    expect(Object.keys(body)).toEqual(['output']);
    expect(body.output.message.role).toBe('assistant');
    expect(body.output.message.content).toHaveLength(1);
    expect(body.output.message.content[0]!.text).toMatch(/^Here is the forecast for Boston, MA:/);
    expect(body.output.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Date.parse(body.output.timestamp)).toBeGreaterThanOrEqual(before - 1000);
    expect(body.output.model).toBe(MODEL_LABEL);
  });

  it.each([
    ['no input', '{}'],
    ['input without prompt', '{"input": {}}'],
    ['empty prompt', '{"input": {"prompt": ""}}'],
    ['blank prompt', '{"input": {"prompt": "  "}}'],
    ['null input', '{"input": null}'],
    ['empty body', ''],
  ])('%s → 400 asking for a prompt key', async (_name, body) => {
    const response = await invoke(url, body);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ detail: PROMPT_REQUIRED });
  });

  it('names the field for wrong types, and rejects bad JSON and oversized bodies', async () => {
    expect(await (await invoke(url, '{"input": {"prompt": 7}}')).json()).toEqual({
      detail: 'input.prompt must be a string, got number',
    });
    expect(await (await invoke(url, '{"input": "hi"}')).json()).toEqual({
      detail: 'input must be an object with a "prompt" key, got string',
    });
    expect(await (await invoke(url, '{"input": [1]}')).json()).toEqual({
      detail: 'input must be an object with a "prompt" key, got array',
    });
    const badJson = await invoke(url, '{"input": {');
    expect(badJson.status).toBe(400);
    expect(((await badJson.json()) as { detail: string }).detail).toMatch(/^Invalid JSON body/);
    const big = await invoke(url, JSON.stringify({ input: { prompt: 'x'.repeat(5000) } }));
    expect(big.status).toBe(413);
  });

  it('any exception → 500 "Agent processing failed: <text>"', async () => {
    const response = await invoke(
      failingUrl,
      JSON.stringify({ input: { prompt: 'Weather at 42.3601,-71.0589' } }),
    );
    expect(response.status).toBe(500);
    const { detail } = (await response.json()) as { detail: string };
    expect(detail).toMatch(/^Agent processing failed: .*(401|Incorrect API key)/);
  });

  it('GET /ping is Healthy, HealthyBusy during an invocation, with time_of_last_update changing only on transitions', async () => {
    const idle = (await (await fetch(`${url}/ping`)).json()) as {
      status: string;
      time_of_last_update: number;
    };
    expect(idle.status).toBe('Healthy');
    expect(Number.isInteger(idle.time_of_last_update)).toBe(true);
    const again = (await (await fetch(`${url}/ping`)).json()) as { time_of_last_update: number };
    expect(again.time_of_last_update).toBe(idle.time_of_last_update);
    const pending = invoke(url, JSON.stringify({ input: { prompt: 'Weather at 30.2672,-97.7431' } }));
    let busy = 'Healthy';
    const deadline = Date.now() + 5000;
    while (busy !== 'HealthyBusy' && Date.now() < deadline) {
      busy = ((await (await fetch(`${url}/ping`)).json()) as { status: string }).status;
    }
    expect(busy).toBe('HealthyBusy');
    expect((await pending).status).toBe(200);
    expect(((await (await fetch(`${url}/ping`)).json()) as { status: string }).status).toBe('Healthy');
  });

  it('404 for other paths and 405 with Allow for wrong methods', async () => {
    expect((await fetch(`${url}/other`)).status).toBe(404);
    const wrong = await fetch(`${url}/invocations`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
  });
});
