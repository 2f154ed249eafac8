// Helpers shared by this package's tests: real servers on 127.0.0.1 port 0, real sockets.
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server, ServerResponse } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type AgentApp, createApp } from './app.js';
import type { AgentAppOptions, Entrypoint } from './app-options.js';

export interface Started {
  app: AgentApp;
  server: Server;
  url: string;
  close(): Promise<void>;
}

const open: Started[] = [];

/** Starts `createApp(entrypoint, options)` on a free loopback port. Close with {@link closeAll}. */
export async function start(entrypoint: Entrypoint, options: AgentAppOptions = {}): Promise<Started> {
  const app = createApp(entrypoint, options);
  const server = await app.listen(0, '127.0.0.1');
  const started: Started = {
    app,
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  open.push(started);
  return started;
}

/** Closes every server {@link start} opened (call in afterEach). */
export async function closeAll(): Promise<void> {
  await Promise.all(open.splice(0).map((s) => s.close()));
}

/** POSTs JSON (or a raw string) to /invocations. */
export function invoke(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
  init: RequestInit = {},
): Promise<Response> {
  return fetch(`${url}/invocations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
}

export interface TimedFrame {
  atMs: number;
  text: string;
}

/**
 * Reads an SSE response, recording when each complete frame (`...\n\n`) arrived. `stopAfter` frames
 * ends the read early (cancelling the body, so the server sees a disconnect). Frames are pushed into
 * `frames` as they arrive, so a caller can watch progress.
 */
export async function readFrames(
  res: Response,
  stopAfter = Infinity,
  frames: TimedFrame[] = [],
): Promise<TimedFrame[]> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  while (frames.length < stopAfter) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      frames.push({ atMs: performance.now(), text: buffer.slice(0, end) });
      buffer = buffer.slice(end + 2);
    }
  }
  if (frames.length >= stopAfter) await reader.cancel().catch(() => undefined);
  return frames;
}

/** The JSON of a `data:` frame. */
export function dataOf(frame: TimedFrame): unknown {
  const line = frame.text.split('\n').find((l) => l.startsWith('data: '));
  if (!line) throw new Error(`frame has no data line: ${JSON.stringify(frame.text)}`);
  return JSON.parse(line.slice('data: '.length));
}

/** Polls `check` until it returns true (or throws after `timeoutMs`). */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** Body bytes the client had written when the response arrived. */
  bytesSentBeforeResponse: number;
}

/**
 * Sends a request with node:http so a test controls the body bytes exactly (chunked uploads that
 * keep going, bad encodings). Resolves on the response, even if the upload was cut short.
 */
export function rawRequest(
  url: string,
  options: {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    chunks?: Iterable<Buffer | string>;
  },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${options.path ?? '/invocations'}`, {
      method: options.method ?? 'POST',
      headers: options.headers ?? {},
    });
    let responded = false;
    let sent = 0;
    let sentAtResponse = 0;
    let failure: Error | undefined;
    req.on('response', (res) => {
      responded = true;
      sentAtResponse = sent;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body,
          bytesSentBeforeResponse: sentAtResponse,
        }),
      );
      res.on('error', reject);
    });
    // The server may close the socket before the whole upload was written (413): a write error
    // only matters when no response came back at all.
    req.on('error', (err) => (failure = err));
    req.on('close', () => {
      if (!responded) reject(failure ?? new Error('connection closed without a response'));
    });
    void (async () => {
      for (const chunk of options.chunks ?? []) {
        if (req.destroyed || responded) return;
        sent += chunk.length;
        if (!req.write(chunk)) {
          await new Promise<void>((resolve) => {
            const done = () => {
              req.off('drain', done);
              req.off('close', done);
              resolve();
            };
            req.once('drain', done);
            req.once('close', done);
          });
        }
      }
      if (!req.destroyed && !responded) req.end();
    })();
  });
}

/**
 * How many of three finished invocations' responses are still reachable after garbage collection
 * while a timer each entrypoint started (60 s) is running. A timer keeps the async context it was
 * made in, and with it the request context: that must not reach the Koa context, the request or
 * the response (an agent tool's AbortSignal.timeout(15 s) held every request of a busy agent).
 */
export async function responsesKeptByTimers(): Promise<number> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const timers: NodeJS.Timeout[] = [];
  const { url, server } = await start((payload) => {
    timers.push(setTimeout(() => {}, 60_000));
    return payload;
  });
  const responses: WeakRef<ServerResponse>[] = [];
  server.on('request', (_req, res: ServerResponse) => responses.push(new WeakRef(res)));
  const alive = () => responses.filter((r) => r.deref() !== undefined).length;
  try {
    for (let i = 0; i < 3; i++) {
      const res = await invoke(
        url,
        { i },
        { 'x-cloud-agent-runtime-session-id': 'memory-session-0123456789abcdef' },
      );
      if (res.status !== 200) throw new Error(`invocation answered ${res.status}`);
      await res.text();
    }
    if (responses.length !== 3) throw new Error(`saw ${responses.length} requests, not 3`);
    for (let i = 0; i < 10 && alive() > 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
      gc();
    }
    return alive();
  } finally {
    for (const timer of timers) clearTimeout(timer);
  }
}
