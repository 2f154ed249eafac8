import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { startCollector } from '../testing.test-util.js';

type Started = Awaited<ReturnType<typeof startCollector>>;

/** A raw node:http request (fetch will not send a Host of our choosing). */
function send(
  url: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: u.hostname, port: u.port, path, method: init.method ?? 'GET', headers: init.headers },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

const QUERY = JSON.stringify({ query: 'stats count(*) as n' });

describe('collector access rules', () => {
  let c: Started | undefined;
  afterEach(async () => {
    await c?.cleanup();
    c = undefined;
  });

  it('answers only its own names in Host (DNS rebinding) and refuses cross-site writes', async () => {
    c = await startCollector({ allowedHosts: ['collector'] });
    const port = c.port;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `collector:${port}`])
      expect((await send(c.url, '/healthz', { headers: { host } })).status).toBe(200);
    const rebound = await send(c.url, '/api/traces', { headers: { host: `attacker.example:${port}` } });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body)).toMatchObject({ error: 'host_not_allowed' });
    expect((await send(c.url, '/', { headers: { host: 'attacker.example' } })).status).toBe(403);

    // A cross-site form/text POST (no preflight in a browser) never reaches the query engine.
    const textPost = await send(c.url, '/api/query', {
      method: 'POST',
      headers: {
        host: `localhost:${port}`,
        'content-type': 'text/plain',
        origin: 'https://attacker.example',
      },
      body: QUERY,
    });
    expect(textPost.status).toBe(403);
    expect(JSON.parse(textPost.body)).toMatchObject({ error: 'cross_site' });
    const sameSiteText = await send(c.url, '/api/query', {
      method: 'POST',
      headers: { host: `localhost:${port}`, 'content-type': 'text/plain' },
      body: QUERY,
    });
    expect(sameSiteText.status).toBe(415);
    const fetchMeta = await send(c.url, '/api/query', {
      method: 'POST',
      headers: {
        host: `localhost:${port}`,
        'content-type': 'application/json',
        'sec-fetch-site': 'cross-site',
      },
      body: QUERY,
    });
    expect(fetchMeta.status).toBe(403);
    // The UI itself (same origin) and plain clients (no Origin) still query.
    const own = await send(c.url, '/api/query', {
      method: 'POST',
      headers: {
        host: `localhost:${port}`,
        origin: `http://localhost:${port}`,
        'sec-fetch-site': 'same-origin',
        'content-type': 'application/json',
      },
      body: QUERY,
    });
    expect(own.status).toBe(200);
  });

  it('requires the ingest and query tokens when configured, from OTLP exporters, API clients and the UI', async () => {
    c = await startCollector({ ingestToken: 'in-secret', queryToken: 'q-secret' });
    const spanOf = async (headers?: Record<string, string>): Promise<number> => {
      const exporter = new OTLPTraceExporter({ url: `${c!.url}/v1/traces`, ...(headers ? { headers } : {}) });
      const provider = new BasicTracerProvider({
        resource: resourceFromAttributes({ 'service.name': 'token-test' }),
        spanProcessors: [new SimpleSpanProcessor(exporter)],
      });
      const codes: number[] = [];
      const done = new Promise<void>((resolve) => {
        const orig = exporter.export.bind(exporter);
        exporter.export = (spans, cb) =>
          orig(spans, (r) => {
            codes.push(r.code);
            cb(r);
            resolve();
          });
      });
      provider.getTracer('t').startSpan('op').end();
      await done;
      await provider.shutdown();
      return codes[0]!;
    };
    expect(await spanOf()).toBe(1); // ExportResultCode.FAILED: 401
    expect(await spanOf({ authorization: 'Bearer wrong' })).toBe(1);
    expect(await spanOf({ authorization: 'Bearer in-secret' })).toBe(0);

    const api = (headers: Record<string, string>) =>
      fetch(`${c!.url}/api/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: QUERY,
      });
    expect((await api({})).status).toBe(401);
    expect((await api({ authorization: 'Bearer in-secret' })).status).toBe(401);
    const ok = await api({ authorization: 'Bearer q-secret' });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { rows: { n: number }[] }).rows[0]!.n).toBe(1);

    // The UI: /?token= sets an HttpOnly SameSite=Strict cookie, then the API answers with it.
    const wrong = await fetch(`${c.url}/?token=nope`, { redirect: 'manual' });
    expect(wrong.status).toBe(401);
    const login = await fetch(`${c.url}/?token=q-secret`, { redirect: 'manual' });
    expect(login.status).toBe(303);
    const cookie = login.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect((await api({ cookie: cookie.split(';')[0]! })).status).toBe(200);
    // Health checks and the UI's files need no token.
    expect((await fetch(`${c.url}/healthz`)).status).toBe(200);
  });

  it('reads the allowed hosts, origins and tokens from the environment', () => {
    const { config } = loadConfig({
      AGENTRT_COLLECTOR_ALLOWED_HOSTS: ' collector, .corp.example ,',
      AGENTRT_COLLECTOR_ALLOWED_ORIGINS: 'http://localhost:3000',
      AGENTRT_INGEST_TOKEN: 'a',
      AGENTRT_QUERY_TOKEN: ' ',
    });
    expect(config.allowedHosts).toEqual(['collector', '.corp.example']);
    expect(config.allowedOrigins).toEqual(['http://localhost:3000']);
    expect(config.ingestToken).toBe('a');
    expect(config.queryToken).toBeUndefined();
  });
});
