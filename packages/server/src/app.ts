import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  type Context as OtelContext,
  type TextMapPropagator,
  type TracerProvider,
  context,
  propagation,
} from '@opentelemetry/api';
import {
  CLOUD_REQUEST_ID_HEADER,
  CLOUD_SESSION_ID_HEADER,
  SESSION_ID_BAGGAGE_KEY,
  isValidSessionId,
} from '@agentrt/propagation';
import Koa, { type Context as KoaContext, type Middleware } from 'koa';
import { type AgentContextState, agentContext, getAgentContextState, setRoute } from './agent-context.js';
import { readJsonBody } from './body.js';
import { readConfig } from './config.js';
import { AgentError, errorMiddleware } from './errors.js';
import {
  type AsyncTaskInfo,
  type PingHandler,
  type PingResponse,
  type PingStatus,
  HealthTracker,
} from './health.js';
import { type Logger, diagLogger } from './logger.js';
import { InvocationContext, type RequestContext, runWithRequestContext } from './request-context.js';
import { isStreamable, streamSse } from './sse.js';
import {
  type WebSocketHandler,
  acceptWebSocket,
  createWebSocketServer,
  pendingUpgrade,
  routeUpgrade,
} from './websocket.js';

/**
 * The agent's code. It receives the parsed JSON payload and the request context, and returns a
 * JSON-serialisable value (or a promise of one), or an async generator / async iterable to stream
 * each item as one SSE `data:` frame.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- payloads are whatever the caller sent
export type Entrypoint<Payload = any> = (payload: Payload, context: RequestContext) => unknown;

/** Options of {@link createApp}. Explicit options win over environment variables. */
export interface AgentAppOptions {
  /** Where the server logs (5xx details, stream failures). Default: OpenTelemetry `diag`. */
  logger?: Logger;
  /** Largest accepted body. Default `AGENTRT_MAX_BODY_BYTES` or 100 MB. Larger bodies get 413. */
  maxBodyBytes?: number;
  /** Silence after which a stream gets a heartbeat comment (0: never). Default `AGENTRT_SSE_HEARTBEAT_MS` or 15 s. */
  heartbeatMs?: number;
  /** How a string result is sent: as a JSON string (default, like both AWS SDKs) or as `text/plain`. */
  stringResponse?: 'json' | 'text';
  /** Answer 400 when no session id is sent (the AWS TypeScript SDK's behaviour). Default false. */
  requireSessionId?: boolean;
  /** Custom `/ping` status (sync or async); undefined from it means automatic. */
  pingHandler?: PingHandler;
  /**
   * Only these request headers (case-insensitive) reach `context.headers`, plus the custom-prefix
   * headers. Default: every header except transport/browser and AWS-internal ones.
   */
  headerAllowList?: readonly string[];
  /** Propagator for incoming headers. Default: `createAgentPropagator()`. */
  propagator?: TextMapPropagator;
  /** Tracer provider for server spans. Default: the global one. */
  tracerProvider?: TracerProvider;
  /** Koa middleware run before the routes (after context extraction and error handling). */
  middleware?: readonly Middleware[];
  /**
   * Serves `GET /ws` (WebSocket) on the same port: called with each open socket and the same
   * request context, session and span handling as `/invocations`. Without it `/ws` is a 404.
   */
  websocket?: WebSocketHandler;
  /** Largest WebSocket message accepted (bigger closes with 1009). Default 64 KiB, the hosted limit. */
  maxWebSocketMessageBytes?: number;
}

/** An agent app: the Koa app plus health and lifecycle controls. */
export interface AgentApp {
  /** The underlying Koa application (mount it, or add middleware with `options.middleware`). */
  readonly koa: Koa;
  /** A `node:http` request listener. */
  callback(): ReturnType<Koa['callback']>;
  /**
   * A `node:http` `upgrade` listener for `/ws` (what {@link AgentApp.listen} installs); add it to
   * your own server next to {@link AgentApp.callback}.
   */
  upgradeCallback(): (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** Starts listening (default 127.0.0.1 and a free port); resolves with the server once it is listening. */
  listen(port?: number, host?: string): Promise<Server>;
  /** `/ping`'s answer right now. */
  ping(): Promise<PingResponse>;
  /** Registers a background task (HealthyBusy until completed). Returns its id. */
  addAsyncTask(name: string, metadata?: Readonly<Record<string, unknown>>): number;
  /** Completes a background task; false when the id is unknown. */
  completeAsyncTask(id: number): boolean;
  /** Counts a promise as a background task until it settles; returns the same promise. */
  trackTask<T>(work: Promise<T>, name?: string): Promise<T>;
  /** Tracked work right now. */
  getAsyncTaskInfo(): AsyncTaskInfo;
  /** Forces the `/ping` status until {@link clearForcedPingStatus}. */
  forcePingStatus(status: PingStatus): void;
  clearForcedPingStatus(): void;
  /** Replaces the custom ping handler. */
  setPingHandler(handler: PingHandler | undefined): void;
  /** Number of invocations (including open streams) in flight. */
  readonly inFlight: number;
  /** Resolves once no invocation is in flight. */
  whenIdle(): Promise<void>;
  /**
   * Marks the app as shutting down: responses carry `Connection: close` and new invocations get
   * 503. In-flight ones continue.
   */
  startDraining(): void;
  /** Fires every in-flight invocation's abort signal (streams stop, generators are returned). */
  abortInFlight(reason?: unknown): void;
}

/** Builds the Koa app that serves `POST /invocations` with `entrypoint` and `GET /ping`. */
export function createApp(entrypoint: Entrypoint, options: AgentAppOptions = {}): AgentApp {
  if (typeof entrypoint !== 'function')
    throw new TypeError('createApp(entrypoint): entrypoint must be a function');
  const logger = options.logger ?? diagLogger;
  const config = readConfig(process.env, logger.warn);
  const maxBodyBytes = options.maxBodyBytes ?? config.maxBodyBytes;
  const heartbeatMs = options.heartbeatMs ?? config.heartbeatMs;
  const headerAllowList = options.headerAllowList
    ? new Set(options.headerAllowList.map((h) => h.toLowerCase()))
    : undefined;
  const health = new HealthTracker(options.pingHandler ? { pingHandler: options.pingHandler } : {});
  const inFlight = new Set<InvocationContext>();
  let active = 0;
  let idleWaiters: Array<() => void> = [];
  let draining = false;

  /** Counts one invocation (or open WebSocket) as in flight: `/ping` busy, drain waits for it. */
  const enter = (): (() => void) => {
    const done = health.beginInvocation();
    active++;
    return () => {
      done();
      if (--active === 0) {
        const waiters = idleWaiters;
        idleWaiters = [];
        for (const resolve of waiters) resolve();
      }
    };
  };

  const invoke = async (ctx: KoaContext): Promise<void> => {
    if (draining) throw new AgentError(503, 'Server is shutting down', { headers: { 'Retry-After': '1' } });
    const leave = enter();
    let invocation: InvocationContext | undefined;
    let disconnected = false;
    const onClose = () => {
      if (ctx.res.writableFinished) return;
      disconnected = true;
      invocation?.abort(new Error('client disconnected'));
    };
    ctx.res.once('close', onClose);
    try {
      const payload = await readJsonBody(ctx.req, maxBodyBytes);
      const state = getAgentContextState(ctx);
      let sessionId = state?.sessionId;
      let bodyContext: OtelContext | undefined;
      const bodySession = (payload as { sessionId?: unknown } | null)?.sessionId;
      if (sessionId === undefined && isValidSessionId(bodySession)) {
        // The AWS TypeScript SDK also accepts the session id in the body; bridge it the same way.
        sessionId = bodySession;
        const base = state?.otelContext ?? context.active();
        const baggage = propagation.getBaggage(base) ?? propagation.createBaggage();
        bodyContext = propagation.setBaggage(
          base,
          baggage.setEntry(SESSION_ID_BAGGAGE_KEY, { value: sessionId }),
        );
        if (state?.span.isRecording()) state.span.setAttribute(SESSION_ID_BAGGAGE_KEY, sessionId);
      }
      const otelContext = otelContextOf(bodyContext, state);
      if (sessionId === undefined && options.requireSessionId) {
        throw new AgentError(400, `Missing session id: send the ${CLOUD_SESSION_ID_HEADER} header`, {
          code: 'missing_session_id',
        });
      }
      const requestContext = (invocation = new InvocationContext({
        headers: ctx.req.headers,
        otelContext,
        sessionId,
        headerAllowList,
      }));
      inFlight.add(invocation);
      if (disconnected) invocation.abort(new Error('client disconnected'));
      // Without an OpenTelemetry SDK there is no context manager, so activating a context would do
      // nothing but cost the extraction.
      const inContext =
        state?.telemetry === false
          ? <T>(fn: () => T): T => runWithRequestContext(requestContext, fn)
          : <T>(fn: () => T): T =>
              context.with(otelContext(), () => runWithRequestContext(requestContext, fn));
      const result: unknown = await inContext(() => entrypoint(payload, requestContext));
      // Echo the request id when one was sent or the entrypoint used it (no UUID is made otherwise).
      const requestId = requestContext.sentRequestId ?? requestContext.generatedRequestId;
      const responseHeaders: Record<string, string> = {};
      if (requestId !== undefined) responseHeaders[CLOUD_REQUEST_ID_HEADER] = requestId;
      if (sessionId !== undefined) responseHeaders[CLOUD_SESSION_ID_HEADER] = sessionId;

      if (isStreamable(result)) {
        ctx.respond = false;
        if (draining) responseHeaders.connection = 'close';
        await inContext(() =>
          streamSse(ctx.res, result, {
            heartbeatMs,
            signal: requestContext.signal,
            headers: responseHeaders,
            logger,
          }),
        );
        return;
      }
      ctx.set(responseHeaders);
      sendResult(ctx, result, options.stringResponse ?? 'json');
    } finally {
      leave();
      ctx.res.off('close', onClose);
      if (invocation) inFlight.delete(invocation);
    }
  };

  const wss = createWebSocketServer(options.maxWebSocketMessageBytes ?? 64 * 1024);

  /** `GET /ws`: the upgrade, with the same context, session and span as an invocation. */
  const openWebSocket = async (ctx: KoaContext, handler: WebSocketHandler): Promise<void> => {
    const upgrade = pendingUpgrade(ctx.req);
    if (!upgrade)
      throw new AgentError(
        400,
        'GET /ws is a WebSocket endpoint: send the headers Connection: Upgrade and Upgrade: websocket',
        { code: 'not_a_websocket_upgrade' },
      );
    if (draining) throw new AgentError(503, 'Server is shutting down', { headers: { 'Retry-After': '1' } });
    const state = getAgentContextState(ctx);
    const sessionId = state?.sessionId;
    if (sessionId === undefined && options.requireSessionId)
      throw new AgentError(400, `Missing session id: send the ${CLOUD_SESSION_ID_HEADER} header`, {
        code: 'missing_session_id',
      });
    const requestContext = new InvocationContext({
      headers: ctx.req.headers,
      otelContext: otelContextOf(undefined, state),
      sessionId,
      headerAllowList,
    });
    const inContext =
      state?.telemetry === false
        ? <T>(fn: () => T): T => runWithRequestContext(requestContext, fn)
        : <T>(fn: () => T): T =>
            context.with(requestContext.otelContext, () => runWithRequestContext(requestContext, fn));
    ctx.respond = false;
    const leave = enter();
    inFlight.add(requestContext);
    try {
      await acceptWebSocket(wss, ctx.req, ctx.res, upgrade, (socket) => {
        requestContext.signal.addEventListener('abort', () => socket.close(1001, 'server shutting down'));
        void inContext(() =>
          Promise.resolve()
            .then(() => handler(socket, requestContext))
            .catch((error: unknown) => {
              logger.error('websocket handler failed', { error: String(error) });
              socket.close(1011, 'handler failed');
            }),
        );
      });
    } finally {
      leave();
      inFlight.delete(requestContext);
    }
  };

  const routes: Middleware = async (ctx) => {
    if (draining) ctx.set('Connection', 'close');
    if (ctx.path === '/invocations') {
      setRoute(ctx, '/invocations');
      if (ctx.method !== 'POST') throw methodNotAllowed(ctx.method, 'POST');
      return invoke(ctx);
    }
    if (ctx.path === '/ws') {
      setRoute(ctx, '/ws');
      if (!options.websocket)
        throw new AgentError(404, 'This agent serves no WebSocket: createApp(entrypoint, { websocket })');
      if (ctx.method !== 'GET') throw methodNotAllowed(ctx.method, 'GET');
      return openWebSocket(ctx, options.websocket);
    }
    if (ctx.path === '/ping') {
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw methodNotAllowed(ctx.method, 'GET, HEAD');
      ctx.body = await health.ping();
      return;
    }
    throw new AgentError(404, `No route for ${ctx.method} ${ctx.path}: use POST /invocations or GET /ping`);
  };

  const koa = new Koa();
  // Errors never reach Koa's default handler (which writes to the console): the error middleware
  // answers them all, and this listener only covers socket-level failures Koa reports.
  koa.on('error', (err: unknown) => logger.debug('koa error', { error: String(err) }));
  koa.use(
    agentContext({
      logger,
      setUpContext: false,
      ...(options.propagator ? { propagator: options.propagator } : {}),
      ...(options.tracerProvider ? { tracerProvider: options.tracerProvider } : {}),
    }),
  );
  koa.use(errorMiddleware(logger));
  for (const m of options.middleware ?? []) koa.use(m);
  koa.use(routes);

  const upgradeCallback = () => {
    const handle = koa.callback();
    return (req: IncomingMessage, socket: Duplex, head: Buffer) => routeUpgrade(handle, req, socket, head);
  };

  return {
    koa,
    callback: () => koa.callback(),
    upgradeCallback,
    listen: (port = 0, host = '127.0.0.1') =>
      new Promise<Server>((resolve, reject) => {
        const server = koa.listen(port, host);
        if (options.websocket) server.on('upgrade', upgradeCallback());
        server.once('listening', () => resolve(server));
        server.once('error', reject);
      }),
    ping: () => health.ping(),
    addAsyncTask: (name, metadata) => health.addAsyncTask(name, metadata),
    completeAsyncTask: (id) => health.completeAsyncTask(id),
    trackTask: (work, name) => health.trackTask(work, name),
    getAsyncTaskInfo: () => health.getAsyncTaskInfo(),
    forcePingStatus: (status) => health.forcePingStatus(status),
    clearForcedPingStatus: () => health.clearForcedPingStatus(),
    setPingHandler: (handler) => health.setPingHandler(handler),
    get inFlight() {
      return active;
    },
    whenIdle: () =>
      active === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve)),
    startDraining: () => {
      draining = true;
    },
    abortInFlight: (reason = new Error('server shutting down')) => {
      for (const invocation of inFlight) invocation.abort(reason);
    },
  };
}

function methodNotAllowed(method: string, allow: string): AgentError {
  return new AgentError(405, `Method ${method} not allowed: use ${allow}`, { headers: { Allow: allow } });
}

function sendResult(ctx: KoaContext, result: unknown, strings: 'json' | 'text'): void {
  if (typeof result === 'string' && strings === 'text') {
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = result;
    return;
  }
  if (result instanceof Uint8Array) {
    ctx.type = 'application/octet-stream';
    ctx.body = Buffer.from(result.buffer, result.byteOffset, result.byteLength);
    return;
  }
  let json: string;
  try {
    json = JSON.stringify(result) ?? 'null';
  } catch (cause) {
    throw new AgentError(500, `Entrypoint result is not JSON-serialisable: ${(cause as Error).message}`, {
      cause,
      expose: true,
    });
  }
  ctx.set('Content-Type', 'application/json; charset=utf-8'); // set directly: no MIME lookup
  ctx.body = json;
}

/**
 * The OpenTelemetry context of one invocation, read when first asked for. Built here rather than
 * as a closure inside the request handler, which would share that handler's scope and so keep the
 * Koa context, request and response reachable from the request context for as long as anything
 * the entrypoint started (a timer, say) holds on to it.
 */
function otelContextOf(
  bodyContext: OtelContext | undefined,
  state: AgentContextState | undefined,
): () => OtelContext {
  return () => bodyContext ?? state?.otelContext ?? context.active();
}
