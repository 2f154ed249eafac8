import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { type Duplex } from 'node:stream';
import { type RuntimeServerOptions, resolveRuntimeConfig } from './config.js';
import { registerControlPlane } from './control/control-plane.js';
import { createLeaderElection } from './control/leader-lease.js';
import { createReplicaHeartbeat, reapWhileLeading } from './control/orphan-reaper.js';
import { StoreUnavailableError } from './control/store/kubernetes-store.js';
import { kubeConfigOf, openControlStore } from './control/store/open-store.js';
import { createAuthenticator } from './data/auth.js';
import { registerDataPlane } from './data/data-plane.js';
import { registerEvaluate } from './data/evaluate-route.js';
import { registerOnlineEvaluation } from './control/online-evaluation-routes.js';
import { createOnlineRules } from './evaluate/online-rules.js';
import { registerActiveSessions } from './local/active-sessions.js';
import { RuntimeApiError } from './errors.js';
import { handleCors } from './http/cors.js';
import { guardRuntimeRequest } from './http/request-guard.js';
import { createRouter } from './http/router.js';
import { sendJson } from '@agentrt/kit';
import { type Logger, createLogger } from './logger.js';
import { type IsolationMode, detectIsolation } from './sessions/isolation.js';
import { type Session, createSessionManager } from './sessions/session-manager.js';
import { operationName } from './telemetry/operations.js';
import { UNTRACED_OPERATION } from './telemetry/operation.js';
import { createRuntimeTelemetry } from './telemetry/runtime-telemetry.js';

export interface RuntimeServer {
  /** `http://host:port`, the `endpoint` to give the AWS SDK clients. */
  url: string;
  port: number;
  /** Which isolation the workers run under. */
  isolation: IsolationMode;
  /** Live sessions (for tests and the CLI). */
  sessions(): Session[];
  /** Ready warm-pool workers, for one runtime or all. */
  warmCount(runtimeId?: string): number;
  /** Stops every worker (SIGTERM, then SIGKILL after the grace period), then the server. */
  close(): Promise<void>;
}

/** The one error handler: any error becomes the AWS JSON error shape the SDK clients parse. */
function sendError(res: ServerResponse, error: unknown, requestId: string, logger: Logger): void {
  let err: RuntimeApiError;
  if (error instanceof RuntimeApiError) err = error;
  else if (error instanceof StoreUnavailableError)
    // The records live in the cluster and its API server did not answer: nothing was written.
    err = new RuntimeApiError(
      'ServiceException',
      `${error.message}; retry`,
      {},
      { headers: { 'retry-after': '5' } },
    );
  else if (error instanceof URIError)
    err = new RuntimeApiError('ValidationException', `path: malformed percent-encoding (${error.message})`, {
      reason: 'CannotParse',
    });
  else {
    logger.error('internal error', {
      requestId,
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
    });
    err = new RuntimeApiError(
      'InternalServerException',
      `Internal error; see the runtime log for request ${requestId}`,
    );
  }
  if (err.status >= 500 && error instanceof RuntimeApiError)
    logger.error(err.message, { requestId, type: err.type });
  if (res.headersSent) {
    res.destroy(err);
    return;
  }
  sendJson(
    res,
    err.status,
    { message: err.message, ...err.extra },
    { ...err.headers, 'x-amzn-errortype': err.type, 'x-amzn-requestid': requestId },
  );
}

/**
 * Starts the local hosting runtime: the AgentCore control plane and data plane on one port, state
 * in SQLite under `dataDir`, one isolated worker process per session.
 */
export async function createRuntimeServer(options: RuntimeServerOptions = {}): Promise<RuntimeServer> {
  const config = resolveRuntimeConfig(options);
  const telemetry = createRuntimeTelemetry(config);
  const logger = createLogger({
    level: config.logLevel,
    sink: config.logSink,
    ...(config.otlpEndpoint ? { onRecord: (r) => telemetry.emitLog(r) } : {}),
  });
  for (const warning of config.warnings) logger.warn(warning);
  const isolation = detectIsolation({
    setting: config.isolation,
    sandboxIds: { uid: config.sandboxUid, gid: config.sandboxGid },
  });
  for (const off of isolation.off) logger.warn(`isolation: ${off}`);
  const store = await openControlStore(config, logger);
  const leaseMs = config.leaseSeconds * 1000;
  const leaseTiming = {
    leaseDurationMs: leaseMs,
    renewDeadlineMs: (leaseMs * 2) / 3,
    retryMs: (leaseMs * 2) / 15,
  };
  // Shared records, several replicas: work only one of them may do runs on the Lease's holder.
  const leader =
    config.controlStore === 'kubernetes'
      ? createLeaderElection({
          kubeConfig: kubeConfigOf(config),
          namespace: config.kubernetesNamespace,
          identity: config.replicaName,
          logger: logger.child({ component: 'leader' }),
          ...leaseTiming,
        })
      : undefined;
  let origin = '';
  // The versions sessions start on now: what a cluster's warm-pool keeper keeps pools of.
  const targets = () =>
    store.list('runtime', { offset: 0, limit: 100_000 }).flatMap((runtime) => {
      const version = store.get('version', `${runtime.id}#${runtime.latestVersion}`);
      return runtime.status === 'READY' && version?.status === 'READY' ? [{ runtime, version }] : [];
    });
  // The versions whose sessions keep their storage: the latest, and any an endpoint serves or moves to.
  const storedVersions = (runtimeId: string) => {
    const runtime = store.get('runtime', runtimeId);
    if (!runtime) return undefined;
    const endpoints = store.list('endpoint', { parent: runtimeId, offset: 0, limit: 100_000 });
    const served = endpoints.flatMap((e) => [e.liveVersion, e.targetVersion]);
    return [runtime.latestVersion, ...served.filter((v): v is number => v !== undefined)];
  };
  const sessions = createSessionManager({
    config,
    isolation,
    logger,
    origin: () => origin,
    leader,
    targets,
    storedVersions,
    owns: (runtimeId) => store.get('runtime', runtimeId) !== undefined,
  });
  const auth = createAuthenticator(config.apiKeys, { requireExp: config.jwtRequireExp });
  const router = createRouter();
  telemetry.observeSessions(
    () => sessions.list(),
    (runtimeId) => {
      const runtime = store.get('runtime', runtimeId);
      return runtime && { runtimeArn: runtime.arn, runtimeId: runtime.id, runtimeName: runtime.name };
    },
  );
  const deps = { config, store, sessions, auth, logger, startWebSocket: telemetry.startWebSocket };
  registerControlPlane(router, { ...deps, leader });
  const webSockets = registerDataPlane(router, deps);
  const evaluation = registerEvaluate(router, deps); // POST /evaluations/evaluate/{evaluatorId}
  registerOnlineEvaluation(router, { ...deps, service: evaluation.service });
  const onlineRules = evaluation.collector
    ? createOnlineRules({
        store,
        service: evaluation.service,
        collector: evaluation.collector,
        intervalMs: config.onlineEvaluationIntervalMs,
        catchUpMs: config.onlineEvaluationCatchUpMs,
        logger: logger.child({ component: 'online-evaluation' }),
      })
    : undefined;
  registerActiveSessions(router, deps); // GET /local/sessions: local only, not an AWS API
  // Health of the runtime host itself (not part of the AWS API): what `agentrt dev`, compose and
  // load balancers probe. Same shape as the container contract's /ping.
  const startedAt = Math.floor(Date.now() / 1000);
  router.add('GET', '/ping', async ({ res }) => {
    sendJson(res, 200, {
      status: 'Healthy',
      time_of_last_update: startedAt,
      sessions: sessions.list().length,
      isolation: isolation.mode,
    });
  });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const requestId = randomUUID();
    res.setHeader('x-amzn-requestid', requestId);
    // A preflight from an allowed origin (the Inspector page) is answered here, untraced.
    if (handleCors(req, res, config.allowedOrigins)) return;
    const rawPath = (req.url ?? '/').split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    let found: ReturnType<typeof router.match> | undefined;
    let matchError: unknown;
    try {
      found = router.match(method, rawPath);
    } catch (error) {
      matchError = error; // a malformed path: answered below, inside the operation's span
    }
    const pattern = found && 'pattern' in found ? found.pattern : undefined;
    const name = operationName(method, pattern);
    const operation =
      name === null ? UNTRACED_OPERATION : telemetry.startOperation(name, req, res, requestId, pattern);
    try {
      const url = new URL(req.url ?? '/', 'http://localhost');
      guardRuntimeRequest(req, config);
      if (found === undefined) throw matchError;
      if (!('handler' in found)) {
        throw found.methodMismatch
          ? new RuntimeApiError(
              'ValidationException',
              `method ${req.method} is not allowed on ${url.pathname}`,
            )
          : new RuntimeApiError('ResourceNotFoundException', `No operation at ${req.method} ${url.pathname}`);
      }
      await found.handler({ req, res, params: found.params, query: url.searchParams, requestId, operation });
    } catch (error) {
      operation.fail(error);
      sendError(res, error, requestId, logger);
    }
  };

  const server: Server = createServer(
    { keepAliveTimeout: 65_000, requestTimeout: 0 },
    (req, res) => void handle(req, res),
  );
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    try {
      guardRuntimeRequest(req, config, { upgrade: true });
    } catch (error) {
      const { status, message } = error as RuntimeApiError;
      socket.end(
        `HTTP/1.1 ${status} Forbidden\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${message}\n`,
      );
      return;
    }
    void webSockets.handleUpgrade(req, socket, head);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  origin = url;
  // Kubernetes sessions: this process says it is alive (its heartbeat Lease), and the leader deletes
  // the pods of processes that stopped saying so (killed mid-start: nobody serves those pods).
  const heartbeat =
    config.sessions === 'kubernetes'
      ? createReplicaHeartbeat({
          kubeConfig: kubeConfigOf(config),
          namespace: config.kubernetesNamespace,
          instance: config.replicaInstance,
          logger: logger.child({ component: 'heartbeat' }),
          ...leaseTiming,
        })
      : undefined;
  const stopReaping =
    config.sessions === 'kubernetes'
      ? reapWhileLeading(leader, {
          kubeConfig: kubeConfigOf(config),
          namespace: config.kubernetesNamespace,
          logger: logger.child({ component: 'orphan-reaper' }),
          intervalMs: leaseTiming.renewDeadlineMs,
          podGraceMs: 2 * leaseMs,
        })
      : undefined;
  // The stored online evaluation rules: run by one replica, the leader, when records are shared.
  if (onlineRules && leader)
    leader.whileLeading({ start: () => onlineRules.start(), stop: () => void onlineRules.stop() });
  else onlineRules?.start();
  for (const target of targets()) sessions.refreshWarmPool(target);

  logger.info('runtime listening', {
    url,
    isolation: isolation.mode,
    isolationReason: isolation.reason,
    network: isolation.network,
    protectionsOff: isolation.off,
    dataDir: config.dataDir,
    pdeathsig: isolation.pdeathsig,
  });

  let closed: Promise<void> | undefined;
  return {
    url,
    port,
    isolation: isolation.mode,
    sessions: () => sessions.list(),
    warmCount: (runtimeId) => sessions.warmCount(runtimeId),
    close: () =>
      (closed ??= (async () => {
        const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
        webSockets.close();
        stopReaping?.();
        await onlineRules?.stop();
        await heartbeat?.close();
        await leader?.close();
        await sessions.close();
        server.closeAllConnections();
        await serverClosed;
        await store.close();
        await telemetry.close();
      })()),
  };
}
