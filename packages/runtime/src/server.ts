import { type Server } from 'node:http';
import { type RuntimeConfig, type RuntimeServerOptions, resolveRuntimeConfig } from './config.js';
import { type LeaderElection } from './control/leader-lease.js';
import {
  type LeaseTiming,
  type ReplicaJobs,
  createReplicaLeader,
  leaseTimingOf,
  startReplicaJobs,
} from './control/replica-jobs.js';
import { readyTargets, storedVersions } from './control/session-targets.js';
import { type Store } from './control/store.js';
import { openControlStore } from './control/store/open-store.js';
import { createAuthenticator } from './data/auth.js';
import { type OnlineRules } from './evaluate/online-rules.js';
import { createRuntimeHttpServer, listenOn } from './http/http-server.js';
import { createRequestHandler } from './http/request-handler.js';
import { createRouter } from './http/router.js';
import { type Logger, createLogger } from './logger.js';
import { registerServerRoutes } from './server-routes.js';
import { type Isolation, type IsolationMode, detectIsolation } from './sessions/isolation.js';
import { type Session, type SessionManager, createSessionManager } from './sessions/session-manager.js';
import { type RuntimeTelemetry, createRuntimeTelemetry } from './telemetry/runtime-telemetry.js';

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

/**
 * Starts the local hosting runtime: the AgentCore control plane and data plane on one port, state
 * in SQLite under `dataDir`, one isolated worker process per session.
 *
 * The order matters: the sessions learn the runtime's origin only once the server listens, and the
 * jobs that start sessions (warm pools) or act for the cluster (heartbeat, reaper, online rules)
 * start after that; `shutDown` undoes it in its own order.
 */
export async function createRuntimeServer(options: RuntimeServerOptions = {}): Promise<RuntimeServer> {
  const config = resolveRuntimeConfig(options);
  const telemetry = createRuntimeTelemetry(config);
  const logger = createRuntimeLogger(config, telemetry);
  const isolation = detectIsolation({
    setting: config.isolation,
    sandboxIds: { uid: config.sandboxUid, gid: config.sandboxGid },
  });
  for (const off of isolation.off) logger.warn(`isolation: ${off}`);
  const store = await openControlStore(config, logger);
  const leaseTiming = leaseTimingOf(config);
  const leader = createReplicaLeader(config, logger, leaseTiming);
  let origin = '';
  const sessions = createSessionManager({
    config,
    isolation,
    logger,
    origin: () => origin,
    leader,
    targets: () => readyTargets(store),
    storedVersions: (runtimeId) => storedVersions(store, runtimeId),
    owns: (runtimeId) => store.get('runtime', runtimeId) !== undefined,
  });
  const auth = createAuthenticator(config.apiKeys, { requireExp: config.jwtRequireExp });
  const router = createRouter();
  observeSessions(telemetry, sessions, store);
  const routeDeps = { config, store, sessions, auth, logger, telemetry, leader, isolation: isolation.mode };
  const { webSockets, onlineRules } = registerServerRoutes(router, routeDeps);
  const handle = createRequestHandler({ config, router, telemetry, logger });
  const { server, port, url } = await listenOn(createRuntimeHttpServer(config, handle, webSockets), config);
  origin = url;
  const jobs = startJobs(config, logger, leaseTiming, { leader, onlineRules, sessions, store });
  logListening(logger, url, isolation, config);
  const parts: ServerParts = { server, webSockets, ...jobs, onlineRules, leader, sessions, store, telemetry };
  let closed: Promise<void> | undefined;
  return {
    url,
    port,
    isolation: isolation.mode,
    sessions: () => sessions.list(),
    warmCount: (runtimeId) => sessions.warmCount(runtimeId),
    close: () => (closed ??= shutDown(parts)),
  };
}

/** The runtime's JSON-lines logger, exported as OTLP logs too when an endpoint is set. */
function createRuntimeLogger(config: Readonly<RuntimeConfig>, telemetry: RuntimeTelemetry): Logger {
  const logger = createLogger({
    level: config.logLevel,
    sink: config.logSink,
    ...(config.otlpEndpoint ? { onRecord: (r) => telemetry.emitLog(r) } : {}),
  });
  for (const warning of config.warnings) logger.warn(warning);
  return logger;
}

/** The session gauges, each session named by its runtime's ARN, id and name. */
function observeSessions(telemetry: RuntimeTelemetry, sessions: SessionManager, store: Store): void {
  telemetry.observeSessions(
    () => sessions.list(),
    (runtimeId) => {
      const runtime = store.get('runtime', runtimeId);
      return runtime && { runtimeArn: runtime.arn, runtimeId: runtime.id, runtimeName: runtime.name };
    },
  );
}

interface StartupParts {
  leader: LeaderElection | undefined;
  onlineRules: OnlineRules | undefined;
  sessions: SessionManager;
  store: Store;
}

/**
 * What runs once the server listens (the origin known): the replica's heartbeat and reaper, the
 * online evaluation rules, and a first fill of every ready version's warm pool.
 */
function startJobs(
  config: Readonly<RuntimeConfig>,
  logger: Logger,
  leaseTiming: LeaseTiming,
  { leader, onlineRules, sessions, store }: StartupParts,
): ReplicaJobs {
  const jobs = startReplicaJobs(config, leader, logger, leaseTiming);
  // The stored online evaluation rules: run by one replica, the leader, when records are shared.
  if (onlineRules && leader)
    leader.whileLeading({ start: () => onlineRules.start(), stop: () => void onlineRules.stop() });
  else onlineRules?.start();
  for (const target of readyTargets(store)) sessions.refreshWarmPool(target);
  return jobs;
}

function logListening(
  logger: Logger,
  url: string,
  isolation: Isolation,
  config: Readonly<RuntimeConfig>,
): void {
  logger.info('runtime listening', {
    url,
    isolation: isolation.mode,
    isolationReason: isolation.reason,
    network: isolation.network,
    protectionsOff: isolation.off,
    dataDir: config.dataDir,
    pdeathsig: isolation.pdeathsig,
  });
}

interface ServerParts extends ReplicaJobs {
  server: Server;
  webSockets: { close(): void };
  onlineRules: OnlineRules | undefined;
  leader: LeaderElection | undefined;
  sessions: SessionManager;
  store: Store;
  telemetry: RuntimeTelemetry;
}

/**
 * Stops in this order: the server takes no new connection; the WebSockets, the cluster jobs and the
 * Leases end; every worker stops; the connections left are cut and the server closes; the store
 * and the telemetry close last, as what stops before them still reads records and writes logs.
 */
async function shutDown(parts: ServerParts): Promise<void> {
  const { server, sessions } = parts;
  const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
  parts.webSockets.close();
  parts.stopReaping?.();
  await parts.onlineRules?.stop();
  await parts.heartbeat?.close();
  await parts.leader?.close();
  await sessions.close();
  server.closeAllConnections();
  await serverClosed;
  await parts.store.close();
  await parts.telemetry.close();
}
