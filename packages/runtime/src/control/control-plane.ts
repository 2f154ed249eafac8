// The control plane of BedrockAgentCoreControlClient on the runtime's router: runtimes and their
// versions (runtime-routes.ts), endpoints (endpoint-routes.ts) and tags (tag-routes.ts), every call
// authenticated first.
import { type RuntimeConfig } from '../config.js';
import { type Authenticator } from '../data/auth.js';
import { type Router } from '../http/router.js';
import { type Logger } from '../logger.js';
import { type SessionManager } from '../sessions/session-manager.js';
import { createArtifactPins } from './artifacts.js';
import { authedRoute } from './authed-route.js';
import { registerEndpointRoutes } from './endpoint-routes.js';
import { type LeaderJob } from './leader-lease.js';
import { createRuntimeDeleter } from './runtime-delete.js';
import { registerRuntimeRoutes } from './runtime-routes.js';
import { type RuntimeRecord, type Store } from './store.js';
import { registerTagRoutes } from './tag-routes.js';
import { createVersionSettler } from './version-settle.js';

export interface ControlPlaneDeps {
  config: Readonly<RuntimeConfig>;
  store: Store;
  sessions: SessionManager;
  auth: Authenticator;
  logger: Logger;
  /** Shared records, several replicas: the one holding the Lease finishes what a stopped one left. */
  leader?: { whileLeading(job: LeaderJob): void } | undefined;
}

/** Registers the control-plane operations of `BedrockAgentCoreControlClient` on the router. */
export function registerControlPlane(router: Router, deps: ControlPlaneDeps): void {
  const pins = createArtifactPins(deps.config, deps.store, deps.logger);
  const { settle, resumeUnsettled } = createVersionSettler({ ...deps, pins });
  const { finish: finishDelete, resumeDeleting } = createRuntimeDeleter({ ...deps, pins });
  const resume = {
    start: () => resumeInterrupted(deps.store, pins, [resumeUnsettled, resumeDeleting]),
    stop() {},
  };
  if (deps.leader) deps.leader.whileLeading(resume);
  else resume.start();
  const routeDeps = { ...deps, authed: authedRoute(deps) };
  registerRuntimeRoutes(router, { ...routeDeps, pins, settle, finishDelete });
  registerEndpointRoutes(router, routeDeps);
  registerTagRoutes(router, routeDeps);
}

/**
 * At start (with shared records, on becoming the leader), one pass over the runtimes: each one an
 * earlier process left mid-way (it stopped) is finished by its owner — CREATING or UPDATING
 * settles (version-settle.ts), DELETING is deleted, its sessions and storage first
 * (runtime-delete.ts). The snapshots no version names are pruned first: a settle's pin in flight
 * would put the prune off.
 */
function resumeInterrupted(
  store: Store,
  pins: ReturnType<typeof createArtifactPins>,
  resumers: ((runtime: RuntimeRecord) => void)[],
): void {
  void pins.prune();
  for (const runtime of store.list('runtime', { offset: 0, limit: 100_000 }))
    for (const resume of resumers) resume(runtime);
}
