// What every control-plane route gets: the caller authenticated first, the store, the sessions.
import { type RuntimeConfig } from '../config.js';
import { type Authenticator } from '../data/auth.js';
import { type RouteContext } from '../http/router.js';
import { type Logger } from '../logger.js';
import { type SessionManager } from '../sessions/session-manager.js';
import { type Store } from './store.js';

/** Wraps a handler: the caller authenticated first, the handler given the caller's region. */
export function authedRoute(deps: { auth: Authenticator; config: Readonly<RuntimeConfig> }) {
  return (handler: (ctx: RouteContext, region: string) => Promise<void> | void) =>
    async (ctx: RouteContext): Promise<void> => {
      const caller = await deps.auth.authenticate(ctx.req);
      await handler(ctx, caller.region ?? deps.config.region);
    };
}

/** When a record changed, as the API writes it. */
export const now = () => new Date().toISOString();

export interface ControlRouteDeps {
  config: Readonly<RuntimeConfig>;
  store: Store;
  sessions: SessionManager;
  logger: Logger;
  /** Runs a handler once the caller authenticated, with the caller's region. */
  authed: ReturnType<typeof authedRoute>;
}
