import { AsyncLocalStorage } from 'node:async_hooks';
import { getEventListeners } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { ToolContext } from '@strands-agents/sdk';
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

/** The parts of a Strands tool context the tool reads: the tool use, and the agent's cancel signal. */
function toolContext(cancelSignal: AbortSignal): ToolContext {
  return {
    toolUse: { name: 'http_request', toolUseId: 'tooluse_test', input: {} },
    agent: { cancelSignal },
  } as unknown as ToolContext;
}

describe('http_request tool deadlines', () => {
  /** A server whose /slow-body sends headers and half a body, then nothing; /hang never answers. */
  async function stallingServer() {
    const server = createServer((req, res) => {
      if (req.url === '/slow-body') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
        res.write('{"partial":');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const close = () => {
      server.closeAllConnections();
      server.close();
    };
    return { base, close };
  }

  it('times out a body that stalls after the headers, naming the request and the deadline', async () => {
    const { base, close } = await stallingServer();
    try {
      const limited = createHttpRequestTool({ baseUrl: base, userAgent: 'ua', timeoutMs: 200 });
      await expect(limited.invoke({ url: `${base}/slow-body` })).rejects.toThrow(
        /request to .*\/slow-body failed: timed out after 200 ms/,
      );
    } finally {
      close();
    }
  });

  it('stops the request when the agent is cancelled, and leaves no listener on its signal', async () => {
    const { base, close } = await stallingServer();
    try {
      const cancel = new AbortController();
      const context = toolContext(cancel.signal);
      const limited = createHttpRequestTool({ baseUrl: base, userAgent: 'ua', timeoutMs: 60_000 });
      const pending = limited.invoke({ url: `${base}/hang` }, context);
      setTimeout(() => cancel.abort(new Error('agent cancelled')), 50);
      await expect(pending).rejects.toThrow(/request to .*\/hang failed: agent cancelled/);
      const ok = new AbortController();
      await tool().invoke({ url: `${weather.url}/points/39.7456,-97.0892` }, toolContext(ok.signal));
      expect(getEventListeners(ok.signal, 'abort')).toEqual([]);
    } finally {
      close();
    }
  });

  it('keeps nothing of a finished request alive until its timeout would have fired', async () => {
    // A pending timer keeps the async context it was made in: a deadline timer left running after
    // the request (AbortSignal.timeout does that) holds everything the caller's context reaches,
    // e.g. a server's request context, for the whole timeout.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const requestScope = new AsyncLocalStorage<object>();
    const kept: WeakRef<object>[] = [];
    const longDeadline = createHttpRequestTool({ baseUrl: weather.url, userAgent: 'ua', timeoutMs: 60_000 });
    for (let i = 0; i < 5; i++) {
      const request = { body: 'x'.repeat(1000) };
      kept.push(new WeakRef(request));
      await requestScope.run(request, () =>
        longDeadline.invoke(
          { url: `${weather.url}/points/39.7456,-97.0892` },
          toolContext(new AbortController().signal),
        ),
      );
    }
    const alive = () => kept.filter((r) => r.deref() !== undefined).length;
    for (let i = 0; i < 10 && alive() > 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
      gc();
    }
    // undici's own timers may still hold the context of the latest request; none may hold the others
    expect(alive()).toBeLessThanOrEqual(1);
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
