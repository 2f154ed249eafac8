import { StopRuntimeSessionCommand } from '@aws-sdk/client-bedrock-agentcore';
import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { WS_BUFFER_BYTES } from './data/websocket.js';
import {
  type TestRuntime,
  createReady,
  invokeJson,
  sessionId,
  startIdp,
  startRuntime,
  waitFor,
} from './test-support.js';

/** SHA-256 / HMAC-SHA-256 from node:crypto in the shape SignatureV4 takes. */
class Sha256 {
  private readonly hash;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    const key =
      secret === undefined || typeof secret === 'string'
        ? secret
        : ArrayBuffer.isView(secret)
          ? Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength)
          : Buffer.from(secret);
    this.hash = key === undefined ? createHash('sha256') : createHmac('sha256', key);
  }
  update(data: Uint8Array | string): void {
    this.hash.update(data);
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.hash.digest()));
  }
}

interface Frame {
  data: Buffer;
  isBinary: boolean;
}

/** A `ws` client that queues frames, so a test can await them in order. */
function open(url: string, options: ConstructorParameters<typeof WebSocket>[2] = {}, protocols?: string[]) {
  const socket = new WebSocket(url, protocols, options);
  const frames: Frame[] = [];
  const waiters: ((f: Frame) => void)[] = [];
  socket.on('message', (data: Buffer, isBinary) => {
    const frame = { data, isBinary };
    const waiter = waiters.shift();
    if (waiter) waiter(frame);
    else frames.push(frame);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  return {
    socket,
    closed,
    opened: new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    }),
    next: () =>
      new Promise<Frame>((resolve) => {
        const frame = frames.shift();
        if (frame) resolve(frame);
        else waiters.push(resolve);
      }),
  };
}

/** The handshake's HTTP status when the runtime refuses the upgrade, with its error type and body. */
function refused(url: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; type: string | undefined; body: string }>((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.on('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, type: res.headers['x-amzn-errortype'] as string, body }),
      );
    });
    socket.on('open', () => reject(new Error('the upgrade was accepted')));
    socket.on('error', () => undefined);
  });
}

describe('WebSocket through /runtimes/{arn}/ws (ws client)', () => {
  let rt: TestRuntime;
  let arn: string;
  let wsUrl: string;
  beforeAll(async () => {
    rt = await startRuntime({ wsMaxFrameBytes: 64 * 1024 });
    const runtime = await createReady(rt.control, 'ws_echo', 'ws-echo');
    arn = runtime.agentRuntimeArn!;
    wsUrl = `${rt.server.url.replace('http', 'ws')}/runtimes/${encodeURIComponent(arn)}/ws`;
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
  }, 30_000);

  it('bridges text, binary, ping/pong and close codes with the session header', async () => {
    const sid = sessionId('ws-header');
    const c = open(`${wsUrl}?qualifier=DEFAULT`, {
      headers: {
        'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': sid,
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      },
    });
    await c.opened;
    const hello = JSON.parse((await c.next()).data.toString()) as { headers: Record<string, string> };
    expect(hello.headers['x-amzn-bedrock-agentcore-runtime-session-id']).toBe(sid);
    // Same trace; the parent is now the runtime's own span of this connection.
    expect(hello.headers.traceparent).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
    expect(hello.headers.traceparent).not.toContain('b7ad6b7169203331');
    expect(hello.headers.baggage).toContain(`session.id=${sid}`);
    c.socket.send('hello');
    expect(await c.next()).toEqual({ data: Buffer.from('hello'), isBinary: false });
    c.socket.send(Buffer.from([0, 1, 2, 255]));
    expect(await c.next()).toEqual({ data: Buffer.from([0, 1, 2, 255]), isBinary: true });
    const pong = new Promise<Buffer>((resolve) => c.socket.once('pong', resolve));
    c.socket.ping('are-you-there');
    expect((await pong).toString()).toBe('are-you-there');
    expect(rt.server.sessions().find((s) => s.sessionId === sid)?.inflight).toBe(1);
    c.socket.send('close:4000');
    expect((await c.closed).code).toBe(4000);
    await waitFor(
      () => rt.server.sessions().find((s) => s.sessionId === sid)?.inflight === 0,
      5000,
      'release',
    );
  });

  it('takes the session id as a query parameter, a presigned SigV4 URL and a raw ARN path', async () => {
    const sid = sessionId('ws-query');
    const signer = new SignatureV4({
      service: 'bedrock-agentcore',
      region: 'us-east-1',
      credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' },
      sha256: Sha256,
    });
    const { port } = new URL(rt.server.url);
    const presigned = await signer.presign(
      {
        method: 'GET',
        protocol: 'http:',
        hostname: '127.0.0.1',
        port: Number(port),
        path: `/runtimes/${arn}/ws`,
        query: {
          qualifier: 'DEFAULT',
          'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': sid,
          'X-Amzn-Bedrock-AgentCore-Runtime-Custom-Foo': 'bar',
        },
        headers: { host: `127.0.0.1:${port}` },
      },
      { expiresIn: 300 },
    );
    expect(presigned.query!['X-Amz-Credential']).toContain('/us-east-1/bedrock-agentcore/aws4_request');
    const query = new URLSearchParams(presigned.query as Record<string, string>).toString();
    const c = open(`ws://127.0.0.1:${port}/runtimes/${arn}/ws?${query}`);
    await c.opened;
    const hello = JSON.parse((await c.next()).data.toString()) as { headers: Record<string, string> };
    expect(hello.headers['x-amzn-bedrock-agentcore-runtime-session-id']).toBe(sid);
    expect(hello.headers['x-amzn-bedrock-agentcore-runtime-custom-foo']).toBe('bar');
    expect(Object.keys(hello.headers).filter((h) => h.startsWith('x-amz-'))).toEqual([]);
    c.socket.close(1000);
    expect((await c.closed).code).toBe(1000);
  });

  it('closes an oversized frame with 1009 and leaves other sessions working', async () => {
    const a = open(wsUrl, {
      headers: { 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': sessionId('ws-big') },
    });
    const b = open(wsUrl, { headers: { 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': sessionId('ws-ok') } });
    await Promise.all([a.opened, b.opened]);
    await Promise.all([a.next(), b.next()]);
    a.socket.send(Buffer.alloc(65 * 1024));
    expect((await a.closed).code).toBe(1009);
    b.socket.send('still fine');
    expect((await b.next()).data.toString()).toBe('still fine');
    // A frame from the container over the limit closes the bridge too.
    b.socket.send('big');
    expect((await b.closed).code).toBe(1009);
  });

  it('StopRuntimeSession ends an open WebSocket', async () => {
    const sid = sessionId('ws-stop');
    const c = open(wsUrl, { headers: { 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': sid } });
    await c.opened;
    await c.next();
    await rt.data.send(new StopRuntimeSessionCommand({ agentRuntimeArn: arn, runtimeSessionId: sid }));
    expect([1001, 1011]).toContain((await c.closed).code);
  });

  it('refuses bad handshakes with clear errors', async () => {
    const plain = await fetch(wsUrl.replace('ws', 'http'));
    expect(plain.status).toBe(400);
    expect(((await plain.json()) as { message: string }).message).toMatch(
      /WebSocket endpoint.*Upgrade: websocket/,
    );

    const unknown = await refused(wsUrl.replace(encodeURIComponent(arn), encodeURIComponent(`${arn}x`)));
    expect(unknown).toMatchObject({ status: 404, type: 'ResourceNotFoundException' });

    const mcp = await createReady(rt.control, 'ws_mcp', 'mcp', {
      protocolConfiguration: { serverProtocol: 'MCP' },
    });
    const toMcp = await refused(
      `${rt.server.url.replace('http', 'ws')}/runtimes/${encodeURIComponent(mcp.agentRuntimeArn!)}/ws`,
    );
    expect(toMcp).toMatchObject({ status: 400, type: 'ValidationException' });
    expect(toMcp.body).toContain('serves MCP');

    const noWs = await createReady(rt.control, 'ws_none', 'counter');
    const toNoWs = await refused(
      `${rt.server.url.replace('http', 'ws')}/runtimes/${encodeURIComponent(noWs.agentRuntimeArn!)}/ws`,
    );
    expect(toNoWs).toMatchObject({ status: 424, type: 'RuntimeClientError' });

    const shortId = await refused(wsUrl, { 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': 'short' });
    expect(shortId).toMatchObject({ status: 400, type: 'ValidationException' });
  });

  it('takes a bearer JWT as a header or as the browser subprotocol on a JWT runtime', async () => {
    const idp = await startIdp();
    try {
      const runtime = await createReady(rt.control, 'ws_jwt', 'ws-echo', {
        authorizerConfiguration: {
          customJWTAuthorizer: {
            discoveryUrl: `${idp.base}/.well-known/openid-configuration`,
            allowedAudience: ['ws'],
          },
        },
      });
      const url = `${rt.server.url.replace('http', 'ws')}/runtimes/${encodeURIComponent(runtime.agentRuntimeArn!)}/ws`;
      const none = await refused(url);
      expect(none).toMatchObject({ status: 401, type: 'UnauthorizedException' });
      const token = await idp.sign({ aud: 'ws' });
      const byHeader = open(url, { headers: { authorization: `Bearer ${token}` } });
      await byHeader.opened;
      await byHeader.next();
      byHeader.socket.close();
      const browser = open(url, {}, [
        `base64UrlBearerAuthorization.${Buffer.from(token).toString('base64url')}`,
        'base64UrlBearerAuthorization',
      ]);
      await browser.opened;
      expect(browser.socket.protocol).toBe('base64UrlBearerAuthorization');
      browser.socket.send('via subprotocol');
      await browser.next();
      expect((await browser.next()).data.toString()).toBe('via subprotocol');
      browser.socket.close();
    } finally {
      await idp.close();
    }
  });
});

describe('an AG-UI runtime on the contract server (@agentrt/server /invocations SSE and /ws)', () => {
  let rt: TestRuntime;
  let arn: string;
  beforeAll(async () => {
    rt = await startRuntime();
    const runtime = await createReady(rt.control, 'agui_contract', 'agui', {
      protocolConfiguration: { serverProtocol: 'AGUI' },
    });
    expect(runtime.protocolConfiguration).toEqual({ serverProtocol: 'AGUI' });
    arn = runtime.agentRuntimeArn!;
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
  }, 30_000);

  it('streams AG-UI events from /invocations and bridges /ws into the same session', async () => {
    const sid = sessionId('agui-session');
    const res = await fetch(
      `${rt.server.url}/runtimes/${encodeURIComponent(arn)}/invocations?qualifier=DEFAULT`,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': sid,
        },
        body: JSON.stringify({
          threadId: 't1',
          runId: 'r1',
          messages: [],
          tools: [],
          context: [],
          state: {},
        }),
      },
    );
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const types = [...(await res.text()).matchAll(/"type":"([A-Z_]+)"/g)].map((m) => m[1]);
    expect(types[0]).toBe('RUN_STARTED');
    expect(types.at(-1)).toBe('RUN_FINISHED');
    expect(types.filter((t) => t === 'TEXT_MESSAGE_CONTENT')).toHaveLength(3);

    const c = open(`${rt.server.url.replace('http', 'ws')}/runtimes/${encodeURIComponent(arn)}/ws`, {
      headers: { 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': sid },
    });
    await c.opened;
    expect(JSON.parse((await c.next()).data.toString())).toEqual({ session: sid });
    c.socket.send(Buffer.from([1, 2, 3]));
    expect(await c.next()).toEqual({ data: Buffer.from([1, 2, 3]), isBinary: true });
    expect(rt.server.sessions().filter((s) => s.sessionId === sid)).toHaveLength(1);
    c.socket.close(1000);
    expect((await c.closed).code).toBe(1000);
  });
});

/**
 * The Buffer memory of this process (the runtime under test runs in it) still referenced: measured
 * after a full collection, since the `ws` receiver leaves a copy of each frame that spans socket
 * reads as garbage. `gc` is exposed at run time: vitest starts its workers without --expose-gc.
 * The least of five collections: backing stores are freed after a collection, off the main thread,
 * later on a loaded machine (CI once read 25 MB at 50 ms); what is referenced stays in every one.
 */
async function liveBufferBytes(): Promise<number> {
  setFlagsFromString('--expose-gc');
  let least = Infinity;
  for (let i = 0; i < 5; i++) {
    (runInNewContext('gc') as () => void)();
    await new Promise((r) => setTimeout(r, 100));
    least = Math.min(least, process.memoryUsage().arrayBuffers);
  }
  return least;
}

describe('back-pressure through /runtimes/{arn}/ws (a peer that does not read)', () => {
  const FRAMES = 1000;
  const FRAME_BYTES = 60_000;
  const TOTAL = FRAMES * FRAME_BYTES;
  let rt: TestRuntime;
  let arn: string;
  let wsUrl: string;
  beforeAll(async () => {
    // Floods exceed the hosted 250 frames/s, which would close the connection before it fills.
    rt = await startRuntime({ wsMaxFrameBytes: 64 * 1024, wsMaxFramesPerSecond: 1_000_000 });
    arn = (await createReady(rt.control, 'ws_flood', 'ws-echo')).agentRuntimeArn!;
    wsUrl = `${rt.server.url.replace('http', 'ws')}/runtimes/${encodeURIComponent(arn)}/ws`;
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
  }, 30_000);

  /** The worker's own counters, read by invoking the same session. */
  const counters = async (sid: string, payload: unknown = {}) =>
    (await invokeJson(rt.data, arn, sid, payload)) as {
      flushedBytes: number;
      receivedFrames: number;
      receivedBytes: number;
    };

  /** Samples `read` every 100 ms until it holds still for 500 ms; returns that value. */
  async function settle(read: () => Promise<number> | number): Promise<number> {
    let last = -1;
    let stillSince = Date.now();
    for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 100));
      const value = await read();
      if (value !== last) [last, stillSince] = [value, Date.now()];
      else if (Date.now() - stillSince >= 500) return value;
    }
    throw new Error(`never settled (last ${last})`);
  }

  /** A caller's connection to a session of its own, past the container's greeting. */
  const connect = async (label: string) => {
    const sid = sessionId(label);
    const c = open(wsUrl, { headers: { 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': sid } });
    await c.opened;
    await c.next();
    return { sid, c };
  };

  const released = (sid: string) =>
    waitFor(() => rt.server.sessions().find((s) => s.sessionId === sid)?.inflight === 0, 5000, 'release');

  it('stops reading the container while the caller does not read, then delivers every frame', async () => {
    const { sid, c } = await connect('ws-flood-out');
    const startBytes = await liveBufferBytes();
    c.socket.pause(); // the caller stops reading its socket
    c.socket.send(`flood:${FRAMES}:${FRAME_BYTES}`);
    const handedOver = await settle(async () => (await counters(sid)).flushedBytes);
    // The container could hand over no more than the bridge's budget and the sockets' kernel
    // buffers, and the runtime holds the budget (and the frame it was reading), not the flood.
    expect(handedOver).toBeLessThan(TOTAL / 2);
    expect((await liveBufferBytes()) - startBytes).toBeLessThan(WS_BUFFER_BYTES + 1024 * 1024);
    c.socket.resume();
    const sequences: number[] = [];
    for (let i = 0; i < FRAMES; i++) {
      const { data } = await c.next();
      sequences.push(data.length === FRAME_BYTES ? data.readUInt32BE(0) : -1);
    }
    expect(sequences).toEqual(Array.from({ length: FRAMES }, (_, i) => i));
    expect((await counters(sid)).flushedBytes).toBe(TOTAL);
    c.socket.close(1000);
    expect((await c.closed).code).toBe(1000);
    await released(sid);
  });

  it('stops reading the caller while the container does not read, then delivers every frame', async () => {
    const { sid, c } = await connect('ws-flood-in');
    c.socket.send('hold'); // the container stops reading its socket
    for (let i = 0; i < FRAMES; i++) {
      const frame = Buffer.alloc(FRAME_BYTES, 0x62);
      frame.writeUInt32BE(i, 0);
      c.socket.send(frame);
    }
    const accepted = await settle(() => TOTAL - c.socket.bufferedAmount);
    expect(accepted).toBeLessThan(TOTAL / 2);
    await counters(sid, { resume: true });
    await waitFor(
      async () => (await counters(sid)).receivedBytes === TOTAL + 'hold'.length,
      20_000,
      'delivery',
    );
    c.socket.close(1000);
    expect((await c.closed).code).toBe(1000);
    await released(sid);
  });

  it('ends the connection at once when a caller that stopped reading goes away', async () => {
    const { sid, c } = await connect('ws-flood-gone');
    c.socket.pause();
    c.socket.send(`flood:${FRAMES}:${FRAME_BYTES}`);
    await settle(async () => (await counters(sid)).flushedBytes);
    c.socket.terminate();
    // The paused container side still reads the close handshake, so the session is freed at once.
    await released(sid);
  });
});
