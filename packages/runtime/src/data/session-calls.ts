// A data-plane call's session: the live one on its pinned version or one started for it (a cold
// start on the call's span), the request proxied to its worker and the session released after, one
// more try on a fresh worker when the first had exited unseen, and the stop of a session minted for
// a single request. Also what every data-plane route module gets (`DataRouteDeps`).
import { type RuntimeConfig } from '../config.js';
import { getVersionOr404 } from '../control/records.js';
import { type Store, type VersionRecord } from '../control/store.js';
import { type RouteContext } from '../http/router.js';
import { type Logger } from '../logger.js';
import { type SessionManager } from '../sessions/session-manager.js';
import { type Requests, type RuntimeVersion, assertRunnable } from './requests.js';
import { type ProxyTarget, WorkerGoneError, createWorkerProxy } from './worker-proxy.js';

export interface SessionCallDeps {
  config: Readonly<RuntimeConfig>;
  store: Store;
  sessions: SessionManager;
  logger: Logger;
}

/** One proxied call: what it runs on, in which session, with which body, to which worker path. */
export interface SessionCall {
  ctx: RouteContext;
  target: RuntimeVersion;
  sessionId: string;
  body: Buffer;
  /** The worker's path and method, for the version the session is pinned to. */
  proxy: (pinned: VersionRecord) => ProxyTarget;
}

export type SessionCalls = ReturnType<typeof createSessionCalls>;

/** What every data-plane route module gets: the runtime's parts, `requests` and `calls`. */
export interface DataRouteDeps extends SessionCallDeps {
  requests: Requests;
  calls: SessionCalls;
}

export function createSessionCalls(deps: SessionCallDeps) {
  const proxy = createWorkerProxy(deps);
  /** One proxied request on a session: acquires it (starting a worker), then releases it. */
  const callSession = async ({ ctx, target, sessionId, body, proxy: to }: SessionCall) => {
    // A live session keeps running on its pinned version while a newer one is still settling.
    if (deps.sessions.get(target.runtime.id, sessionId) === undefined) assertRunnable(target);
    const { session, pinned } = await acquireSession(deps, ctx.operation, target, sessionId);
    try {
      await proxy(ctx, session, pinned, sessionId, body, to(pinned));
    } finally {
      deps.sessions.release(session);
    }
  };
  return {
    acquire: (operation: RouteContext['operation'], target: RuntimeVersion, sessionId: string) =>
      acquireSession(deps, operation, target, sessionId),
    /**
     * Runs one proxied request on a session. A worker that refused the connection and has exited
     * (a container that died before its exit was seen) got nothing of the call: the call is tried
     * once more, on a fresh worker the session manager starts for the same session id.
     */
    async onSession(call: SessionCall): Promise<void> {
      const { ctx, target, sessionId } = call;
      ctx.operation.setSession(sessionId);
      try {
        await callSession(call);
      } catch (error) {
        if (!(error instanceof WorkerGoneError) || ctx.res.destroyed) throw error;
        deps.logger.info('session worker gone; a fresh one takes the call', {
          runtimeId: target.runtime.id,
          sessionId,
          requestId: ctx.requestId,
          error: error.message,
        });
        await callSession(call);
      }
    },
    stopOneShot: (runtimeId: string, sessionId: string) => stopOneShot(deps, runtimeId, sessionId),
  };
}

/**
 * The session of a call: the live one (on its pinned version), else one started for it (a cold
 * start on the call's span; so is a fresh worker for a session whose worker has exited).
 */
async function acquireSession(
  { sessions, store }: SessionCallDeps,
  operation: RouteContext['operation'],
  { runtime, version }: RuntimeVersion,
  sessionId: string,
) {
  const live = sessions.get(runtime.id, sessionId);
  const session =
    live && !live.worker?.exited
      ? await sessions.acquire({ runtime, version }, sessionId)
      : await operation.coldStart((phase) => sessions.acquire({ runtime, version }, sessionId, phase));
  const pinned =
    session.version === version.version ? version : getVersionOr404(store, runtime.id, session.version);
  return { session, pinned };
}

/** Stops a session minted for one request once it is done, unless a caller has joined it since. */
function stopOneShot({ sessions, logger }: SessionCallDeps, runtimeId: string, sessionId: string): void {
  const session = sessions.get(runtimeId, sessionId);
  if (!session || session.inflight > 0) return;
  sessions.stop(runtimeId, sessionId).catch((error: unknown) =>
    // Already stopping or gone (its worker exited): nothing is left to free.
    logger.debug('one-shot session already stopping', { runtimeId, sessionId, error: String(error) }),
  );
}
