import { sendJson } from '@agentrt/kit';
import { type RuntimeConfig } from './config.js';
import { registerControlPlane } from './control/control-plane.js';
import { type LeaderElection } from './control/leader-lease.js';
import { registerOnlineEvaluation } from './control/online-evaluation-routes.js';
import { type Store } from './control/store.js';
import { type Authenticator } from './data/auth.js';
import { registerDataPlane } from './data/data-plane.js';
import { registerEvaluate } from './data/evaluate-route.js';
import { type OnlineRules, createOnlineRules } from './evaluate/online-rules.js';
import { type Router } from './http/router.js';
import { registerActiveSessions } from './local/active-sessions.js';
import { type Logger } from './logger.js';
import { type IsolationMode } from './sessions/isolation.js';
import { type SessionManager } from './sessions/session-manager.js';
import { type RuntimeTelemetry } from './telemetry/runtime-telemetry.js';

export interface ServerRoutesDeps {
  config: Readonly<RuntimeConfig>;
  store: Store;
  sessions: SessionManager;
  auth: Authenticator;
  logger: Logger;
  telemetry: Pick<RuntimeTelemetry, 'startWebSocket'>;
  leader: LeaderElection | undefined;
  isolation: IsolationMode;
}

export interface ServerRoutes {
  /** The data plane's WebSocket gateway, for the server's upgrades. */
  webSockets: ReturnType<typeof registerDataPlane>;
  /** The stored online evaluation rules, when a collector to read sessions from is configured. */
  onlineRules: OnlineRules | undefined;
}

/** Registers every operation the runtime's port serves: the AWS control and data planes, and its own. */
export function registerServerRoutes(router: Router, routeDeps: ServerRoutesDeps): ServerRoutes {
  const { config, store, sessions, auth, logger, telemetry, leader } = routeDeps;
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
  registerPing(router, sessions, routeDeps.isolation);
  return { webSockets, onlineRules };
}

/**
 * Health of the runtime host itself (not part of the AWS API): what `agentrt dev`, compose and load
 * balancers probe. Same shape as the container contract's /ping.
 */
function registerPing(router: Router, sessions: SessionManager, isolation: IsolationMode): void {
  const startedAt = Math.floor(Date.now() / 1000);
  router.add('GET', '/ping', async ({ res }) => {
    sendJson(res, 200, {
      status: 'Healthy',
      time_of_last_update: startedAt,
      sessions: sessions.list().length,
      isolation,
    });
  });
}
