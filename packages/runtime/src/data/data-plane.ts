import { randomUUID } from 'node:crypto';
import { type IncomingMessage } from 'node:http';
import { type RuntimeConfig } from '../config.js';
import { parseRuntimeArn } from '../control/arn.js';
import { getEndpointOr404, getRuntimeOr404, getVersionOr404 } from '../control/records.js';
import { REQUEST_ATTRIBUTES, capturedRequest, replayOf } from './request-capture.js';
import { type RuntimeRecord, type Store, type VersionRecord } from '../control/store.js';
import { validateSessionId } from '../control/validate.js';
import { RuntimeApiError, notFound, validationError } from '../errors.js';
import { sendJson } from '@agentrt/kit';
import { header, readBody, readJsonObject } from '../http/http-util.js';
import { type RouteContext, type Router } from '../http/router.js';
import { type Logger } from '../logger.js';
import { type SessionManager } from '../sessions/session-manager.js';
import { type RuntimeTelemetry } from '../telemetry/runtime-telemetry.js';
import { type Authenticator } from './auth.js';
import { parseCommandRequest, runCommand } from './commands.js';
import { CLOUD_SESSION_HEADER, SESSION_HEADER, first, forwardHeaders } from './forward-headers.js';
import { type ProxyTarget, WorkerGoneError, createWorkerProxy } from './worker-proxy.js';
import {
  type RequestParts,
  type WebSocketGateway,
  createWebSocketGateway,
  notAnUpgrade,
} from './websocket.js';
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

export { CLOUD_SESSION_HEADER, SESSION_HEADER, withSessionBaggage } from './forward-headers.js';

export interface DataPlaneDeps {
  config: Readonly<RuntimeConfig>;
  store: Store;
  sessions: SessionManager;
  auth: Authenticator;
  logger: Logger;
  /** Starts the span of a WebSocket connection (the runtime's telemetry); untraced without it. */
  startWebSocket?: RuntimeTelemetry['startWebSocket'];
}

/**
 * Registers InvokeAgentRuntime, StopRuntimeSession, GetAgentCard and InvokeAgentRuntimeCommand of
 * `BedrockAgentCoreClient` on the router; returns the WebSocket gateway for the server's upgrades.
 */
export function registerDataPlane(router: Router, deps: DataPlaneDeps): WebSocketGateway {
  const { config, store, sessions, auth, logger } = deps;
  const proxy = createWorkerProxy({ config, logger });

  /** The label is a percent-decoded runtime ARN, or a bare id with `?accountId=`. */
  const resolveRuntime = (ctx: RequestParts): RuntimeRecord => {
    const label = ctx.params.runtime as string;
    const parsed = parseRuntimeArn(label);
    if (parsed) {
      if (parsed.endpointName)
        throw validationError(
          'agentRuntimeArn',
          'must be a runtime ARN, not an endpoint ARN (use qualifier)',
        );
      const runtime = store.get('runtime', parsed.runtimeId);
      if (!runtime || runtime.arn !== label.replace(/^arn:aws(-[^:]+)?:/, 'arn:aws:'))
        throw notFound(`Agent runtime ${label} not found`);
      return runtime;
    }
    if (label.startsWith('arn:'))
      throw validationError('agentRuntimeArn', `${label} is not an agent runtime ARN`);
    const accountId = ctx.query.get('accountId');
    if (accountId !== null && !/^[0-9]{12}$/.test(accountId))
      throw validationError('accountId', 'must be 12 digits');
    if (accountId !== null && accountId !== config.accountId)
      throw notFound(`Agent runtime ${label} not found in account ${accountId}`);
    return getRuntimeOr404(store, label);
  };

  const resolveVersion = (ctx: RequestParts, runtime: RuntimeRecord): VersionRecord => {
    const qualifier = ctx.query.get('qualifier') ?? 'DEFAULT';
    const endpoint = getEndpointOr404(store, runtime, qualifier);
    return getVersionOr404(store, runtime.id, endpoint.liveVersion ?? endpoint.targetVersion);
  };

  const sessionIdOf = (req: IncomingMessage, required: boolean): string => {
    const id = header(req, SESSION_HEADER) ?? header(req, CLOUD_SESSION_HEADER);
    if (id === undefined) {
      if (required)
        throw validationError(
          'runtimeSessionId',
          'is required (header X-Amzn-Bedrock-AgentCore-Runtime-Session-Id)',
        );
      return randomUUID(); // raw HTTP and OAuth callers may omit it: mint one and echo it back
    }
    return validateSessionId(id, config.laxSessionIds);
  };

  const setOperationTarget = (ctx: RequestParts, runtime: RuntimeRecord, version: VersionRecord) =>
    ctx.operation.setTarget({
      runtimeArn: runtime.arn,
      runtimeId: runtime.id,
      runtimeName: runtime.name,
      version: version.version,
      qualifier: ctx.query.get('qualifier') ?? 'DEFAULT',
      protocol: serverProtocolOf(version),
    });

  const authenticate = (ctx: RequestParts, runtime: RuntimeRecord, version: VersionRecord) => {
    const qualifier = ctx.query.get('qualifier') ?? 'DEFAULT';
    const host = header(ctx.req, 'host') ?? `${config.host}:${config.port}`;
    const metadataUrl = `http://${host}/runtimes/${encodeURIComponent(runtime.arn)}/invocations/.well-known/oauth-protected-resource?qualifier=${encodeURIComponent(qualifier)}`;
    return auth.authenticate(
      ctx.req,
      version.config.authorizerConfiguration?.customJWTAuthorizer,
      metadataUrl,
    );
  };

  const assertRunnable = (runtime: RuntimeRecord, version: VersionRecord) => {
    if (version.status === 'CREATING' || runtime.status === 'DELETING')
      throw new RuntimeApiError(
        'RetryableConflictException',
        `Agent runtime ${runtime.id} version ${version.version} is ${runtime.status === 'DELETING' ? 'DELETING' : 'not ready yet'}`,
      );
    if (runtime.status === 'DELETE_FAILED')
      throw new RuntimeApiError(
        'ConflictException',
        `Agent runtime ${runtime.id} is DELETE_FAILED (${runtime.failureReason ?? 'unknown reason'}); call DeleteAgentRuntime again`,
      );
    if (version.status !== 'READY')
      throw new RuntimeApiError(
        'RuntimeClientError',
        `Agent runtime ${runtime.id} version ${version.version} is ${version.status}: ${version.failureReason ?? 'unknown reason'}`,
      );
  };

  const mcpSessions = createMcpSessionRouter();

  /** The request on the invocation's span (when captured), and the link of a replay to its original. */
  const recordRequest = (ctx: RouteContext, body: Buffer) => {
    const original = replayOf(ctx.req);
    if (original) {
      ctx.operation.linkTo(original.traceId, original.spanId, { 'agentrt.link.type': 'replay_of' });
      ctx.operation.setAttributes({
        [REQUEST_ATTRIBUTES.replayOfTrace]: original.traceId,
        [REQUEST_ATTRIBUTES.replayOfSpan]: original.spanId,
      });
    }
    if (config.captureRequests) ctx.operation.setAttributes(capturedRequest(ctx.req, body));
  };

  /**
   * The session of a call: the live one (on its pinned version), else one started for it (a cold
   * start on the call's span; so is a fresh worker for a session whose worker has exited).
   */
  const acquireSession = async (
    operation: RouteContext['operation'],
    runtime: RuntimeRecord,
    version: VersionRecord,
    sessionId: string,
  ) => {
    const live = sessions.get(runtime.id, sessionId);
    const session =
      live && !live.worker?.exited
        ? await sessions.acquire({ runtime, version }, sessionId)
        : await operation.coldStart((phase) => sessions.acquire({ runtime, version }, sessionId, phase));
    const pinned =
      session.version === version.version ? version : getVersionOr404(store, runtime.id, session.version);
    return { session, pinned };
  };

  /** One proxied request on a session: acquires it (starting a worker), then releases it. */
  const callSession = async (
    ctx: RouteContext,
    runtime: RuntimeRecord,
    version: VersionRecord,
    sessionId: string,
    body: Buffer,
    target: (pinned: VersionRecord) => ProxyTarget,
  ) => {
    // A live session keeps running on its pinned version while a newer one is still settling.
    if (sessions.get(runtime.id, sessionId) === undefined) assertRunnable(runtime, version);
    const { session, pinned } = await acquireSession(ctx.operation, runtime, version, sessionId);
    try {
      await proxy(ctx, session, pinned, sessionId, body, target(pinned));
    } finally {
      sessions.release(session);
    }
  };

  /**
   * Runs one proxied request on a session. A worker that refused the connection and has exited (a
   * container that died before its exit was seen) got nothing of the call: the call is tried once
   * more, on a fresh worker the session manager starts for the same session id.
   */
  const onSession = async (...call: Parameters<typeof callSession>) => {
    const [ctx, runtime, , sessionId] = call;
    ctx.operation.setSession(sessionId);
    try {
      await callSession(...call);
    } catch (error) {
      if (!(error instanceof WorkerGoneError) || ctx.res.destroyed) throw error;
      logger.info('session worker gone; a fresh one takes the call', {
        runtimeId: runtime.id,
        sessionId,
        requestId: ctx.requestId,
        error: error.message,
      });
      await callSession(...call);
    }
  };

  const isValidSessionId = (id: string) => {
    try {
      validateSessionId(id, config.laxSessionIds);
      return true;
    } catch {
      return false;
    }
  };

  /**
   * MCP and A2A clients parse JSON-RPC errors, not AWS ones: a runtime error on their invocation
   * becomes the JSON-RPC error their contract lists (e.g. a failed container: 424 → -32010 in a 200
   * for MCP, -32055 in a 424 for A2A), with the same message.
   */
  const sendProtocolError = (ctx: RouteContext, protocol: ServerProtocol, body: Buffer, error: unknown) => {
    if (!(error instanceof RuntimeApiError) || ctx.res.headersSent) throw error;
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
  };

  router.add('POST', '/runtimes/:runtime/invocations', async (ctx) => {
    const runtime = resolveRuntime(ctx);
    const version = resolveVersion(ctx, runtime);
    setOperationTarget(ctx, runtime, version);
    const protocol = serverProtocolOf(version);
    let body: Buffer = Buffer.alloc(0);
    try {
      await authenticate(ctx, runtime, version);
      if (protocol !== 'MCP') {
        const sessionId = sessionIdOf(ctx.req, false);
        body = await readBody(ctx.req, config.maxBodyBytes);
        recordRequest(ctx, body);
        if (protocol === 'A2A' && (header(ctx.req, 'mcp-protocol-version') || isMcpInitialize(body)))
          throw validationError(
            'protocolConfiguration.serverProtocol',
            `agent runtime ${runtime.id} serves A2A, not MCP: point an A2A client at its agent card (…/invocations/.well-known/agent-card.json)`,
          );
        return await onSession(ctx, runtime, version, sessionId, body, (pinned) => ({
          method: 'POST',
          path: CONTAINER_INVOCATION_PATH[serverProtocolOf(pinned)],
        }));
      }
      body = await readBody(ctx.req, config.maxBodyBytes);
      const runtimeSessionId = header(ctx.req, SESSION_HEADER) ?? header(ctx.req, CLOUD_SESSION_HEADER);
      const mcpSessionId = header(ctx.req, MCP_SESSION_HEADER);
      const { sessionId, forwardMcpSessionId } = mcpSessions.route(
        runtime.id,
        {
          ...(runtimeSessionId !== undefined ? { runtimeSessionId } : {}),
          ...(mcpSessionId !== undefined ? { mcpSessionId } : {}),
        },
        isMcpInitialize(body),
        (id) => validateSessionId(id, config.laxSessionIds),
        isValidSessionId,
      );
      return await onSession(ctx, runtime, version, sessionId, body, (pinned) => ({
        method: 'POST',
        path: CONTAINER_INVOCATION_PATH[serverProtocolOf(pinned)],
        headers: { [MCP_SESSION_HEADER]: forwardMcpSessionId },
        onResponse: (from, out) => {
          const minted = first(from, MCP_SESSION_HEADER);
          if (minted !== undefined && minted !== sessionId) mcpSessions.bind(runtime.id, minted, sessionId);
          // The caller always learns an MCP session id, so its next request reaches this session.
          out[MCP_SESSION_HEADER] = minted ?? forwardMcpSessionId ?? sessionId;
        },
      }));
    } catch (error) {
      sendProtocolError(ctx, protocol, body, error);
    }
  });

  // OAuth protected-resource metadata (RFC 9728) that the 401 challenge of a JWT runtime points at,
  // so MCP clients' OAuth discovery finds the authorization server. Not authenticated: it is what
  // an unauthenticated client reads first.
  router.add('GET', '/runtimes/:runtime/invocations/.well-known/oauth-protected-resource', async (ctx) => {
    const runtime = resolveRuntime(ctx);
    const version = resolveVersion(ctx, runtime);
    const jwt = version.config.authorizerConfiguration?.customJWTAuthorizer;
    if (!jwt) throw notFound(`Agent runtime ${runtime.id} has no JWT authorizer: it uses SigV4`);
    const host = header(ctx.req, 'host') ?? `${config.host}:${config.port}`;
    sendJson(ctx.res, 200, {
      resource: `http://${host}/runtimes/${encodeURIComponent(runtime.arn)}/invocations`,
      authorization_servers: [jwt.discoveryUrl.replace(/\/\.well-known\/openid-configuration$/, '')],
      bearer_methods_supported: ['header'],
    });
  });

  /** Stops a session minted for one request once it is done, unless a caller has joined it since. */
  const stopOneShot = (runtimeId: string, sessionId: string) => {
    const session = sessions.get(runtimeId, sessionId);
    if (!session || session.inflight > 0) return;
    sessions.stop(runtimeId, sessionId).catch((error: unknown) =>
      // Already stopping or gone (its worker exited): nothing is left to free.
      logger.debug('one-shot session already stopping', { runtimeId, sessionId, error: String(error) }),
    );
  };

  // GetAgentCard and the A2A client's card fetch: the container's own card, relayed as it is. A
  // caller without a session id reads it in a session of its own, stopped once the card is sent:
  // a card read never lands in another caller's session, nor learns its id.
  router.add('GET', '/runtimes/:runtime/invocations/.well-known/agent-card.json', async (ctx) => {
    const runtime = resolveRuntime(ctx);
    const version = resolveVersion(ctx, runtime);
    setOperationTarget(ctx, runtime, version);
    await authenticate(ctx, runtime, version);
    if (serverProtocolOf(version) !== 'A2A')
      throw notFound(
        `Agent runtime ${runtime.id} serves ${serverProtocolOf(version)}, not A2A: it has no agent card`,
      );
    const given = header(ctx.req, SESSION_HEADER) ?? header(ctx.req, CLOUD_SESSION_HEADER);
    const sessionId = sessionIdOf(ctx.req, false);
    try {
      await onSession(ctx, runtime, version, sessionId, Buffer.alloc(0), () => ({
        method: 'GET',
        path: '/.well-known/agent-card.json',
      }));
    } finally {
      if (given === undefined) stopOneShot(runtime.id, sessionId);
    }
  });

  // MCP clients open a GET stream after `initialize` and DELETE to end a session; both accept 405,
  // and a GET forwarded to a stateless server would hold an idle stream open.
  for (const method of ['GET', 'DELETE'])
    router.add(method, '/runtimes/:runtime/invocations', async (ctx) => {
      const runtime = resolveRuntime(ctx);
      const version = resolveVersion(ctx, runtime);
      // Counted for its runtime like any invocation (its metrics' Name), not as a nameless one.
      setOperationTarget(ctx, runtime, version);
      await authenticate(ctx, runtime, version);
      if (serverProtocolOf(version) !== 'MCP')
        throw new RuntimeApiError(
          'ValidationException',
          `method ${method} is not allowed on invocations of a ${serverProtocolOf(version)} runtime (use POST)`,
        );
      ctx.res.writeHead(405, { allow: 'POST', 'content-length': 0 });
      ctx.res.end();
    });

  router.add('POST', '/runtimes/:runtime/stopruntimesession', async (ctx) => {
    const runtime = resolveRuntime(ctx);
    const version = resolveVersion(ctx, runtime);
    setOperationTarget(ctx, runtime, version);
    await authenticate(ctx, runtime, version);
    const sessionId = sessionIdOf(ctx.req, true);
    ctx.operation.setSession(sessionId);
    await readBody(ctx.req, 1_000_000);
    await sessions.stop(runtime.id, sessionId);
    ctx.res.setHeader(SESSION_HEADER, sessionId);
    sendJson(ctx.res, 200, {});
  });

  // InvokeAgentRuntimeCommand: a shell command in a running session's sandbox, streamed back as
  // an AWS event stream. A session that is not running is a 404: commands join sessions, they do
  // not start them.
  router.add('POST', '/runtimes/:runtime/commands', async (ctx) => {
    const runtime = resolveRuntime(ctx);
    const version = resolveVersion(ctx, runtime);
    setOperationTarget(ctx, runtime, version);
    await authenticate(ctx, runtime, version);
    const sessionId = sessionIdOf(ctx.req, true);
    ctx.operation.setSession(sessionId);
    const request = parseCommandRequest(await readJsonObject(ctx.req, 1_000_000), config.commandMaxTimeoutS);
    if (!sessions.get(runtime.id, sessionId))
      throw notFound(
        `Session ${sessionId} is not running on agent runtime ${runtime.id}: invoke the runtime with this session id first`,
      );
    const session = await sessions.acquire({ runtime, version }, sessionId);
    try {
      ctx.res.writeHead(200, {
        'content-type': 'application/vnd.amazon.eventstream',
        [SESSION_HEADER]: sessionId,
        'x-amzn-requestid': ctx.requestId,
      });
      ctx.res.flushHeaders();
      await runCommand(sessions, session, request, ctx.res);
    } finally {
      sessions.release(session);
    }
  });

  router.add('GET', '/runtimes/:runtime/ws', (ctx) => {
    resolveRuntime(ctx);
    throw notAnUpgrade();
  });

  return createWebSocketGateway({
    config,
    sessions,
    logger,
    ...(deps.startWebSocket ? { startWebSocket: deps.startWebSocket } : {}),
    async admit(parts) {
      const runtime = resolveRuntime(parts);
      const version = resolveVersion(parts, runtime);
      setOperationTarget(parts, runtime, version);
      await authenticate(parts, runtime, version);
      const sessionId = sessionIdOf(parts.req, false);
      parts.operation.setSession(sessionId);
      if (!sessions.get(runtime.id, sessionId)) assertRunnable(runtime, version);
      return { runtimeId: runtime.id, version, sessionId };
    },
    async acquire(parts, sessionId) {
      const runtime = resolveRuntime(parts);
      const version = resolveVersion(parts, runtime);
      const { session, pinned } = await acquireSession(parts.operation, runtime, version, sessionId);
      return { session, version: pinned };
    },
    forwardHeaders(parts, version, sessionId) {
      const headers = forwardHeaders(parts, version, sessionId, parts.requestId, 0);
      delete headers['content-type'];
      delete headers['content-length'];
      return headers;
    },
  });
}
