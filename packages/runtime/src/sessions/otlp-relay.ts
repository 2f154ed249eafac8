import { chmodSync } from 'node:fs';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { RuntimeApiError } from '../errors.js';
import { sendJson } from '@agentrt/kit';
import { header, readJsonObject } from '../http/http-util.js';
import { type Logger } from '../logger.js';
import {
  type Json,
  type RelayIdentity,
  type SignalPath,
  signalOf,
  stampOtlp,
  tenantServiceName,
} from './otlp-stamp.js';

/** Exports one session may have in its relay at once (read, checked, forwarded); more get 429. */
const MAX_EXPORTS_IN_FLIGHT = 4;
/** Exports a warm-pool worker may have waiting for its session; more get 429. */
const MAX_HELD_EXPORTS = 64;
/** Connections a worker may hold open to its relay; the exporters of one process need a few. */
const MAX_CONNECTIONS = 16;
const RETRY_AFTER_S = 1;
const REQUEST_TIMEOUT_MS = 30_000;
const UPSTREAM_TIMEOUT_MS = 10_000;
/** How often a relay with held exports looks whether its worker was adopted. */
const HOLD_POLL_MS = 100;

export interface OtlpRelayOptions {
  /** Unix socket path the relay listens on (bridged to 127.0.0.1:4318 inside the session). */
  socketPath: string;
  /** The runtime's OTLP/HTTP base endpoint. */
  upstream: string;
  /** Headers of every forward: the runtime's own (OTEL_EXPORTER_OTLP_HEADERS), never the tenant's. */
  upstreamHeaders?: Readonly<Record<string, string>> | undefined;
  identity: RelayIdentity;
  /** The session the worker serves; undefined while it waits in the warm pool. */
  sessionId: () => string | undefined;
  /** Largest single export. */
  maxExportBytes: number;
  /** Bytes of exports the session may have in the relay at once (in flight and held). */
  sessionBytes: number;
  logger: Logger;
}

export interface OtlpRelayStats {
  /** Exports being read, checked or forwarded now. */
  inFlight: number;
  /** Bytes counted against the session's budget now. */
  budgetBytes: number;
  /** Exports of a warm-pool worker waiting for its session. */
  held: number;
  forwarded: number;
  /** Forwards the OTLP endpoint refused or did not answer. */
  failed: number;
}

export interface OtlpRelay {
  stats(): OtlpRelayStats;
  /** Stops listening; held exports of a worker never adopted are dropped (logged). */
  close(): void;
}

/** JSON text of a checked export; one nested past what JSON.stringify can walk is refused (400). */
function serialize(body: Json): string {
  try {
    return JSON.stringify(body);
  } catch (error) {
    throw new RuntimeApiError('ValidationException', 'body: nested too deeply', {}, { cause: error });
  }
}

/** Refuses what is not an OTLP/JSON POST to a signal path; answers 415 itself (OTLP/HTTP says so). */
function acceptRequest(req: IncomingMessage, res: ServerResponse): SignalPath | undefined {
  if (req.method !== 'POST')
    throw new RuntimeApiError('ValidationException', 'the telemetry relay accepts POST only');
  const path = signalOf((req.url ?? '/').split('?')[0] ?? '/');
  const type = header(req, 'content-type')?.split(';')[0]?.trim().toLowerCase();
  const encoding = header(req, 'content-encoding')?.toLowerCase() ?? 'identity';
  if (type === 'application/json' && encoding === 'identity') return path;
  res.setHeader('connection', 'close'); // its body is not read
  sendJson(res, 415, {
    message:
      'the telemetry relay accepts uncompressed OTLP/JSON only (OTEL_EXPORTER_OTLP_PROTOCOL=http/json, OTEL_EXPORTER_OTLP_COMPRESSION=none)',
  });
  return undefined;
}

/** The one way a relay error becomes a response (the runtime's AWS error shape). */
function sendRelayError(res: ServerResponse, error: unknown, logger: Logger): void {
  let err = error;
  if (!(err instanceof RuntimeApiError)) {
    logger.error('telemetry relay: internal error', { error: (error as Error).stack ?? String(error) });
    err = new RuntimeApiError('InternalServerException', 'the telemetry relay failed; see the runtime log');
  }
  const { status, type, message, headers, extra } = err as RuntimeApiError;
  if (res.headersSent) return void res.destroy();
  sendJson(res, status, { message, ...extra }, { ...headers, 'x-amzn-errortype': type });
}

function throttled(why: string): RuntimeApiError {
  return new RuntimeApiError(
    'ThrottlingException',
    `${why}; retry after ${RETRY_AFTER_S} s`,
    {},
    { headers: { 'retry-after': String(RETRY_AFTER_S) } },
  );
}

/** What a forward got back, to pass on to the worker as it is. */
interface UpstreamAnswer {
  status: number;
  contentType: string;
  body: Buffer;
}

async function post(url: string, text: string, headers: Record<string, string>): Promise<UpstreamAnswer> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: text,
      signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MS),
    });
    const body = Buffer.from(await res.arrayBuffer());
    return { status: res.status, contentType: res.headers.get('content-type') ?? 'application/json', body };
  } catch (error) {
    const message = `the OTLP endpoint did not answer (${(error as Error).message})`;
    return { status: 502, contentType: 'application/json', body: Buffer.from(JSON.stringify({ message })) };
  }
}

/** What one session has in its relay: exports in flight (a slot each) and bytes, held ones included. */
function createBudget(maxBytes: number) {
  const counts = { inFlight: 0, budgetBytes: 0 };
  return {
    counts,
    reserve(bytes: number, slot: boolean): boolean {
      if (slot && counts.inFlight >= MAX_EXPORTS_IN_FLIGHT) return false;
      if (counts.budgetBytes + bytes > maxBytes) return false;
      counts.inFlight += slot ? 1 : 0;
      counts.budgetBytes += bytes;
      return true;
    },
    release(bytes: number, slot: boolean): void {
      counts.inFlight -= slot ? 1 : 0;
      counts.budgetBytes -= bytes;
    },
  };
}

/**
 * Sends checked exports to the runtime's endpoint with the runtime's headers (its ingest token, never
 * the tenant's). Counts what the endpoint refuses; the first refusal with each status is logged.
 */
function createForwarder(options: OtlpRelayOptions) {
  const base = options.upstream.replace(/\/+$/, '');
  const headers = { ...options.upstreamHeaders };
  const counts = { forwarded: 0, failed: 0 };
  const logged = new Set<number>();
  const forward = async (path: SignalPath, text: string, sessionId: string): Promise<UpstreamAnswer> => {
    const answer = await post(`${base}${path}`, text, headers);
    if (answer.status < 300) counts.forwarded++;
    else counts.failed++;
    if (answer.status >= 300 && !logged.has(answer.status)) {
      logged.add(answer.status);
      options.logger.warn('telemetry relay: the OTLP endpoint refused an export of this session', {
        sessionId,
        status: answer.status,
        detail: answer.body.toString('utf8', 0, 300),
      });
    }
    return answer;
  };
  return { counts, forward };
}

/**
 * The exports of a warm-pool worker, kept (within its session's budget) until a session adopts the
 * worker; then stamped with that session and forwarded. Checked on arrival like any other export.
 */
function createHoldQueue(
  options: OtlpRelayOptions,
  identity: RelayIdentity,
  budget: ReturnType<typeof createBudget>,
  forwarder: ReturnType<typeof createForwarder>,
) {
  const held: { path: SignalPath; text: Buffer }[] = [];
  let timer: NodeJS.Timeout | undefined;
  const release = async (sessionId: string) => {
    for (const { path, text } of held.splice(0)) {
      try {
        const body = JSON.parse(text.toString('utf8')) as Json;
        await forwarder.forward(path, serialize(stampOtlp(path, body, identity, sessionId)), sessionId);
      } catch (error) {
        forwarder.counts.failed++;
        options.logger.error('telemetry relay: a held export could not be released', {
          error: String(error),
        });
      } finally {
        budget.release(text.length, false);
      }
    }
  };
  /** Releases what is held once the worker serves a session. */
  const poll = () => {
    const sessionId = options.sessionId();
    if (sessionId === undefined || held.length === 0) return;
    clearInterval(timer);
    timer = undefined;
    void release(sessionId); // its failures are counted and logged inside
  };
  const hold = (path: SignalPath, body: Json): void => {
    const text = Buffer.from(serialize(stampOtlp(path, body, identity, undefined)));
    if (held.length >= MAX_HELD_EXPORTS || !budget.reserve(text.length, false))
      throw throttled('this worker waits for its session and holds all the telemetry it may');
    held.push({ path, text });
    timer ??= setInterval(poll, HOLD_POLL_MS).unref();
  };
  const drop = () => {
    clearInterval(timer);
    if (held.length > 0)
      options.logger.warn('telemetry relay: dropped the exports of a warm-pool worker no session adopted', {
        exports: held.splice(0).length,
      });
  };
  return { hold, poll, drop, size: () => held.length };
}

function listen(server: Server, options: OtlpRelayOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.socketPath, () => {
      server.off('error', reject);
      server.on('error', (error) =>
        options.logger.error('telemetry relay: server error', { error: String(error) }),
      );
      chmodSync(options.socketPath, 0o666); // the sandbox user connects; only its sandbox sees the folder
      resolve();
    });
  });
}

/**
 * The per-session telemetry relay: the only OTLP endpoint a sandboxed worker can reach. It accepts
 * OTLP/JSON exports, checks and stamps them (stampOtlp) and forwards them to the runtime's OTLP
 * endpoint (createForwarder). A session has at most MAX_EXPORTS_IN_FLIGHT exports and `sessionBytes`
 * bytes in the relay at once (an export of unknown length counts as `maxExportBytes`); beyond that
 * it gets 429 with Retry-After, which OTLP exporters retry. A warm-pool worker's exports wait for
 * its session (createHoldQueue).
 */
export async function createOtlpRelay(options: OtlpRelayOptions): Promise<OtlpRelay> {
  const { serviceName, runtimeName } = options.identity;
  const identity = { ...options.identity, serviceName: tenantServiceName(serviceName, runtimeName) };
  // The budget holds at least one export of the largest size, or such an export would never pass.
  const budget = createBudget(Math.max(options.sessionBytes, options.maxExportBytes));
  const forwarder = createForwarder(options);
  const queue = createHoldQueue(options, identity, budget, forwarder);

  // The parsed export is never kept in a variable: only its JSON text outlives the check.
  const relay = async (path: SignalPath, req: IncomingMessage, res: ServerResponse) => {
    const sessionId = options.sessionId();
    if (sessionId === undefined) {
      queue.hold(path, await readJsonObject(req, options.maxExportBytes));
      return sendJson(res, 200, {});
    }
    queue.poll();
    const text = serialize(
      stampOtlp(path, await readJsonObject(req, options.maxExportBytes), identity, sessionId),
    );
    const answer = await forwarder.forward(path, text, sessionId);
    res.writeHead(answer.status, { 'content-type': answer.contentType });
    res.end(answer.body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = acceptRequest(req, res);
    if (path === undefined) return;
    const declared = Number(header(req, 'content-length') ?? Number.NaN);
    const bytes = Math.min(Number.isFinite(declared) ? declared : Infinity, options.maxExportBytes);
    if (!budget.reserve(bytes, true))
      throw throttled(`this session has ${budget.counts.inFlight} exports in the telemetry relay already`);
    try {
      await relay(path, req, res);
    } finally {
      budget.release(bytes, true);
    }
  };

  const server = createServer({ requestTimeout: REQUEST_TIMEOUT_MS }, (req, res) => {
    handle(req, res).catch((error: unknown) => {
      // A worker that went away mid-export left nobody to answer.
      if (res.destroyed) return;
      // The rest of a refused body is not read (it may never end): the connection ends instead.
      if (!req.complete) res.setHeader('connection', 'close');
      sendRelayError(res, error, options.logger);
    });
  });
  server.maxConnections = MAX_CONNECTIONS;
  await listen(server, options);
  return {
    stats: () => ({ ...budget.counts, ...forwarder.counts, held: queue.size() }),
    close() {
      queue.drop();
      if (forwarder.counts.failed > 0)
        options.logger.warn(
          'telemetry relay closed; the OTLP endpoint refused some exports of this session',
          {
            sessionId: options.sessionId(),
            ...forwarder.counts,
          },
        );
      server.close();
      server.closeAllConnections();
    },
  };
}

export { type RelayIdentity, stampOtlp, tenantServiceName } from './otlp-stamp.js';
