import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createModel, readModelConfig, readWeatherApiConfig } from '@agentrt/example-models';
import { type WeatherApiFixture, startWeatherApiFixture } from '@agentrt/example-models/fixtures';
import { createApp } from '@agentrt/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PROMPT, type SdkEvent, createSdkEntrypoint } from './entrypoint.js';

let weather: WeatherApiFixture;
let server: Server;
let url: string;

beforeAll(async () => {
  weather = await startWeatherApiFixture({ latencyMs: 50 });
  const app = createApp(
    createSdkEntrypoint({
      model: createModel(readModelConfig({ AGENTRT_OFFLINE_CHUNK_DELAY_MS: '10' })),
      weatherApi: readWeatherApiConfig({ WEATHER_API_BASE_URL: weather.url }),
      captureContent: false,
    }),
    { maxBodyBytes: 8192 },
  );
  server = await app.listen(0, '127.0.0.1');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server?.closeAllConnections();
  server?.close();
  await weather?.close();
});

const invoke = (body: string, headers: Record<string, string> = {}) =>
  fetch(`${url}/invocations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });

/** Reads an SSE body, returning each data frame's JSON and when it arrived. */
async function readSse(response: Response): Promise<{ atMs: number; event: SdkEvent }[]> {
  const started = performance.now();
  const frames: { atMs: number; event: SdkEvent }[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body!) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      if (data) frames.push({ atMs: performance.now() - started, event: JSON.parse(data) as SdkEvent });
    }
  }
  return frames;
}

describe('sdk-agent entrypoint on @agentrt/server', () => {
  it('answers the prompt with a fresh agent that calls the weather API', async () => {
    const response = await invoke(JSON.stringify({ prompt: 'Weather at 40.7128,-74.006?' }));
    expect(response.status).toBe(200);
    const body = (await response.json()) as { result: string; metadata: Record<string, unknown> };
    expect(body.result).toMatch(/^Here is the forecast for New York, NY:/);
    expect(body.metadata).toMatchObject({ provider: 'offline', offline: true, stopReason: 'endTurn' });
  });

  it('uses the default text when the prompt is absent', async () => {
    for (const body of ['{}', '{"prompt": ""}', '{"prompt": null}']) {
      const response = await invoke(body);
      expect(response.status).toBe(200);
      const answer = (await response.json()) as { result: string };
      expect(answer.result).toContain('offline weather assistant');
    }
    expect(DEFAULT_PROMPT).toContain('"prompt" key');
  });

  it('rejects a non-string prompt, a non-boolean stream, bad JSON and oversized bodies, naming the field', async () => {
    const prompt = await invoke('{"prompt": ["a"]}');
    expect(prompt.status).toBe(400);
    expect(((await prompt.json()) as { error: string }).error).toBe('prompt must be a string, got array');
    const stream = await invoke('{"prompt": "x", "stream": "yes"}');
    expect(((await stream.json()) as { error: string }).error).toBe('stream must be a boolean, got string');
    const array = await invoke('[1, 2]');
    expect(array.status).toBe(400);
    expect(((await array.json()) as { error: string }).error).toContain('must be a JSON object');
    expect((await invoke('{"prompt": ')).status).toBe(400);
    expect((await invoke(JSON.stringify({ prompt: 'x'.repeat(10_000) }))).status).toBe(413);
  });

  it('streams events incrementally: tool calls, text deltas, then done; /ping is HealthyBusy meanwhile', async () => {
    const response = await invoke(JSON.stringify({ prompt: 'Weather for ZIP 60601', stream: true }), {
      'X-Cloud-Agent-Runtime-Session-Id': 'sdk-stream-session-0123456789abcdef01234',
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const busy = (await (await fetch(`${url}/ping`)).json()) as { status: string };
    expect(busy.status).toBe('HealthyBusy');
    const frames = await readSse(response);
    const events = frames.map((f) => f.event);
    const calls = events.filter((e) => e.type === 'tool_call');
    expect(calls).toEqual([
      {
        type: 'tool_call',
        name: 'http_request',
        input: { method: 'GET', url: `${weather.url}/zipcodes/60601` },
      },
      {
        type: 'tool_call',
        name: 'http_request',
        input: { method: 'GET', url: expect.stringMatching(/\/gridpoints\/LOT\/\d+,\d+\/forecast$/) },
      },
    ]);
    expect(
      events.filter((e) => e.type === 'tool_result').map((e) => e.type === 'tool_result' && e.status),
    ).toEqual(['success', 'success']);
    const done = events.at(-1)!;
    expect(done.type).toBe('done');
    const text = events.map((e) => (e.type === 'text' ? e.data : '')).join('');
    // The stream carries every text delta: the tool-phase preambles and the summary.
    expect(text).toContain('Let me find the forecast office');
    expect(done.type === 'done' && text.endsWith(done.result)).toBe(true);
    expect(frames.at(-1)!.atMs - frames[0]!.atMs).toBeGreaterThan(50);
    const idle = (await (await fetch(`${url}/ping`)).json()) as { status: string };
    expect(idle.status).toBe('Healthy');
  });

  it('a client that goes away mid-stream stops the agent', async () => {
    const controller = new AbortController();
    const response = await fetch(`${url}/invocations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Weather at 47.6062,-122.3321', stream: true }),
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    await reader.read();
    const requestsBefore = weather.requests.length;
    controller.abort();
    // The server notices, cancels the generator and becomes idle again, without finishing the run.
    const deadline = Date.now() + 10_000;
    let status = 'HealthyBusy';
    while (Date.now() < deadline && status !== 'Healthy') {
      status = ((await (await fetch(`${url}/ping`)).json()) as { status: string }).status;
      if (status !== 'Healthy') await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(status).toBe('Healthy');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(weather.requests.length - requestsBefore).toBeLessThan(2);
  });
});
