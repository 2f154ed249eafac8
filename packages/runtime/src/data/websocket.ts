import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type OutgoingHttpHeaders, STATUS_CODES } from 'node:http';
import { type Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { type RuntimeConfig } from '../config.js';
import { type VersionRecord } from '../control/store.js';
import { RuntimeApiError, notFound, validationError } from '../errors.js';
import { type RouteContext } from '../http/router.js';
import { type Logger } from '../logger.js';
import { type Session, type SessionManager } from '../sessions/session-manager.js';
import { UNTRACED_OPERATION, type WebSocketOperation } from '../telemetry/operation.js';
import { type RuntimeTelemetry } from '../telemetry/runtime-telemetry.js';
import { serverProtocolOf } from './protocols.js';
import { bridge, openUpstream } from './websocket-bridge.js';

export { relayableCloseCode, WS_BUFFER_BYTES } from './websocket-bridge.js';

/** The parts of a request the data plane's helpers read (no response: an upgrade has none yet). */
export type RequestParts = Pick<RouteContext, 'req' | 'params' | 'query' | 'requestId' | 'operation'>;

/** What the WebSocket gateway borrows from the data plane, so both apply the same rules. */
export interface WebSocketGatewayDeps {
  config: Readonly<RuntimeConfig>;
  sessions: SessionManager;
  logger: Logger;
  /** Starts the connection's SERVER span; without it connections are not traced. */
  startWebSocket?: RuntimeTelemetry['startWebSocket'];
  /** Resolves runtime + version, authenticates and checks the version can run. */
  admit(parts: RequestParts): Promise<{ runtimeId: string; version: VersionRecord; sessionId: string }>;
  acquire(parts: RequestParts, sessionId: string): Promise<{ session: Session; version: VersionRecord }>;
  forwardHeaders(parts: RequestParts, version: VersionRecord, sessionId: string): OutgoingHttpHeaders;
}

export const SESSION_QUERY = 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id';
const CUSTOM_QUERY_PREFIX = 'x-amzn-bedrock-agentcore-runtime-custom-';
const BEARER_PROTOCOL = 'base64UrlBearerAuthorization';
const WS_PATH = /^\/runtimes\/(.+)\/ws\/?$/;

/**
 * Moves credentials that WebSocket callers cannot put in headers where the authenticator reads
 * them: a presigned URL's SigV4 query (`X-Amz-Credential`, …) becomes an `Authorization` header of
 * the same credential, a browser's `base64UrlBearerAuthorization.<token>` subprotocol a Bearer one.
 * The signature itself is never checked, as for every SigV4 request here.
 */
export function normalizeWebSocketAuth(req: IncomingMessage, query: URLSearchParams): void {
  if (req.headers.authorization) return;
  const credential = query.get('X-Amz-Credential');
  if (credential) {
    const signed = query.get('X-Amz-SignedHeaders') ?? 'host';
    const signature = query.get('X-Amz-Signature') ?? '';
    req.headers.authorization = `AWS4-HMAC-SHA256 Credential=${credential}, SignedHeaders=${signed}, Signature=${signature}`;
    return;
  }
  const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  const token = offered.find((p) => p.startsWith(`${BEARER_PROTOCOL}.`));
  if (token)
    req.headers.authorization = `Bearer ${Buffer.from(token.slice(BEARER_PROTOCOL.length + 1), 'base64url').toString('utf8')}`;
}

/** A connection nobody traces: counts nothing, ends nothing. */
const UNTRACED_WEBSOCKET: WebSocketOperation = {
  ...UNTRACED_OPERATION,
  frame: () => undefined,
  end: () => undefined,
};

/**
 * Writes an AWS error as the HTTP answer to an upgrade request and closes the socket; returns the
 * HTTP status it answered with.
 */
function rejectUpgrade(socket: Duplex, error: unknown, requestId: string, logger: Logger): number {
  let err: RuntimeApiError;
  if (error instanceof RuntimeApiError) err = error;
  else {
    logger.error('websocket upgrade failed', { requestId, error: String(error) });
    err = new RuntimeApiError(
      'InternalServerException',
      `Internal error; see the runtime log for request ${requestId}`,
    );
  }
  const body = JSON.stringify({ message: err.message, ...err.extra });
  const headers: Record<string, string | number> = {
    ...err.headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'x-amzn-errortype': err.type,
    'x-amzn-requestid': requestId,
    connection: 'close',
  };
  const head = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n');
  if (socket.writable)
    socket.end(`HTTP/1.1 ${err.status} ${STATUS_CODES[err.status]}\r\n${head}\r\n\r\n${body}`);
  else socket.destroy();
  return err.status;
}

/** The caller's upgrade request, to hand to the WebSocket server once the container accepted. */
interface Upgrade {
  req: IncomingMessage;
  socket: Duplex;
  head: Buffer;
}

/**
 * The runtime an upgrade names, and its query moved where the data plane reads it: WebSocket callers
 * cannot set headers, so the credentials, the session id (a presigned URL) and the caller's trace (a
 * browser) may come as query parameters; the headers win when both are sent.
 */
function readUpgradeRequest(req: IncomingMessage): { runtime: string; query: URLSearchParams } {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const match = WS_PATH.exec((req.url ?? '/').split('?')[0] ?? '/');
  if (!match) throw notFound(`No WebSocket operation at ${url.pathname} (use /runtimes/{arn}/ws)`);
  const query = url.searchParams;
  normalizeWebSocketAuth(req, query);
  for (const name of [SESSION_QUERY, 'traceparent', 'tracestate', 'baggage']) {
    const value = query.get(name);
    const header = name.toLowerCase();
    if (value && !req.headers[header]) req.headers[header] = value;
  }
  return { runtime: decodeURIComponent(match[1] ?? ''), query };
}

/**
 * Query parameters with the custom prefix, as the headers the container gets (browsers cannot set
 * headers on a WebSocket); the auth and session parameters are not passed on.
 */
function customHeaders(query: URLSearchParams): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of query)
    if (name.toLowerCase().startsWith(CUSTOM_QUERY_PREFIX)) headers[name.toLowerCase()] = value;
  return headers;
}

function once(fn: () => void): () => void {
  let called = false;
  return () => {
    if (!called) fn();
    called = true;
  };
}

/**
 * `GET /runtimes/{arn}/ws`: upgrades the caller's connection and bridges it to the container's
 * `/ws` on the session's worker, frame for frame (text stays text, binary stays binary; pings and
 * pongs travel end to end; close codes pass on). The connection holds its session active for as
 * long as it is open; stopping the session closes it.
 */
export function createWebSocketGateway(deps: WebSocketGatewayDeps) {
  const { config, logger } = deps;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: config.wsMaxFrameBytes,
    autoPong: false,
    clientTracking: true,
    // A browser offers the bearer token as a subprotocol; the reply must name the marker, never the token.
    handleProtocols: (protocols) => (protocols.has(BEARER_PROTOCOL) ? BEARER_PROTOCOL : false),
  });

  /** Opens the container's socket for an admitted session and bridges the caller's to it. */
  const connect = async (
    parts: RequestParts & { operation: WebSocketOperation },
    upgrade: Upgrade,
    sessionId: string,
  ): Promise<void> => {
    const { session, version } = await deps.acquire(parts, sessionId);
    const release = once(() => deps.sessions.release(session));
    try {
      const headers = { ...deps.forwardHeaders(parts, version, sessionId), ...customHeaders(parts.query) };
      const { upstream, early } = await openUpstream(config, session.worker!, headers);
      const where = { runtimeId: session.runtimeId, sessionId, requestId: parts.requestId };
      wss.handleUpgrade(upgrade.req, upgrade.socket, upgrade.head, (client) => {
        logger.info('websocket open', where);
        const done = () => {
          release();
          logger.info('websocket closed', where);
        };
        bridge(config, logger, { client, upstream, early, session, operation: parts.operation, done });
      });
    } catch (error) {
      release();
      throw error;
    }
  };

  return {
    /** Handles the server's `upgrade` event; anything but `/runtimes/{arn}/ws` gets a 404. */
    async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
      const requestId = randomUUID();
      socket.on('error', () => socket.destroy());
      let operation = UNTRACED_WEBSOCKET;
      try {
        const { runtime, query } = readUpgradeRequest(req);
        operation = deps.startWebSocket?.(req, requestId) ?? UNTRACED_WEBSOCKET;
        const parts = { req, params: { runtime }, query, requestId, operation };
        const { version, sessionId } = await deps.admit(parts);
        const protocol = serverProtocolOf(version);
        if (protocol !== 'HTTP' && protocol !== 'AGUI')
          throw validationError(
            'protocolConfiguration.serverProtocol',
            `this runtime serves ${protocol}; WebSocket (/ws) is for HTTP and AGUI runtimes`,
          );
        await connect(parts, { req, socket, head }, sessionId);
      } catch (error) {
        operation.fail(error);
        operation.end({ status: rejectUpgrade(socket, error, requestId, logger) });
      }
    },
    close() {
      for (const client of wss.clients) client.close(1001, 'runtime shutting down');
      wss.close();
    },
  };
}

export type WebSocketGateway = ReturnType<typeof createWebSocketGateway>;

/** A GET to `/ws` that is not an upgrade. */
export function notAnUpgrade(): RuntimeApiError {
  return validationError(
    'Upgrade',
    '/ws is a WebSocket endpoint: send GET with the headers Connection: Upgrade and Upgrade: websocket',
  );
}
