import { type OutgoingHttpHeaders } from 'node:http';
import { WebSocket } from 'ws';
import { type RuntimeConfig } from '../config.js';
import { RuntimeApiError } from '../errors.js';
import { type Logger } from '../logger.js';
import { type Session } from '../sessions/session-manager.js';
import { type WebSocketOperation } from '../telemetry/operation.js';

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

type BridgeConfig = Pick<RuntimeConfig, 'wsMaxFrameBytes' | 'wsMaxFramesPerSecond' | 'terseErrors'>;
/** Frames a side sent before the bridge was wired, in order, with whether each is binary. */
type EarlyFrames = [Buffer, boolean][];

/**
 * Opens the session worker's `/ws` (over its Unix socket when sandboxed). The container may speak
 * first: nothing it sends before the bridge is wired is lost, and no more than the budget is kept
 * (the bridge resumes it once they have gone out).
 */
export function openUpstream(
  config: BridgeConfig,
  worker: { port: number; socketPath: string | undefined; host?: string | undefined },
  headers: OutgoingHttpHeaders,
): Promise<{ upstream: WebSocket; early: EarlyFrames }> {
  return new Promise((resolve, reject) => {
    const early: EarlyFrames = [];
    let earlyBytes = 0;
    const address = worker.socketPath
      ? `ws+unix://${worker.socketPath}:/ws`
      : `ws://${worker.host ?? '127.0.0.1'}:${worker.port}/ws`;
    const upstream = new WebSocket(address, {
      headers: headers as Record<string, string>,
      maxPayload: config.wsMaxFrameBytes,
      autoPong: false,
      handshakeTimeout: 10_000,
    });
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
        reject(refusedUpgrade(config, res.statusCode, text));
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
}

function refusedUpgrade(config: BridgeConfig, status: number | undefined, text: string): RuntimeApiError {
  const detail = text.trim() || '(empty body)';
  return new RuntimeApiError(
    'RuntimeClientError',
    config.terseErrors
      ? `Received error (${status}) from runtime. Please check your CloudWatch logs for more information.`
      : `Received error (${status}) from runtime on GET /ws: ${detail}`,
  );
}

/** One bridged connection: the caller's socket, the container's, and what the bridge reports to. */
export interface BridgeEnds {
  client: WebSocket;
  upstream: WebSocket;
  early: EarlyFrames;
  session: Session;
  operation: WebSocketOperation;
  /** Called once both sides have closed. */
  done: () => void;
}

/**
 * Bridges the caller's socket and the container's frame for frame (text stays text, binary stays
 * binary; pings and pongs travel end to end; close codes pass on), each frame keeping the session
 * active, the caller's frames limited per second.
 */
export function bridge(config: BridgeConfig, logger: Logger, ends: BridgeEnds): void {
  const { client, upstream, early, session, operation } = ends;
  const admit = frameAdmission(session, config.wsMaxFramesPerSecond);
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
    session.lastActivityMs = Date.now();
    operation.frame('out');
    toClient(data as Buffer, isBinary);
  });
  relayControlFrames(client, upstream);
  relayCloses(logger, ends);
}

/** Counts a caller frame against the per-second limit (and as activity); false once it is exceeded. */
function frameAdmission(session: Session, perSecond: number): () => boolean {
  let frames = 0;
  let windowStart = Date.now();
  return () => {
    session.lastActivityMs = Date.now();
    if (session.lastActivityMs - windowStart >= 1000) {
      windowStart = session.lastActivityMs;
      frames = 0;
    }
    return ++frames <= perSecond;
  };
}

function relayControlFrames(client: WebSocket, upstream: WebSocket): void {
  client.on('ping', (data) => upstream.readyState === WebSocket.OPEN && upstream.ping(data));
  client.on('pong', (data) => upstream.readyState === WebSocket.OPEN && upstream.pong(data));
  upstream.on('ping', (data) => client.readyState === WebSocket.OPEN && client.ping(data));
  upstream.on('pong', (data) => client.readyState === WebSocket.OPEN && client.pong(data));
}

/**
 * A close on one side closes the other with the same code. A side that failed (a frame over the
 * limit: 1009) reports 1006 on its own close; the other side hears the reason it failed. The span
 * ends with the code the caller's connection closed with and the side that closed first.
 */
function relayCloses(logger: Logger, { client, upstream, operation, done }: BridgeEnds): void {
  const failure = new Map<WebSocket, number>();
  const closeOther = (self: WebSocket, other: WebSocket) => (code: number, reason: Buffer) => {
    // A side paused for back-pressure must read again to hear the answer to its close.
    other.resume();
    if (other.readyState === WebSocket.OPEN || other.readyState === WebSocket.CONNECTING)
      other.close(relayableCloseCode(failure.get(self) ?? code), reason.subarray(0, 123));
  };
  client.on('close', closeOther(client, upstream));
  upstream.on('close', closeOther(upstream, client));
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
}
