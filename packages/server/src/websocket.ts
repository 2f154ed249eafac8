import { type IncomingMessage, ServerResponse } from 'node:http';
import { type Socket } from 'node:net';
import { type Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import { type RequestContext } from './request-context.js';

/**
 * The agent's WebSocket code, like the Python SDK's websocket entrypoint: it gets the open socket
 * and the same request context as an invocation (session id, headers, trace context). The
 * connection counts as one in-flight invocation until it closes.
 */
export type WebSocketHandler = (socket: WebSocket, context: RequestContext) => void | Promise<void>;

/** An upgrade request waiting for the `/ws` route: the raw socket and the bytes after the head. */
export interface PendingUpgrade {
  socket: Duplex;
  head: Buffer;
}

const pending = new WeakMap<IncomingMessage, PendingUpgrade>();

/** The upgrade that `req` carries, when it came through {@link routeUpgrade}. */
export function pendingUpgrade(req: IncomingMessage): PendingUpgrade | undefined {
  return pending.get(req);
}

/**
 * Sends an HTTP upgrade request through the app's normal request path (context extraction, span,
 * error handling, routes) with a response bound to the raw socket: an error becomes a real HTTP
 * answer on it, and the `/ws` route takes the socket over instead.
 */
export function routeUpgrade(
  handle: (req: IncomingMessage, res: ServerResponse) => unknown,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): void {
  pending.set(req, { socket, head });
  const res = new ServerResponse(req);
  res.assignSocket(socket as Socket);
  // The response is over when the socket is: errors and a finished WebSocket both end here.
  socket.once('close', () => res.emit('close'));
  socket.on('error', () => socket.destroy());
  void handle(req, res);
}

/**
 * Completes the upgrade of a request routed to `/ws`: detaches the socket from its HTTP response,
 * hands the WebSocket to `onOpen`, and resolves once the connection has closed (so a span around
 * the route lasts as long as the connection: one trace per connection).
 */
export function acceptWebSocket(
  wss: WebSocketServer,
  req: IncomingMessage,
  res: ServerResponse,
  upgrade: PendingUpgrade,
  onOpen: (socket: WebSocket) => void,
): Promise<void> {
  res.statusCode = 101;
  res.detachSocket(upgrade.socket as Socket);
  return new Promise<void>((resolve) => {
    // A handshake that `ws` refuses (a bad key, say) closes the socket without calling back.
    upgrade.socket.once('close', () => resolve());
    wss.handleUpgrade(req, upgrade.socket, upgrade.head, (socket) => {
      // A protocol error (a message over the limit: 1009) closes the socket; without a listener
      // `ws` would throw it at the process.
      socket.on('error', () => undefined);
      socket.once('close', () => {
        resolve();
        res.emit('close');
      });
      onOpen(socket);
    });
  });
}

/** One `ws` server (no listener of its own) per app. */
export function createWebSocketServer(maxPayloadBytes: number): WebSocketServer {
  return new WebSocketServer({ noServer: true, maxPayload: maxPayloadBytes });
}
