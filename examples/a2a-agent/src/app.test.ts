import { type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { Role } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { createLogger, createModel, readModelConfig, readWeatherApiConfig } from '@agentrt/example-models';
import { type WeatherApiFixture, startWeatherApiFixture } from '@agentrt/example-models/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type A2aAgentOptions, createA2aApp, messageText, textMessage } from './app.js';

let weather: WeatherApiFixture;
let server: Server;
let base: string;

beforeAll(async () => {
  weather = await startWeatherApiFixture();
  // The card must announce where clients reach the agent: learn the port first, then build the app.
  const probe = createA2aApp(options('http://127.0.0.1:1/'));
  server = probe.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  server.removeAllListeners('request');
  server.on('request', createA2aApp(options(base)));
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await weather?.close();
});

function options(publicUrl: string): A2aAgentOptions {
  return {
    model: createModel(readModelConfig({ AGENTRT_OFFLINE_CHUNK_DELAY_MS: '0' })),
    weatherApi: readWeatherApiConfig({ WEATHER_API_BASE_URL: weather.url }),
    captureContent: false,
    logger: createLogger({ name: 'a2a-agent-test', write: () => undefined }),
    publicUrl,
  };
}

const send = (text: string) => ({
  tenant: '',
  message: textMessage(Role.ROLE_USER, text),
  configuration: undefined,
  metadata: undefined,
});

describe('weather A2A agent (official A2A SDK client)', () => {
  it('serves its card and answers a forecast question, blocking and streaming', async () => {
    const card = (await (await fetch(`${base}.well-known/agent-card.json`)).json()) as {
      supportedInterfaces: { url: string }[];
    };
    expect(card.supportedInterfaces[0]!.url).toBe(base);
    const client = await new ClientFactory().createFromUrl(base);
    const answer = (await client.sendMessage(
      send('What is the weather at 47.6062,-122.3321?'),
    )) as unknown as Parameters<typeof messageText>[0];
    expect(messageText(answer)).toMatch(/Seattle|°F|forecast/i);
    expect(weather.requests.some((r) => r.path === '/points/47.6062,-122.3321')).toBe(true);
    const events = [];
    for await (const event of client.sendMessageStream(send('Forecast for ZIP 10001 please')))
      events.push(event);
    const message = events.find((e) => e.payload?.$case === 'message')?.payload?.value as Parameters<
      typeof messageText
    >[0];
    expect(messageText(message)).toMatch(/New York|°F|forecast/i);
  });

  it('asks for a question when the message is empty, and answers /ping', async () => {
    const client = await new ClientFactory().createFromUrl(base);
    const answer = (await client.sendMessage(send('  '))) as unknown as Parameters<typeof messageText>[0];
    expect(messageText(answer)).toMatch(/Send a question about the weather/);
    expect(await (await fetch(`${base}ping`)).json()).toEqual({ status: 'Healthy' });
  });
});
