// The `.well-known` documents under a runtime's invocations: the OAuth protected-resource metadata
// (RFC 9728) a JWT runtime's 401 challenge points at, and the A2A agent card (GetAgentCard and the
// A2A client's card fetch), relayed from the runtime's container.
import { sendJson } from '@agentrt/kit';
import { notFound } from '../errors.js';
import { header } from '../http/http-util.js';
import { type Router } from '../http/router.js';
import { serverProtocolOf } from './protocols.js';
import { givenSessionId } from './requests.js';
import { type DataRouteDeps } from './session-calls.js';

export function registerWellKnownRoutes(router: Router, { config, requests, calls }: DataRouteDeps): void {
  // So MCP clients' OAuth discovery finds the authorization server. Not authenticated: it is what
  // an unauthenticated client reads first.
  router.add('GET', '/runtimes/:runtime/invocations/.well-known/oauth-protected-resource', async (ctx) => {
    const { runtime, version } = requests.resolve(ctx);
    const jwt = version.config.authorizerConfiguration?.customJWTAuthorizer;
    if (!jwt) throw notFound(`Agent runtime ${runtime.id} has no JWT authorizer: it uses SigV4`);
    const host = header(ctx.req, 'host') ?? `${config.host}:${config.port}`;
    sendJson(ctx.res, 200, {
      resource: `http://${host}/runtimes/${encodeURIComponent(runtime.arn)}/invocations`,
      authorization_servers: [jwt.discoveryUrl.replace(/\/\.well-known\/openid-configuration$/, '')],
      bearer_methods_supported: ['header'],
    });
  });

  // The container's own card, relayed as it is. A caller without a session id reads it in a
  // session of its own, stopped once the card is sent: a card read never lands in another caller's
  // session, nor learns its id.
  router.add('GET', '/runtimes/:runtime/invocations/.well-known/agent-card.json', async (ctx) => {
    const target = await requests.admit(ctx);
    const { runtime, version } = target;
    if (serverProtocolOf(version) !== 'A2A')
      throw notFound(
        `Agent runtime ${runtime.id} serves ${serverProtocolOf(version)}, not A2A: it has no agent card`,
      );
    const given = givenSessionId(ctx.req);
    const sessionId = requests.sessionIdOf(ctx.req, false);
    try {
      await calls.onSession({
        ctx,
        target,
        sessionId,
        body: Buffer.alloc(0),
        proxy: () => ({ method: 'GET', path: '/.well-known/agent-card.json' }),
      });
    } finally {
      if (given === undefined) calls.stopOneShot(runtime.id, sessionId);
    }
  });
}
