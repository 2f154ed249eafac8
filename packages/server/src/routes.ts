// The contract's routes: `POST /invocations`, `GET /ws`, `GET|HEAD /ping`; anything else is a 404.
import type { Middleware } from 'koa';
import { setRoute } from './agent-context.js';
import type { AppScope } from './app-scope.js';
import { AgentError } from './errors.js';
import { invoke } from './invoke.js';
import { openWebSocket } from './websocket-route.js';

/** The last middleware of an app: answers its routes (errors go to the error middleware). */
export function routes(scope: AppScope): Middleware {
  const { options, inFlight, health } = scope;
  return async (ctx) => {
    if (inFlight.draining) ctx.set('Connection', 'close');
    if (ctx.path === '/invocations') {
      setRoute(ctx, '/invocations');
      if (ctx.method !== 'POST') throw methodNotAllowed(ctx.method, 'POST');
      return invoke(ctx, scope);
    }
    if (ctx.path === '/ws') {
      setRoute(ctx, '/ws');
      if (!options.websocket)
        throw new AgentError(404, 'This agent serves no WebSocket: createApp(entrypoint, { websocket })');
      if (ctx.method !== 'GET') throw methodNotAllowed(ctx.method, 'GET');
      return openWebSocket(ctx, scope, options.websocket);
    }
    if (ctx.path === '/ping') {
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw methodNotAllowed(ctx.method, 'GET, HEAD');
      ctx.body = await health.ping();
      return;
    }
    throw new AgentError(404, `No route for ${ctx.method} ${ctx.path}: use POST /invocations or GET /ping`);
  };
}

function methodNotAllowed(method: string, allow: string): AgentError {
  return new AgentError(405, `Method ${method} not allowed: use ${allow}`, { headers: { Allow: allow } });
}
