import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import Koa from 'koa';
import { agentContext } from './agent-context.js';
import type { AgentAppOptions, Entrypoint } from './app-options.js';
import { type AppScope, createAppScope } from './app-scope.js';
import { errorMiddleware } from './errors.js';
import type { AsyncTaskInfo, PingHandler, PingResponse, PingStatus } from './health.js';
import { routes } from './routes.js';
import { routeUpgrade } from './websocket.js';

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
  const scope = createAppScope(entrypoint, options);
  return agentApp(koaApp(scope), scope);
}

/** The middleware in order: context extraction, the one error path, the user's, the routes. */
function koaApp(scope: AppScope): Koa {
  const { logger, options } = scope;
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
  koa.use(routes(scope));
  return koa;
}

function agentApp(koa: Koa, { options, health, inFlight }: AppScope): AgentApp {
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
      return inFlight.count;
    },
    whenIdle: () => inFlight.whenIdle(),
    startDraining: () => {
      inFlight.draining = true;
    },
    abortInFlight: (reason = new Error('server shutting down')) => inFlight.abortAll(reason),
  };
}
