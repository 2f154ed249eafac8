// InvokeAgentRuntime (`POST /runtimes/{runtime}/invocations`) for every server protocol: an HTTP
// or A2A call runs in the session its header names (or a new one), an MCP call in the session its
// MCP session id is bound to; the worker's answer is streamed back. MCP and A2A callers get runtime
// errors as the JSON-RPC errors their clients parse (a replay gets AWS ones). GET and DELETE on
// invocations answer MCP clients' stream and session-end requests with 405.
import { type VersionRecord } from '../control/store.js';
import { RuntimeApiError, validationError } from '../errors.js';
import { header, readBody } from '../http/http-util.js';
import { type RouteContext, type Router } from '../http/router.js';
import { first } from './forward-headers.js';
import {
  CONTAINER_INVOCATION_PATH,
  MCP_SESSION_HEADER,
  type ServerProtocol,
  createMcpSessionRouter,
  isMcpInitialize,
  jsonRpcIdOf,
  serverProtocolOf,
  toJsonRpcError,
} from './protocols.js';
import { isReplay } from './request-capture.js';
import { type RuntimeVersion, givenSessionId } from './requests.js';
import { type DataRouteDeps } from './session-calls.js';

/** One invocation once its caller is authenticated; `read` reads the body (kept for error replies). */
interface Invocation {
  ctx: RouteContext;
  target: RuntimeVersion;
  read: () => Promise<Buffer>;
}

export function registerInvocationRoutes(router: Router, deps: DataRouteDeps): void {
  const { config, requests } = deps;
  const invokeMcp = mcpInvoker(deps);
  router.add('POST', '/runtimes/:runtime/invocations', async (ctx) => {
    const target = requests.resolve(ctx);
    requests.setTarget(ctx, target);
    const protocol = serverProtocolOf(target.version);
    let body: Buffer = Buffer.alloc(0);
    try {
      await requests.authenticate(ctx, target);
      const read = async () => (body = await readBody(ctx.req, config.maxBodyBytes));
      const invocation = { ctx, target, read };
      await (protocol === 'MCP' ? invokeMcp(invocation) : invokeHttp(deps, invocation));
    } catch (error) {
      sendProtocolError(ctx, protocol, body, error);
    }
  });

  // MCP clients open a GET stream after `initialize` and DELETE to end a session; both accept 405,
  // and a GET forwarded to a stateless server would hold an idle stream open.
  for (const method of ['GET', 'DELETE'])
    router.add(method, '/runtimes/:runtime/invocations', async (ctx) => {
      // Counted for its runtime like any invocation (its metrics' Name), not as a nameless one.
      const { version } = await requests.admit(ctx);
      if (serverProtocolOf(version) !== 'MCP')
        throw new RuntimeApiError(
          'ValidationException',
          `method ${method} is not allowed on invocations of a ${serverProtocolOf(version)} runtime (use POST)`,
        );
      ctx.res.writeHead(405, { allow: 'POST', 'content-length': 0 });
      ctx.res.end();
    });
}

/** The worker path of a session's pinned version: its protocol's invocation path. */
const invocationPath = (pinned: VersionRecord) => ({
  method: 'POST',
  path: CONTAINER_INVOCATION_PATH[serverProtocolOf(pinned)],
});

/** An HTTP or A2A invocation, in the session of its runtime session header (or a new one). */
async function invokeHttp({ requests, calls }: DataRouteDeps, { ctx, target, read }: Invocation) {
  const sessionId = requests.sessionIdOf(ctx.req, false);
  const body = await read();
  requests.recordRequest(ctx, body);
  if (
    serverProtocolOf(target.version) === 'A2A' &&
    (header(ctx.req, 'mcp-protocol-version') || isMcpInitialize(body))
  )
    throw validationError(
      'protocolConfiguration.serverProtocol',
      `agent runtime ${target.runtime.id} serves A2A, not MCP: point an A2A client at its agent card (…/invocations/.well-known/agent-card.json)`,
    );
  await calls.onSession({ ctx, target, sessionId, body, proxy: invocationPath });
}

/**
 * MCP invocations: the session of the runtime session header, or the one the caller's MCP session
 * id is bound to; a session id the worker mints is bound to the runtime session, and the caller
 * always learns one. The request is recorded like any invocation's, its MCP headers with it.
 */
function mcpInvoker(deps: DataRouteDeps) {
  const { requests, calls } = deps;
  const mcpSessions = createMcpSessionRouter();
  return async ({ ctx, target, read }: Invocation) => {
    const body = await read();
    requests.recordRequest(ctx, body);
    const runtimeSessionId = givenSessionId(ctx.req);
    const mcpSessionId = header(ctx.req, MCP_SESSION_HEADER);
    const initialize = isMcpInitialize(body);
    const { sessionId, forwardMcpSessionId } = mcpSessions.route(
      target.runtime.id,
      {
        ...(runtimeSessionId !== undefined ? { runtimeSessionId } : {}),
        ...(mcpSessionId !== undefined ? { mcpSessionId } : {}),
      },
      initialize,
      requests.validSessionId,
      requests.isValidSessionId,
    );
    if (isReplay(ctx.req) && !initialize && mcpSessionId !== undefined)
      assertReplayable(deps, target, {
        bound: mcpSessions.boundSession(target.runtime.id, mcpSessionId),
        sessionId,
        mcpSessionId,
      });
    await calls.onSession({
      ctx,
      target,
      sessionId,
      body,
      proxy: (pinned) => ({
        ...invocationPath(pinned),
        headers: { [MCP_SESSION_HEADER]: forwardMcpSessionId },
        onResponse: (from, out) => {
          const minted = first(from, MCP_SESSION_HEADER);
          if (minted !== undefined && minted !== sessionId)
            mcpSessions.bind(target.runtime.id, minted, sessionId);
          // The caller always learns an MCP session id, so its next request reaches this session.
          out[MCP_SESSION_HEADER] = minted ?? forwardMcpSessionId ?? sessionId;
        },
      }),
    });
  };
}

/**
 * A replay of a call to a stateful MCP server (one that minted its MCP session id on `initialize`)
 * is answered only in the runtime session that `initialize` ran in, while it lives: anywhere else
 * the server has no such session and would answer "not initialized" or "session not found" after a
 * cold start, so the replay is refused up front, saying why. A stateless server's call replays in
 * any session (so does one whose binding a restarted runtime no longer knows: the server decides).
 */
function assertReplayable(
  { sessions }: DataRouteDeps,
  { runtime }: RuntimeVersion,
  ids: { bound: string | undefined; sessionId: string; mcpSessionId: string },
) {
  if (ids.bound === undefined) return; // not an id the server minted
  const live = sessions.get(runtime.id, ids.bound) !== undefined;
  if (live && ids.bound === ids.sessionId) return;
  throw new RuntimeApiError(
    'ValidationException',
    `cannot replay this MCP call on its own: its server is stateful (it minted MCP session ${ids.mcpSessionId} on initialize) and answers it only in runtime session ${ids.bound}, ${live ? `not in ${ids.sessionId}, the session this replay names` : 'which has ended'}; replay it while that session lives, or serve MCP stateless`,
  );
}

/**
 * MCP and A2A clients parse JSON-RPC errors, not AWS ones: a runtime error on their invocation
 * becomes the JSON-RPC error their contract lists (e.g. a failed container: 424 → -32010 in a 200
 * for MCP, -32055 in a 424 for A2A), with the same message. A replay's sender (`agentrt replay`,
 * the Replay button) is no protocol client: it gets the AWS error, so a failed replay never reads
 * as a 200.
 */
function sendProtocolError(ctx: RouteContext, protocol: ServerProtocol, body: Buffer, error: unknown) {
  if (!(error instanceof RuntimeApiError) || ctx.res.headersSent || isReplay(ctx.req)) throw error;
  const rendered = toJsonRpcError(protocol, error, jsonRpcIdOf(body));
  if (!rendered) throw error;
  ctx.operation.fail(error); // answered as JSON-RPC, still a failed call in the span and metrics
  ctx.res.writeHead(rendered.status, {
    ...error.headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(rendered.body),
    'x-amzn-errortype': error.type,
  });
  ctx.res.end(rendered.body);
}
