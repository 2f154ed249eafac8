import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type OutgoingHttpHeaders, STATUS_CODES } from 'node:http';
import { type Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import { type RuntimeConfig } from '../config.js';
import { type VersionRecord } from '../control/store.js';
import { RuntimeApiError, notFound, validationError } from '../errors.js';
import { type RouteContext } from '../http/router.js';
import { type Logger } from '../logger.js';
import { type Session, type SessionManager } from '../sessions/session-manager.js';
import {
  type RuntimeTelemetry,
  UNTRACED_OPERATION,
  type WebSocketOperation,
} from '../telemetry/runtime-telemetry.js';
import { serverProtocolOf } from './protocols.js';

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
 * Close codes a peer may not send on the wire (1005 no status, 1006 abnormal, 1015 TLS): a missing
 * code is a normal close, an abnormal end is a server error.
 */
export function relayableCloseCode(code: number): number {
  if (code === 1005) return 1000;
  if (code === 1006 || code === 1015) return 1011;
  return code;
}

/**
 * What one direction of a bridged connection may hold in the runtime: frames received from one side
 * and not yet handed to the other side's socket. Past it the bridge stops reading the sending side
 * (TCP then slows the sender down) until half of it has gone out; so a connection holds at most
 * twice this, plus what each side had already read when paused (a frame, a 64 KiB socket read).
 */
export const WS_BUFFER_BYTES = 8 * 1024 * 1024;

/**
 * The sender of one bridge direction: relays a frame from `from` to `to`, counting its bytes until
 * `to`'s socket has taken them, and pauses `from` while more than `budgetBytes` wait.
 */
function createFrameRelay(from: WebSocket, to: WebSocket, budgetBytes: number) {
  let waitingBytes = 0;
  return (data: Buffer, isBinary: boolean): void => {
    if (to.readyState !== WebSocket.OPEN) return;
    waitingBytes += data.length;
    if (waitingBytes > budgetBytes) from.pause();
    to.send(data, { binary: isBinary }, () => {
      waitingBytes -= data.length;
      if (from.isPaused && waitingBytes <= budgetBytes / 2) from.resume();
    });
  };
}

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

  const openUpstream = (
    worker: { port: number; socketPath: string | undefined; host?: string | undefined },
    headers: OutgoingHttpHeaders,
  ) =>
    new Promise<{ upstream: WebSocket; early: [Buffer, boolean][] }>((resolve, reject) => {
      const early: [Buffer, boolean][] = [];
      let earlyBytes = 0;
      // A sandboxed worker is reachable only through its session's Unix socket.
      const address = worker.socketPath
        ? `ws+unix://${worker.socketPath}:/ws`
        : `ws://${worker.host ?? '127.0.0.1'}:${worker.port}/ws`;
      const upstream = new WebSocket(address, {
        headers: headers as Record<string, string>,
        maxPayload: config.wsMaxFrameBytes,
        autoPong: false,
        handshakeTimeout: 10_000,
      });
      // The container may speak first; nothing it sends before the bridge is wired may be lost,
      // and no more than the budget is kept (the bridge resumes it once they have gone out).
      upstream.on('message', (data: Buffer, isBinary) => {
        early.push([data, isBinary]);
        earlyBytes += data.length;
        if (earlyBytes > WS_BUFFER_BYTES) upstream.pause();
      });
      upstream.once('open', () => resolve({ upstream, early }));
      upstream.once('unexpected-response', (_req, res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text = (text + c).slice(0, 4096)));
        res.on('end', () => {
          upstream.terminate();
          const detail = text.trim() || '(empty body)';
          reject(
            new RuntimeApiError(
              'RuntimeClientError',
              config.terseErrors
                ? `Received error (${res.statusCode}) from runtime. Please check your CloudWatch logs for more information.`
                : `Received error (${res.statusCode}) from runtime on GET /ws: ${detail}`,
            ),
          );
        });
      });
      upstream.once('error', (error) =>
        reject(
          new RuntimeApiError(
            'RuntimeClientError',
            `The session's worker did not accept a WebSocket on /ws (${error.message})`,
            {},
            { cause: error },
          ),
        ),
      );
    });

  const bridge = (
    client: WebSocket,
    upstream: WebSocket,
    early: [Buffer, boolean][],
    session: Session,
    operation: WebSocketOperation,
    done: () => void,
  ) => {
    let frames = 0;
    let windowStart = Date.now();
    const touch = () => {
      session.lastActivityMs = Date.now();
    };
    /** Counts a caller frame against the per-second limit; false once it is exceeded. */
    const admit = (): boolean => {
      touch();
      if (session.lastActivityMs - windowStart >= 1000) {
        windowStart = session.lastActivityMs;
        frames = 0;
      }
      return ++frames <= config.wsMaxFramesPerSecond;
    };
    const toUpstream = createFrameRelay(client, upstream, WS_BUFFER_BYTES);
    const toClient = createFrameRelay(upstream, client, WS_BUFFER_BYTES);
    client.on('message', (data, isBinary) => {
      if (!admit()) return client.close(1008, `more than ${config.wsMaxFramesPerSecond} frames per second`);
      operation.frame('in');
      toUpstream(data as Buffer, isBinary);
    });
    upstream.removeAllListeners('message');
    for (const [data, isBinary] of early.splice(0)) {
      operation.frame('out');
      toClient(data, isBinary);
    }
    upstream.on('message', (data, isBinary) => {
      touch();
      operation.frame('out');
      toClient(data as Buffer, isBinary);
    });
    client.on('ping', (data) => upstream.readyState === WebSocket.OPEN && upstream.ping(data));
    client.on('pong', (data) => upstream.readyState === WebSocket.OPEN && upstream.pong(data));
    upstream.on('ping', (data) => client.readyState === WebSocket.OPEN && client.ping(data));
    upstream.on('pong', (data) => client.readyState === WebSocket.OPEN && client.pong(data));
    // A side that failed (a frame over the limit: 1009) reports 1006 on its own close; the other
    // side hears the reason it failed.
    const failure = new Map<WebSocket, number>();
    const closeOther = (self: WebSocket, other: WebSocket) => (code: number, reason: Buffer) => {
      // A side paused for back-pressure must read again to hear the answer to its close.
      other.resume();
      if (other.readyState === WebSocket.OPEN || other.readyState === WebSocket.CONNECTING)
        other.close(relayableCloseCode(failure.get(self) ?? code), reason.subarray(0, 123));
    };
    client.on('close', closeOther(client, upstream));
    upstream.on('close', closeOther(upstream, client));
    // The span ends with the code the caller's connection closed with and the side that closed first.
    let closedBy: 'client' | 'container' | undefined;
    upstream.once('close', () => (closedBy ??= 'container'));
    client.once('close', (code) => {
      closedBy ??= 'client';
      operation.end({ closeCode: failure.get(client) ?? code, closedBy });
    });
    for (const [side, name] of [
      [client, 'client'],
      [upstream, 'upstream'],
    ] as const)
      side.on('error', (error: Error & { code?: string }) => {
        if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') failure.set(side, 1009);
        logger.debug(`websocket ${name} error`, { error: error.message });
      });
    let closed = 0;
    const closedOne = () => {
      if (++closed === 2) done();
    };
    client.once('close', closedOne);
    upstream.once('close', closedOne);
  };

  return {
    /** Handles the server's `upgrade` event; anything but `/runtimes/{arn}/ws` gets a 404. */
    async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
      const requestId = randomUUID();
      socket.on('error', () => socket.destroy());
      let operation = UNTRACED_WEBSOCKET;
      try {
        const url = new URL(req.url ?? '/', 'http://localhost');
        const rawPath = (req.url ?? '/').split('?')[0] ?? '/';
        const match = WS_PATH.exec(rawPath);
        if (!match) throw notFound(`No WebSocket operation at ${url.pathname} (use /runtimes/{arn}/ws)`);
        const query = url.searchParams;
        normalizeWebSocketAuth(req, query);
        // The session id may come as a query parameter: a presigned URL cannot carry headers.
        const fromQuery = query.get(SESSION_QUERY);
        if (fromQuery && !req.headers['x-amzn-bedrock-agentcore-runtime-session-id'])
          req.headers['x-amzn-bedrock-agentcore-runtime-session-id'] = fromQuery;
        // So may the caller's trace (a browser cannot set headers on a WebSocket).
        for (const name of ['traceparent', 'tracestate', 'baggage']) {
          const value = query.get(name);
          if (value && !req.headers[name]) req.headers[name] = value;
        }
        operation = deps.startWebSocket?.(req, requestId) ?? UNTRACED_WEBSOCKET;
        const parts: RequestParts = {
          req,
          params: { runtime: decodeURIComponent(match[1] ?? '') },
          query,
          requestId,
          operation,
        };
        const { version, sessionId } = await deps.admit(parts);
        const protocol = serverProtocolOf(version);
        if (protocol !== 'HTTP' && protocol !== 'AGUI')
          throw validationError(
            'protocolConfiguration.serverProtocol',
            `this runtime serves ${protocol}; WebSocket (/ws) is for HTTP and AGUI runtimes`,
          );
        const { session, version: pinned } = await deps.acquire(parts, sessionId);
        let released = false;
        const release = () => {
          if (!released) deps.sessions.release(session);
          released = true;
        };
        try {
          const headers = deps.forwardHeaders(parts, pinned, sessionId);
          // Query parameters with the custom prefix reach the container as headers (browsers
          // cannot set headers on a WebSocket); the auth and session parameters do not.
          for (const [name, value] of query)
            if (name.toLowerCase().startsWith(CUSTOM_QUERY_PREFIX)) headers[name.toLowerCase()] = value;
          const { upstream, early } = await openUpstream(session.worker!, headers);
          wss.handleUpgrade(req, socket, head, (client) => {
            logger.info('websocket open', { runtimeId: session.runtimeId, sessionId, requestId });
            bridge(client, upstream, early, session, operation, () => {
              release();
              logger.info('websocket closed', { runtimeId: session.runtimeId, sessionId, requestId });
            });
          });
        } catch (error) {
          release();
          throw error;
        }
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
