// The runtime's call to a session's worker: the headers it forwards (trace context, the session's
// baggage, the allow-listed and custom headers) and the proxy that streams the worker's answer back,
// retrying only a connection that could not be made, and answering 424 with the worker's last words
// when it fails.
import { type ClientRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders, request } from 'node:http';
import { type Socket } from 'node:net';
import { ROOT_CONTEXT, defaultTextMapSetter, propagation } from '@opentelemetry/api';
import { W3CBaggagePropagator } from '@opentelemetry/core';
import { type RuntimeConfig } from '../config.js';
import { type VersionRecord } from '../control/store.js';
import { RuntimeApiError } from '../errors.js';
import { type RouteContext } from '../http/router.js';
import { type Logger } from '../logger.js';
import { type Session } from '../sessions/session-manager.js';
import { relayBody } from './relay-body.js';
import { type RequestParts } from './websocket.js';

export const SESSION_HEADER = 'x-amzn-bedrock-agentcore-runtime-session-id';
export const CLOUD_SESSION_HEADER = 'x-cloud-agent-runtime-session-id';
const REQUEST_ID_HEADER = 'x-amzn-bedrock-agentcore-runtime-request-id';
const CUSTOM_PREFIX = 'x-amzn-bedrock-agentcore-runtime-custom-';
/** Trace and MCP headers forwarded as they come (both the AWS and our X-Cloud names). */
const PASS_THROUGH = [
  'traceparent',
  'tracestate',
  'x-amzn-trace-id',
  'x-cloud-trace-id',
  'mcp-session-id',
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
  'a2a-version',
  'a2a-extensions',
  'x-a2a-extensions',
  'last-event-id',
  'x-amzn-bedrock-agentcore-runtime-user-id',
];
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

const baggagePropagator = new W3CBaggagePropagator();

/**
 * The W3C `baggage` header the worker gets: the caller's entries, parsed and written back by the
 * OpenTelemetry propagator, with `session.id` set to the runtime's session whatever the caller sent
 * (the session header decides which session this is; a caller's own `session.id` would make the
 * session's telemetry relay refuse every export of the worker).
 */
export function withSessionBaggage(baggage: string | undefined, sessionId: string): string {
  const getter = { get: () => baggage, keys: () => ['baggage'] };
  const extracted = baggagePropagator.extract(ROOT_CONTEXT, {}, getter);
  const caller = propagation.getBaggage(extracted) ?? propagation.createBaggage();
  const ours = propagation.setBaggage(ROOT_CONTEXT, caller.setEntry('session.id', { value: sessionId }));
  const carrier: Record<string, string> = {};
  baggagePropagator.inject(ours, carrier, defaultTextMapSetter);
  return carrier.baggage ?? '';
}

export function first(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function forwardHeaders(
  ctx: RequestParts,
  version: VersionRecord,
  sessionId: string,
  requestId: string,
  bodyLength: number,
): OutgoingHttpHeaders {
  const h = ctx.req.headers;
  const out: OutgoingHttpHeaders = {
    'content-type': first(h, 'content-type') ?? 'application/octet-stream',
    'content-length': bodyLength,
    [SESSION_HEADER]: sessionId,
    [CLOUD_SESSION_HEADER]: sessionId,
    [REQUEST_ID_HEADER]: first(h, REQUEST_ID_HEADER) ?? requestId,
    baggage: withSessionBaggage(first(h, 'baggage'), sessionId),
  };
  const accept = first(h, 'accept');
  if (accept) out.accept = accept;
  for (const name of PASS_THROUGH) {
    const v = first(h, name);
    if (v !== undefined) out[name] = v;
  }
  // The worker's spans are children of the runtime's InvokeAgentRuntime span.
  Object.assign(out, ctx.operation.traceHeaders());
  const allow = (version.config.requestHeaderConfiguration?.requestHeaderAllowlist ?? []).map((n) =>
    n.toLowerCase(),
  );
  const jwt = version.config.authorizerConfiguration?.customJWTAuthorizer !== undefined;
  for (const [name, value] of Object.entries(h)) {
    if (value === undefined) continue;
    const allowed =
      name.startsWith(CUSTOM_PREFIX) || (allow.includes(name) && (name !== 'authorization' || jwt));
    if (allowed) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

export interface WorkerProxyOptions {
  config: Readonly<RuntimeConfig>;
  logger: Logger;
}

/** The proxy of the data plane's calls to session workers. */
export function createWorkerProxy({ config, logger }: WorkerProxyOptions) {
  /**
   * Sends the payload to the session's worker and streams its answer back chunk by chunk. A non-2xx
   * answer, or a worker that dies before answering, rejects with a 424 RuntimeClientError.
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
      let settled = false;
      const done = (error?: unknown) => {
        if (settled) return;
        settled = true;
        if (error === undefined) return resolve();
        if (ctx.res.headersSent) {
          ctx.res.destroy();
          return resolve();
        }
        if (error instanceof RuntimeApiError) return reject(error);
        // The connection broke: the worker may be exiting; its last words (and its exit, so the next
        // invoke starts a fresh one) may come a little after.
        void worker
          .exitedWithin(WORKER_EXIT_WAIT_MS)
          .then(() =>
            reject(
              new RuntimeApiError(
                'RuntimeClientError',
                `The session's worker failed during the invocation (${(error as Error).message}). Last output:\n${worker.lastOutput() || '(none)'}`,
                {},
                { cause: error },
              ),
            ),
          );
      };
      const headers = forwardHeaders(ctx, version, sessionId, ctx.requestId, body.length);
      for (const [name, value] of Object.entries(target.headers ?? {}))
        if (value === undefined) delete headers[name];
        else headers[name] = value;
      const send = () =>
        request(
          {
            ...(worker.socketPath
              ? { socketPath: worker.socketPath }
              : { host: worker.host ?? '127.0.0.1', port: worker.port }),
            method: target.method,
            path: target.path,
            agent: worker.agent,
            headers,
          },
          (res) => {
            const status = res.statusCode ?? 502;
            res.on('error', done);
            if (status < 200 || status >= 300) {
              let text = '';
              res.setEncoding('utf8');
              res.on('data', (c: string) => {
                if (text.length < MAX_ERROR_BODY_BYTES) text += c;
              });
              res.on('end', () => {
                const terse = `Received error (${status}) from runtime. Please check your CloudWatch logs for more information.`;
                const detail = text.slice(0, MAX_ERROR_BODY_BYTES).trim() || '(empty body)';
                logger.warn('container error', {
                  runtimeId: session.runtimeId,
                  sessionId,
                  requestId: ctx.requestId,
                  status,
                });
                done(
                  new RuntimeApiError(
                    'RuntimeClientError',
                    config.terseErrors ? terse : `Received error (${status}) from runtime: ${detail}`,
                  ),
                );
              });
              return;
            }
            const headers: OutgoingHttpHeaders = {
              [SESSION_HEADER]: sessionId,
              [CLOUD_SESSION_HEADER]: sessionId,
              'x-amzn-requestid': ctx.requestId,
            };
            for (const name of ['content-type', 'content-length', 'cache-control', ...ECHO])
              if (res.headers[name] !== undefined) headers[name] = res.headers[name];
            target.onResponse?.(res.headers, headers);
            ctx.res.writeHead(status, headers);
            // A streamed (chunked) answer shows its headers at once; a sized one goes out with its body.
            if (headers['content-length'] === undefined) ctx.res.flushHeaders();
            // Chunk by chunk, never buffered: SSE frames reach the caller as the worker writes them.
            relayBody(res, ctx.res, () => done());
          },
        );
      /**
       * A dial error (nothing reached the worker: refused, unreachable, timed out connecting) is
       * tried again after 200, 400 and 800 ms — a pod's address may not route yet; an error once
       * the connection was made (bytes may have been sent) never is.
       */
      let upstream: ClientRequest;
      const attempt = (tries: number) => {
        upstream = send();
        let dialled = false;
        upstream.on('socket', (socket: Socket) => {
          if (!socket.connecting)
            dialled = true; // a kept-alive connection
          else socket.once('connect', () => (dialled = true));
        });
        upstream.on('error', (error) => {
          if (dialled || tries >= DIAL_RETRIES_MS.length || worker.exited || ctx.res.destroyed)
            return done(error);
          logger.debug('dial error; trying again', { sessionId, error: error.message, tries });
          setTimeout(() => attempt(tries + 1), DIAL_RETRIES_MS[tries]);
        });
        upstream.end(body);
      };
      ctx.res.on('close', () => {
        if (!ctx.res.writableFinished) upstream.destroy();
      });
      attempt(0);
    });
}
