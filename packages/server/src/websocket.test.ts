import { context, propagation, trace, SpanKind } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { createAgentPropagator } from '@agentrt/propagation';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { type AgentApp, createApp } from './app.js';
import { getActiveSessionId } from './agent-context.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const SESSION = 'ws-session-0123456789abcdef0123456789abc';
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const servers: { close(): void; closeAllConnections(): void }[] = [];

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(createAgentPropagator());
});
afterEach(() => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
  exporter.reset();
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
  propagation.disable();
});

async function start(app: AgentApp): Promise<string> {
  const server = await app.listen(0, '127.0.0.1');
  servers.push(server);
  const address = server.address() as { port: number };
  return `ws://127.0.0.1:${address.port}/ws`;
}

function messages(socket: WebSocket) {
  const queue: string[] = [];
  const waiters: ((m: string) => void)[] = [];
  socket.on('message', (data) => {
    const text = String(data);
    const w = waiters.shift();
    if (w) w(text);
    else queue.push(text);
  });
  return () => new Promise<string>((r) => (queue.length ? r(queue.shift()!) : waiters.push(r)));
}

describe('/ws on the contract server', () => {
  it('gives the handler the socket and the invocation context; one span per connection', async () => {
    let sawDuringConnection: number | undefined;
    const app = createApp(() => ({}), {
      websocket: (socket, ctx) => {
        socket.send(JSON.stringify({ session: ctx.sessionId, active: getActiveSessionId() }));
        socket.on('message', (data, isBinary) => {
          if (String(data) === 'inflight') sawDuringConnection = app.inFlight;
          socket.send(data, { binary: isBinary });
        });
      },
    });
    const url = await start(app);
    const socket = new WebSocket(url, {
      headers: { 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': SESSION, traceparent: TRACEPARENT },
    });
    const next = messages(socket);
    expect(JSON.parse(await next())).toEqual({ session: SESSION, active: SESSION });
    socket.send('inflight');
    expect(await next()).toBe('inflight');
    expect(sawDuringConnection).toBe(1);
    expect((await app.ping()).status).toBe('HealthyBusy');
    expect(exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER)).toHaveLength(0);
    socket.close(1000);
    await new Promise((r) => socket.once('close', r));
    await new Promise((r) => setTimeout(r, 50));
    const spans = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER);
    expect(spans).toHaveLength(1);
    expect(spans[0]!.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(spans[0]!.attributes['session.id']).toBe(SESSION);
    expect(spans[0]!.name).toBe('GET /ws');
    expect(app.inFlight).toBe(0);
  });

  it('answers a plain GET with a 400 naming the missing upgrade, and 404 without a handler', async () => {
    const url = await start(createApp(() => ({}), { websocket: () => undefined }));
    const plain = await fetch(url.replace('ws:', 'http:'));
    expect(plain.status).toBe(400);
    expect(await plain.text()).toMatch(/WebSocket endpoint.*Upgrade: websocket/);
    const none = await start(createApp(() => ({})));
    expect((await fetch(none.replace('ws:', 'http:'))).status).toBe(404);
  });

  it('closes an oversized message with 1009 and a failing handler with 1011', async () => {
    const url = await start(
      createApp(() => ({}), {
        maxWebSocketMessageBytes: 1024,
        websocket: (socket) => {
          socket.on('message', (data) => socket.send(data));
        },
      }),
    );
    const big = new WebSocket(url);
    await new Promise((r) => big.once('open', r));
    big.send(Buffer.alloc(2048));
    expect(await new Promise((r) => big.once('close', r))).toBe(1009);
    const failing = await start(
      createApp(() => ({}), {
        websocket: () => {
          throw new Error('no thanks');
        },
      }),
    );
    const refused = new WebSocket(failing);
    expect(await new Promise((r) => refused.once('close', r))).toBe(1011);
  });
});
