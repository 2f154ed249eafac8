import { afterEach, describe, expect, it } from 'vitest';
import { AgentError } from './errors.js';
import { getRequestContext, type RequestContext } from './request-context.js';
import { closeAll, invoke, rawRequest, responsesKeptByTimers, start, until } from './testing.test.util.js';

afterEach(closeAll);

const SESSION = 'c0ffee00-1111-4222-8333-444455556666-sess';

describe('POST /invocations contract', () => {
  it('passes the parsed JSON payload and returns the result as JSON', async () => {
    const { url } = await start(async (payload: { prompt?: string }) => ({
      echo: payload.prompt ?? 'default',
    }));
    const res = await invoke(url, { prompt: 'hi' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ echo: 'hi' });
    expect(await (await invoke(url, {})).json()).toEqual({ echo: 'default' });
  });

  it('sends a string result as a JSON string by default and as text when configured', async () => {
    const json = await start(() => 'plain answer');
    const a = await invoke(json.url, {});
    expect(a.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await a.text()).toBe('"plain answer"');
    const text = await start(() => 'plain answer', { stringResponse: 'text' });
    const b = await invoke(text.url, {});
    expect(b.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await b.text()).toBe('plain answer');
  });

  it('sends undefined as null and bytes as octet-stream', async () => {
    const { url } = await start((p: { bytes?: boolean }) =>
      p.bytes ? new Uint8Array([1, 2, 3]) : undefined,
    );
    expect(await (await invoke(url, {})).text()).toBe('null');
    const res = await invoke(url, { bytes: true });
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect([...new Uint8Array(await res.arrayBuffer())]).toEqual([1, 2, 3]);
  });

  it('accepts the AWS SDK default content type (octet-stream), none at all, and curl form posts', async () => {
    const { url } = await start((p: { n: number }) => p.n + 1);
    for (const type of ['application/octet-stream', 'application/x-www-form-urlencoded', 'text/plain']) {
      expect(await (await invoke(url, { n: 1 }, { 'content-type': type })).json()).toBe(2);
    }
    const raw = await rawRequest(url, { chunks: ['{"n":41}'] });
    expect(raw).toMatchObject({ status: 200, body: '42' });
  });

  it('gives the entrypoint a request context, also through getRequestContext()', async () => {
    let seen: { arg: RequestContext; als: RequestContext | undefined } | undefined;
    const { url } = await start(async (_p, ctx) => {
      await new Promise((r) => setTimeout(r, 5));
      seen = { arg: ctx, als: getRequestContext() };
      return 'ok';
    });
    const res = await invoke(
      url,
      {},
      {
        'x-amzn-bedrock-agentcore-runtime-session-id': SESSION,
        'x-amzn-bedrock-agentcore-runtime-request-id': 'req-123',
        'x-amzn-bedrock-agentcore-runtime-user-id': 'user-7',
        'x-amzn-bedrock-agentcore-runtime-custom-tenant': 'acme',
        'x-amz-bedrock-agentcore-identity-wat': 'wat-token',
        'x-amzn-internal-thing': 'hidden',
        oauth2callbackurl: 'https://cb.example/cb',
        authorization: 'Bearer abc',
        'x-my-header': 'mine',
        baggage: 'tenant=acme,plan=pro',
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('x-cloud-agent-runtime-request-id')).toBe('req-123');
    expect(res.headers.get('x-cloud-agent-runtime-session-id')).toBe(SESSION);
    const ctx = seen!.arg;
    expect(seen!.als).toBe(ctx);
    expect(ctx).toMatchObject({
      sessionId: SESSION,
      requestId: 'req-123',
      userId: 'user-7',
      workloadAccessToken: 'wat-token',
      oauth2CallbackUrl: 'https://cb.example/cb',
      traceId: '0af7651916cd43dd8448eb211c80319c',
      baggage: { tenant: 'acme', plan: 'pro', 'session.id': SESSION },
    });
    expect(ctx.headers).toMatchObject({
      'x-amzn-bedrock-agentcore-runtime-custom-tenant': 'acme',
      'x-amz-bedrock-agentcore-identity-wat': 'wat-token',
      authorization: 'Bearer abc',
      'x-my-header': 'mine',
      baggage: 'tenant=acme,plan=pro',
    });
    for (const hidden of ['x-amzn-internal-thing', 'content-type', 'host', 'connection', 'content-length']) {
      expect(ctx.headers).not.toHaveProperty(hidden);
    }
    expect(ctx.signal.aborted).toBe(false);
    expect(getRequestContext()).toBeUndefined();
  });

  it('generates a request id when none (or a hostile one) is sent, and limits headers to an allow-list', async () => {
    const ids: RequestContext[] = [];
    const { url } = await start((_p, ctx) => void ids.push(ctx), { headerAllowList: ['X-Keep'] });
    await invoke(
      url,
      {},
      { 'x-cloud-agent-runtime-request-id': 'bad id with spaces', 'x-keep': '1', 'x-drop': '2' },
    );
    await invoke(url, {}, { 'x-cloud-agent-runtime-custom-a': 'b' });
    expect(ids[0]!.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(ids[1]!.requestId).not.toBe(ids[0]!.requestId);
    expect(ids[0]!.headers).toEqual({ 'x-keep': '1' });
    expect(ids[1]!.headers).toEqual({ 'x-cloud-agent-runtime-custom-a': 'b' });
  });

  it.each([
    ['ours', 'x-cloud-agent-runtime-session-id'],
    ['AWS', 'x-amzn-bedrock-agentcore-runtime-session-id'],
  ])('reads the session id from the %s header', async (_n, header) => {
    const { url } = await start((_p, ctx) => ctx.sessionId ?? null);
    expect(await (await invoke(url, {}, { [header]: SESSION })).json()).toBe(SESSION);
  });

  it('ignores a malformed session header (no 500), falls back to body sessionId, and can require one', async () => {
    const { url } = await start((_p, ctx) => ({ session: ctx.sessionId ?? null, baggage: ctx.baggage }));
    const bad = await invoke(url, {}, { 'x-cloud-agent-runtime-session-id': 'has spaces, and "quotes"' });
    expect(bad.status).toBe(200);
    expect(await bad.json()).toEqual({ session: null, baggage: {} });
    const body = await invoke(url, { sessionId: 'body-session-1' });
    expect(await body.json()).toEqual({
      session: 'body-session-1',
      baggage: { 'session.id': 'body-session-1' },
    });

    const strict = await start(() => 'ok', { requireSessionId: true });
    const missing = await invoke(strict.url, {});
    expect(missing.status).toBe(400);
    expect(await missing.json()).toEqual({
      error: 'Missing session id: send the x-cloud-agent-runtime-session-id header',
      code: 'missing_session_id',
    });
    expect((await invoke(strict.url, {}, { 'x-cloud-agent-runtime-session-id': SESSION })).status).toBe(200);
  });
});

describe('client disconnect during a non-streaming invocation', () => {
  it('fires context.signal with the reason and returns to Healthy', async () => {
    let reason: unknown;
    const { url, app } = await start(
      (_p, ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener('abort', () => {
            reason = ctx.signal.reason;
            resolve('too late');
          });
        }),
    );
    const controller = new AbortController();
    const pending = invoke(url, {}, {}, { signal: controller.signal }).catch((err: unknown) => err);
    await until(() => app.inFlight === 1);
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    await until(() => reason !== undefined && app.inFlight === 0);
    expect((reason as Error).message).toBe('client disconnected');
    expect((await app.ping()).status).toBe('Healthy');
  });
});

describe('memory', () => {
  it('a timer an entrypoint leaves running does not keep the finished request alive', async () => {
    expect(await responsesKeptByTimers()).toBe(0);
  });
});

describe('errors', () => {
  it('answers bad JSON with 400 and a message saying what is wrong', async () => {
    const { url } = await start(() => 'never');
    const res = await invoke(url, '{"prompt": ');
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; code: string };
    expect(body.code).toBe('invalid_json');
    expect(body.error).toMatch(/^Invalid JSON in request body: /);
  });

  it('answers an empty body, bad UTF-8 and an unsupported content type clearly', async () => {
    const { url } = await start(() => 'never');
    const empty = await invoke(url, '');
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ code: 'empty_body' });
    const latin = await rawRequest(url, {
      headers: { 'content-type': 'application/json' },
      chunks: [Buffer.from([0x22, 0xff, 0xfe, 0x22])],
    });
    expect(latin.status).toBe(400);
    expect(JSON.parse(latin.body)).toEqual({
      error: 'Request body is not valid UTF-8',
      code: 'invalid_encoding',
    });
    const bom = await rawRequest(url, {
      headers: { 'content-type': 'application/json' },
      chunks: [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')])],
    });
    expect(bom).toMatchObject({ status: 200, body: '"never"' }); // a leading UTF-8 BOM is accepted
    const form = await invoke(url, 'a', { 'content-type': 'multipart/form-data; boundary=x' });
    expect(form.status).toBe(415);
    expect(await form.json()).toMatchObject({ error: expect.stringContaining('multipart/form-data') });
  });

  it('turns a thrown error into 500 JSON with its message', async () => {
    const { url } = await start(() => {
      throw new Error('model exploded');
    });
    const res = await invoke(url, {});
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: 'model exploded', code: 'internal_error' });
  });

  it('lets the entrypoint choose a 4xx with AgentError or any error carrying status', async () => {
    const { url } = await start((p: { kind: string }) => {
      if (p.kind === 'typed')
        throw new AgentError(422, 'prompt must be a non-empty string', { code: 'invalid_prompt' });
      if (p.kind === 'status') throw Object.assign(new Error('slow down'), { status: 429 });
      if (p.kind === 'hidden') throw new AgentError(503, 'database password is hunter2');
      return 'ok';
    });
    const typed = await invoke(url, { kind: 'typed' });
    expect(typed.status).toBe(422);
    expect(await typed.json()).toEqual({
      error: 'prompt must be a non-empty string',
      code: 'invalid_prompt',
    });
    const status = await invoke(url, { kind: 'status' });
    expect(status.status).toBe(429);
    expect(await status.json()).toEqual({ error: 'slow down', code: 'too_many_requests' });
    const hidden = await invoke(url, { kind: 'hidden' });
    expect(hidden.status).toBe(503);
    expect(await hidden.json()).toEqual({ error: 'Internal Server Error', code: 'service_unavailable' });
  });

  it('reports a result that cannot be serialised as a 500 naming the problem', async () => {
    const { url } = await start(() => ({ big: 10n }));
    const res = await invoke(url, {});
    expect(res.status).toBe(500);
    expect(((await res.json()) as { error: string }).error).toMatch(/not JSON-serialisable.*BigInt/);
  });

  it('answers unknown paths with 404 and wrong methods with 405 + Allow', async () => {
    const { url } = await start(() => 'ok');
    const nf = await fetch(`${url}/nope`);
    expect(nf.status).toBe(404);
    expect(await nf.json()).toMatchObject({
      code: 'not_found',
      error: expect.stringContaining('/invocations'),
    });
    const get = await fetch(`${url}/invocations`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const post = await fetch(`${url}/ping`, { method: 'POST' });
    expect(post.status).toBe(405);
  });
});

describe('body size limit', () => {
  it('rejects a declared Content-Length above the limit with 413 before reading it', async () => {
    let called = false;
    const { url } = await start(() => (called = true), { maxBodyBytes: 1024 });
    const res = await rawRequest(url, {
      headers: { 'content-type': 'application/json', 'content-length': String(10 * 1024 * 1024) },
      chunks: [],
    });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toEqual({
      error: 'Request body exceeds the limit of 1024 bytes',
      code: 'payload_too_large',
    });
    expect(called).toBe(false);
  });

  it('counts chunked uploads as they arrive and stops at the limit', async () => {
    const { url } = await start(() => 'never', { maxBodyBytes: 64 * 1024 });
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    // 64 MB would be sent if the server kept reading; it answers as soon as 64 KB are passed.
    const chunks = (function* () {
      for (let i = 0; i < 4096; i++) yield chunk;
    })();
    const res = await rawRequest(url, { headers: { 'content-type': 'application/json' }, chunks });
    expect(res.status).toBe(413);
    expect(res.headers.connection).toBe('close');
    // Socket buffers hold a few MB at most; reading all 64 MB would show here.
    expect(res.bytesSentBeforeResponse).toBeLessThan(16 * 1024 * 1024);
  });

  it('accepts a body right at the limit and defaults to 100 MB', async () => {
    const body = JSON.stringify({ text: 'x'.repeat(1000) });
    const exact = await start((p: { text: string }) => p.text.length, {
      maxBodyBytes: Buffer.byteLength(body),
    });
    expect(await (await invoke(exact.url, body)).json()).toBe(1000);
    const big = 'y'.repeat(5 * 1024 * 1024);
    const dflt = await start((p: { text: string }) => p.text.length);
    expect(await (await invoke(dflt.url, { text: big })).json()).toBe(big.length);
  });
});
