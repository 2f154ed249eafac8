import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { askWeatherAgent, streamWeatherSummary } from './agent.js';
import { readModelConfig, readWeatherApiConfig } from './config.js';
import { type BedrockStub, startBedrockStub } from './fixtures/bedrock-stub-server.js';
import { type WeatherApiFixture, startWeatherApiFixture } from './fixtures/weather-api-server.js';
import { createModel } from './providers.js';

// The AWS SDK's default credential chain reads these, as in a container started with credentials (seed 4.1.5).
process.env.AWS_ACCESS_KEY_ID = 'AKIAAGENTRTTEST00001';
process.env.AWS_SECRET_ACCESS_KEY = 'test-secret-key';
delete process.env.AWS_PROFILE;

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
let weather: WeatherApiFixture;
let bedrock: BedrockStub;

beforeAll(async () => {
  provider.register();
  weather = await startWeatherApiFixture();
  bedrock = await startBedrockStub({ accessKeyIds: ['AKIAAGENTRTTEST00001'] });
});
afterAll(async () => {
  await Promise.all([weather?.close(), bedrock?.close()]);
  await provider.shutdown();
});

function bedrockOptions(env: Record<string, string> = {}) {
  const config = readModelConfig({
    AWS_ACCESS_KEY_ID: 'AKIAAGENTRTTEST00001',
    AWS_SECRET_ACCESS_KEY: 'test-secret-key',
    AWS_REGION: 'us-east-1',
    AWS_ENDPOINT_URL_BEDROCK_RUNTIME: bedrock.url,
    ...env,
  });
  return {
    model: createModel(config),
    weatherApi: readWeatherApiConfig({ WEATHER_API_BASE_URL: weather.url }),
    captureContent: false,
  };
}

describe('bedrock provider through the real AWS SDK client (ConverseStream event stream)', () => {
  it('is chosen from AWS credentials and runs the tool loop with SigV4-signed calls', async () => {
    const options = bedrockOptions();
    expect(options.model).toMatchObject({
      provider: 'bedrock',
      providerSource: 'credentials',
      genAiProvider: 'aws.bedrock',
    });
    exporter.reset();
    const before = bedrock.requests.length;
    const answer = await askWeatherAgent('Weather at 37.7749,-122.4194', options);
    const seen = bedrock.requests.slice(before);
    expect(seen.map((r) => r.answered)).toEqual(['http_request', 'http_request', 'text']);
    expect(
      seen.every((r) => r.region === 'us-east-1' && r.modelId === 'global.anthropic.claude-sonnet-4-6'),
    ).toBe(true);
    expect(answer.text).toMatch(/^Here is the forecast for San Francisco, CA:/);
    expect(answer.metadata).toMatchObject({ provider: 'bedrock', offline: false });
    expect(answer.metadata.usage.inputTokens).toBeGreaterThan(0);
    const chats = exporter
      .getFinishedSpans()
      .filter((s) => s.name === 'chat global.anthropic.claude-sonnet-4-6');
    expect(chats).toHaveLength(3);
    expect(
      chats.every(
        (s) => s.kind === SpanKind.CLIENT && s.attributes['gen_ai.provider.name'] === 'aws.bedrock',
      ),
    ).toBe(true);
    expect(chats[0]!.attributes['server.address']).toBe('127.0.0.1');
  });

  it('streams the summary after ready_to_summarize', async () => {
    let text = '';
    for await (const chunk of streamWeatherSummary('Weather in Miami', bedrockOptions())) text += chunk;
    expect(text).toMatch(/^Here is the forecast for Miami, FL:/);
  });

  it('reports the service refusing unknown credentials', async () => {
    process.env.AWS_ACCESS_KEY_ID = 'AKIAUNKNOWN000000000';
    try {
      await expect(askWeatherAgent('Weather in Miami', bedrockOptions())).rejects.toThrow(
        /security token included in the request is invalid/,
      );
    } finally {
      process.env.AWS_ACCESS_KEY_ID = 'AKIAAGENTRTTEST00001';
    }
  });
});
