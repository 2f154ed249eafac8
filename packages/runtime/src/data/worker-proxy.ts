// The runtime's call to a session's worker: the proxy that streams the worker's answer back,
// retrying only a connection that could not be made, and answering 424 with the worker's last words
// when it fails (WorkerGoneError when nothing reached a worker that turned out dead).
import {
  type ClientRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  request,
} from 'node:http';
import { type Socket } from 'node:net';
import { type RuntimeConfig } from '../config.js';
import { type VersionRecord } from '../control/store.js';
import { RuntimeApiError } from '../errors.js';
import { type RouteContext } from '../http/router.js';
import { type Logger } from '../logger.js';
import { type Session } from '../sessions/session-manager.js';
import { type Worker } from '../sessions/worker.js';
import { relayBody } from './relay-body.js';
import { CLOUD_SESSION_HEADER, SESSION_HEADER, forwardHeaders } from './forward-headers.js';

/** Echoed back to the caller from the container's response. */
const ECHO = [
  'mcp-session-id',
  'mcp-protocol-version',
  'traceparent',
  'tracestate',
  'x-amzn-trace-id',
  'baggage',
];
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** How long a failed invocation waits for its worker's exit and last output before answering 424. */
const WORKER_EXIT_WAIT_MS = 1500;
/** The waits before each new try of a connection that could not be made (agent-sandbox's router's). */
const DIAL_RETRIES_MS = [200, 400, 800];

/** Where a proxied request goes in the container and what changes on the way. */
export interface ProxyTarget {
  method: string;
  path: string;
  /** Replaces forwarded headers; `undefined` removes one. */
  headers?: Record<string, string | undefined>;
  /** Sees the container's answer headers before they are copied to the caller. */
  onResponse?: (headers: IncomingHttpHeaders, out: OutgoingHttpHeaders) => void;
}

export interface WorkerProxyOptions {
  config: Readonly<RuntimeConfig>;
  logger: Logger;
}

/**
 * A call none of which reached the session's worker (no connection could be made) and whose worker
 * has exited: a container that died before its exit was seen. A 424 like any failed call, unless a
 * fresh worker for the session takes the call (the data plane tries once).
 */
export class WorkerGoneError extends RuntimeApiError {
  override name = 'WorkerGoneError';
}

/** How a call to a worker ended: `undefined` when answered; `connected` once a connection was made. */
type Settle = (error?: unknown, connected?: boolean) => void;

/** The headers the worker gets: the forwarded ones, changed as the target says. */
function requestHeaders(
  ctx: RouteContext,
  version: VersionRecord,
  sessionId: string,
  bodyLength: number,
  target: ProxyTarget,
): OutgoingHttpHeaders {
  const headers = forwardHeaders(ctx, version, sessionId, ctx.requestId, bodyLength);
  for (const [name, value] of Object.entries(target.headers ?? {}))
    if (value === undefined) delete headers[name];
    else headers[name] = value;
  return headers;
}

/** Where the worker listens: its sandbox's socket, else its address and port. */
function addressOf(worker: Worker): { socketPath: string } | { host: string; port: number } {
  return worker.socketPath
    ? { socketPath: worker.socketPath }
    : { host: worker.host ?? '127.0.0.1', port: worker.port };
}

/**
 * Streams a 2xx answer to the caller chunk by chunk, never buffered (SSE frames reach the caller as
 * the worker writes them), with the session's headers and those the worker's answer may carry.
 */
function relayAnswer(
  ctx: RouteContext,
  res: IncomingMessage,
  sessionId: string,
  target: ProxyTarget,
  done: Settle,
) {
  const headers: OutgoingHttpHeaders = {
    [SESSION_HEADER]: sessionId,
    [CLOUD_SESSION_HEADER]: sessionId,
    'x-amzn-requestid': ctx.requestId,
  };
  for (const name of ['content-type', 'content-length', 'cache-control', ...ECHO])
    if (res.headers[name] !== undefined) headers[name] = res.headers[name];
  target.onResponse?.(res.headers, headers);
  ctx.res.writeHead(res.statusCode ?? 200, headers);
  // A streamed (chunked) answer shows its headers at once; a sized one goes out with its body.
  if (headers['content-length'] === undefined) ctx.res.flushHeaders();
  relayBody(res, ctx.res, () => done());
}

/** Reads up to MAX_ERROR_BODY_BYTES of a non-2xx answer's body (cut there, not refused as kit's readBody would). */
function readErrorBody(res: IncomingMessage, onText: (text: string) => void) {
  let text = '';
  res.setEncoding('utf8');
  res.on('data', (c: string) => {
    if (text.length < MAX_ERROR_BODY_BYTES) text += c;
  });
  res.on('end', () => onText(text.slice(0, MAX_ERROR_BODY_BYTES).trim()));
}

/** The 424 a worker's non-2xx answer becomes: its body, or AgentCore's terse words when asked. */
function answeredError(status: number, text: string, terse: boolean): RuntimeApiError {
  return new RuntimeApiError(
    'RuntimeClientError',
    terse
      ? `Received error (${status}) from runtime. Please check your CloudWatch logs for more information.`
      : `Received error (${status}) from runtime: ${text || '(empty body)'}`,
  );
}

/**
 * The error a call whose connection failed is answered with, once the worker's exit and last words
 * had a moment to come (a container's engine client ends a little after the container):
 * WorkerGoneError when no connection was made and the worker has exited, else a 424.
 */
async function brokenCallError(worker: Worker, error: Error, connected: boolean): Promise<RuntimeApiError> {
  const exited = await worker.exitedWithin(WORKER_EXIT_WAIT_MS);
  const message = `The session's worker failed during the invocation (${error.message}). Last output:\n${worker.lastOutput() || '(none)'}`;
  const Failure = exited && !connected ? WorkerGoneError : RuntimeApiError;
  return new Failure('RuntimeClientError', message, {}, { cause: error });
}

/**
 * The one way a call ends: resolved once answered; before any answer byte went out, rejected with
 * the error the caller hears; after, the caller's stream is cut off (resolved).
 */
function settleOnce(
  ctx: RouteContext,
  worker: Worker,
  resolve: () => void,
  reject: (e: unknown) => void,
): Settle {
  let settled = false;
  return (error, connected = true) => {
    if (settled) return;
    settled = true;
    if (error === undefined) return resolve();
    if (ctx.res.headersSent) {
      ctx.res.destroy();
      return resolve();
    }
    if (error instanceof RuntimeApiError) return reject(error);
    void brokenCallError(worker, error as Error, connected).then(reject);
  };
}

/** Whether the request's connection was made (a kept-alive one was). */
function watchConnect(upstream: ClientRequest): () => boolean {
  let connected = false;
  upstream.on('socket', (socket: Socket) => {
    if (!socket.connecting) connected = true;
    else socket.once('connect', () => (connected = true));
  });
  return () => connected;
}

/**
 * Sends the call, unless the worker's process has already ended (nothing connected: WorkerGoneError
 * once its exit is heard). A dial error (nothing reached the worker: refused, unreachable, timed out
 * connecting) is tried again after 200, 400 and 800 ms — a pod's address may not route yet —
 * unless the worker exited or the caller left; an error once connected (bytes may have been sent)
 * never is. Returns the request under way, if any.
 */
function sendWithDialRetries(
  send: () => ClientRequest,
  body: Buffer,
  call: { worker: Worker; ctx: RouteContext; sessionId: string; logger: Logger },
  done: Settle,
): () => ClientRequest | undefined {
  let upstream: ClientRequest | undefined;
  const attempt = (tries: number) => {
    // A sandbox's bridge may accept for a moment after its worker ended: nothing would reach it.
    if (call.worker.ended?.()) return done(new Error("the worker's process has ended"), false);
    upstream = send();
    const connected = watchConnect(upstream);
    upstream.on('error', (error) => {
      const final = tries >= DIAL_RETRIES_MS.length || call.worker.exited || call.ctx.res.destroyed;
      if (connected() || final) return done(error, connected());
      call.logger.debug('dial error; trying again', {
        sessionId: call.sessionId,
        error: error.message,
        tries,
      });
      setTimeout(() => attempt(tries + 1), DIAL_RETRIES_MS[tries]);
    });
    upstream.end(body);
  };
  attempt(0);
  return () => upstream;
}

/** The proxy of the data plane's calls to session workers. */
export function createWorkerProxy({ config, logger }: WorkerProxyOptions) {
  /** A non-2xx answer: logged, and the call fails with a 424 carrying it. */
  const failAnswered =
    (ctx: RouteContext, session: Session, status: number, done: Settle) => (text: string) => {
      const { runtimeId, sessionId } = session;
      logger.warn('container error', { runtimeId, sessionId, requestId: ctx.requestId, status });
      done(answeredError(status, text, config.terseErrors));
    };

  /**
   * Sends the payload to the session's worker and streams its answer back chunk by chunk. A non-2xx
   * answer, or a worker that dies before answering, rejects with a 424 RuntimeClientError (a
   * WorkerGoneError when nothing reached a worker that has exited).
   */
  return (
    ctx: RouteContext,
    session: Session,
    version: VersionRecord,
    sessionId: string,
    body: Buffer,
    target: ProxyTarget,
  ) =>
    new Promise<void>((resolve, reject) => {
      const worker = session.worker!;
      const done = settleOnce(ctx, worker, resolve, reject);
      const headers = requestHeaders(ctx, version, sessionId, body.length, target);
      const onAnswer = (res: IncomingMessage) => {
        const status = res.statusCode ?? 502;
        res.on('error', done);
        if (status >= 200 && status < 300) relayAnswer(ctx, res, sessionId, target, done);
        else readErrorBody(res, failAnswered(ctx, session, status, done));
      };
      const { method, path } = target;
      const send = () =>
        request({ ...addressOf(worker), method, path, agent: worker.agent, headers }, onAnswer);
      const upstream = sendWithDialRetries(send, body, { worker, ctx, sessionId, logger }, done);
      ctx.res.on('close', () => {
        if (!ctx.res.writableFinished) upstream()?.destroy();
      });
    });
}
