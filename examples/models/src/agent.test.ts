import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { askWeatherAgent, streamWeatherSummary } from './agent.js';
import { createConversationStore } from './conversations.js';
import { readModelConfig, readWeatherApiConfig } from './config.js';
import { type OpenAiStub, startOpenAiStub } from './fixtures/openai-stub-server.js';
import { type WeatherApiFixture, startWeatherApiFixture } from './fixtures/weather-api-server.js';
import { createModel } from './providers.js';

let weather: WeatherApiFixture;
let stub: OpenAiStub;

beforeAll(async () => {
  weather = await startWeatherApiFixture();
  stub = await startOpenAiStub({ apiKeys: ['sk-test-key'], chunkDelayMs: 1 });
});
afterAll(async () => {
  await Promise.all([weather?.close(), stub?.close()]);
});

function offlineOptions(chunkDelayMs = 1) {
  return {
    model: createModel(readModelConfig({ AGENTRT_OFFLINE_CHUNK_DELAY_MS: String(chunkDelayMs) })),
    weatherApi: readWeatherApiConfig({ WEATHER_API_BASE_URL: weather.url }),
    captureContent: false,
  };
}

/** The forecast periods the fixture serves for a point, fetched directly. */
async function fixturePeriods(lat: number, lon: number) {
  const headers = { 'user-agent': 'agentrt-test' };
  const points = (await (await fetch(`${weather.url}/points/${lat},${lon}`, { headers })).json()) as {
    properties: { forecast: string };
  };
  const forecast = (await (await fetch(points.properties.forecast, { headers })).json()) as {
    properties: { periods: { name: string; temperature: number; shortForecast: string }[] };
  };
  return forecast.properties.periods;
}

describe('offline model driving the real tool loop', () => {
  it('is the default without credentials, and says so', () => {
    const config = readModelConfig({});
    expect(config).toMatchObject({ provider: 'offline', providerSource: 'default' });
    expect(readModelConfig({ OPENAI_API_KEY: 'x' }).provider).toBe('openai');
    expect(readModelConfig({ AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' }).provider).toBe('bedrock');
    const bad = readModelConfig({ AGENTRT_MODEL_PROVIDER: 'gpt' });
    expect(bad.provider).toBe('offline');
    expect(bad.warnings.join()).toContain('AGENTRT_MODEL_PROVIDER');
  });

  it('looks up the point, then the forecast URL, and summarises the real periods', async () => {
    const before = weather.requests.length;
    const answer = await askWeatherAgent('What is the weather at 47.6062,-122.3321?', offlineOptions());
    const calls = weather.requests.slice(before);
    expect(calls.map((r) => r.path)).toEqual([
      '/points/47.6062,-122.3321',
      expect.stringMatching(/^\/gridpoints\/SEW\/\d+,\d+\/forecast$/),
    ]);
    expect(calls.every((r) => r.userAgent?.startsWith('agentrt-weather-example/'))).toBe(true);
    const periods = await fixturePeriods(47.6062, -122.3321);
    for (const period of periods.slice(0, 4)) {
      expect(answer.text).toContain(`${period.name}: ${period.shortForecast}. ${period.temperature}°F.`);
    }
    expect(answer.text).toContain('Seattle, WA');
    expect(answer.text).not.toMatch(/\?\s*$/); // no follow-up question
    expect(answer.metadata).toMatchObject({ provider: 'offline', offline: true, stopReason: 'endTurn' });
    expect(answer.metadata.usage.inputTokens).toBeGreaterThan(100);
    expect(answer.metadata.usage.outputTokens).toBeGreaterThan(10);
  });

  it('resolves a ZIP code and a known city', async () => {
    const before = weather.requests.length;
    const zip = await askWeatherAgent('Forecast for ZIP 10001 please', offlineOptions());
    expect(weather.requests[before]?.path).toBe('/zipcodes/10001');
    expect(zip.text).toContain('New York, NY');
    const city = await askWeatherAgent('How is the weather in Denver today?', offlineOptions());
    expect(city.text).toContain('Denver, CO');
  });

  it('reports an API error in the answer instead of inventing a forecast', async () => {
    const answer = await askWeatherAgent('Weather for ZIP 99999', offlineOptions());
    expect(answer.text).toContain('HTTP 404');
    expect(answer.text).toContain("ZIP code '99999' is not known");
    const outside = await askWeatherAgent('Weather at 51.5,-0.12 (London)', offlineOptions());
    expect(outside.text).toContain('Unable to provide data for requested point 51.5,-0.12');
  });

  it('answers a prompt without a location with guidance, calling no tool', async () => {
    const before = weather.requests.length;
    const answer = await askWeatherAgent('hello there', offlineOptions());
    expect(answer.text).toContain('Ask me about the weather at a US location');
    expect(weather.requests.length).toBe(before);
  });

  it('streams only the summary, in increments, after ready_to_summarize', async () => {
    const full = await askWeatherAgent('Weather at 25.7617,-80.1918?', offlineOptions());
    const chunks: string[] = [];
    const stream = streamWeatherSummary('Weather at 25.7617,-80.1918?', offlineOptions(2));
    let step = await stream.next();
    while (!step.done) {
      chunks.push(step.value);
      step = await stream.next();
    }
    expect(chunks.length).toBeGreaterThan(5);
    const text = chunks.join('');
    // The tool-phase chatter ("Let me find the forecast office...") is dropped.
    expect(text).not.toContain('Let me find');
    expect(text).not.toContain('now fetching');
    expect(text.trim()).toBe(full.text);
    expect(step.value.text).toContain('Here is the forecast for Miami, FL');
  });
});

describe('openai provider against the OpenAI-compatible stub', () => {
  function openaiOptions(apiKey: string) {
    return {
      model: createModel(
        readModelConfig({
          AGENTRT_MODEL_PROVIDER: 'openai',
          OPENAI_BASE_URL: stub.baseUrl,
          OPENAI_API_KEY: apiKey,
          AGENTRT_MODEL_ID: 'llama3.2',
        }),
      ),
      weatherApi: readWeatherApiConfig({ WEATHER_API_BASE_URL: weather.url }),
      captureContent: false,
    };
  }

  it('runs the tool loop through the real OpenAI client (streaming with tool-call deltas)', async () => {
    const before = stub.requests.length;
    const answer = await askWeatherAgent(
      'What is the weather at 41.8781,-87.6298?',
      openaiOptions('sk-test-key'),
    );
    const seen = stub.requests.slice(before);
    expect(seen.map((r) => r.answered)).toEqual(['http_request', 'http_request', 'text']);
    expect(
      seen.every((r) => r.stream && r.model === 'llama3.2' && r.toolNames.includes('http_request')),
    ).toBe(true);
    const periods = await fixturePeriods(41.8781, -87.6298);
    expect(answer.text).toContain(`${periods[0]!.name}: ${periods[0]!.shortForecast}.`);
    expect(answer.text).toContain('Chicago, IL');
    expect(answer.metadata).toMatchObject({ provider: 'openai', modelId: 'llama3.2', offline: false });
    expect(answer.metadata.usage.totalTokens).toBeGreaterThan(0);
  });

  it('streams the summary through the stub as well', async () => {
    const chunks: string[] = [];
    for await (const chunk of streamWeatherSummary(
      'Weather at 30.2672,-97.7431',
      openaiOptions('sk-test-key'),
    )) {
      chunks.push(chunk);
    }
    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks.join('')).toMatch(/^Here is the forecast for Austin, TX:/);
  });

  it('fails clearly on a wrong key', async () => {
    await expect(askWeatherAgent('Weather at 41.8781,-87.6298', openaiOptions('sk-wrong'))).rejects.toThrow(
      /401|Incorrect API key/,
    );
  });
});

describe('a session is a conversation', () => {
  it('the offline model answers from the earlier turns of the same session, and only of that one', async () => {
    const options = { ...offlineOptions(), conversations: createConversationStore() };
    const first = await askWeatherAgent('My name is Ada. Please remember it.', {
      ...options,
      sessionId: 'ada',
    });
    expect(first.text).toContain('Nice to meet you, Ada');
    const second = await askWeatherAgent('What is my name?', { ...options, sessionId: 'ada' });
    expect(second.text).toBe('Your name is Ada: you told me earlier in this session.');
    // The earlier turns went to the model as history: the second call read more tokens.
    expect(second.metadata.usage.inputTokens).toBeGreaterThan(first.metadata.usage.inputTokens);
    const other = await askWeatherAgent('What is my name?', { ...options, sessionId: 'someone-else' });
    expect(other.text).toBe('You have not told me your name in this session yet.');
    const weatherAfter = await askWeatherAgent('Weather in Seattle?', { ...options, sessionId: 'ada' });
    expect(weatherAfter.text).toMatch(/Seattle/);
  });
});
