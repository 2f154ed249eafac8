import { chmodSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';

/** The largest OTLP request a session may send through its relay. */
const MAX_RELAY_BYTES = 16 * 1024 * 1024;
const SIGNALS = new Map([
  ['/v1/traces', { resources: 'resourceSpans', scopes: 'scopeSpans', items: 'spans' }],
  ['/v1/logs', { resources: 'resourceLogs', scopes: 'scopeLogs', items: 'logRecords' }],
  ['/v1/metrics', { resources: 'resourceMetrics', scopes: 'scopeMetrics', items: undefined }],
] as const);

type KeyValue = { key?: unknown; value?: { stringValue?: unknown } };
type Attributed = { attributes?: KeyValue[] };

export interface OtlpRelayOptions {
  /** Unix socket path the relay listens on (bridged to 127.0.0.1:4318 inside the session). */
  socketPath: string;
  /** The runtime's OTLP/HTTP base endpoint. */
  upstream: string;
  runtimeArn: string;
  serviceName: string;
  /** The session the worker serves; undefined while it waits in the warm pool. */
  sessionId: () => string | undefined;
}

export class OtlpRelayError extends Error {
  override name = 'OtlpRelayError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function setAttribute(target: Attributed, key: string, value: string): void {
  const attributes = (target.attributes = Array.isArray(target.attributes) ? target.attributes : []);
  const kept = attributes.filter((a) => a?.key !== key);
  kept.push({ key, value: { stringValue: value } });
  target.attributes = kept;
}

function attribute(target: Attributed, key: string): unknown {
  const found = Array.isArray(target.attributes) ? target.attributes.find((a) => a?.key === key) : undefined;
  return found?.value?.stringValue ?? (found ? found.value : undefined);
}

/**
 * Stamps one OTLP/JSON export: every resource gets the session's `session.id`, the runtime ARN
 * (`cloud.resource_id`) and the runtime's `service.name`; a span or log record that names another
 * session is refused (403), one that names none gets this session's id. Mutates and returns `body`.
 */
export function stampOtlp(
  path: string,
  body: unknown,
  stamp: { sessionId: string | undefined; runtimeArn: string; serviceName: string },
): unknown {
  const signal = SIGNALS.get(path as '/v1/traces');
  if (!signal)
    throw new OtlpRelayError(
      404,
      `the telemetry relay serves /v1/traces, /v1/logs and /v1/metrics, not ${path}`,
    );
  if (typeof body !== 'object' || body === null)
    throw new OtlpRelayError(400, 'the body must be an OTLP/JSON object');
  const resources = (body as Record<string, unknown>)[signal.resources];
  if (resources !== undefined && !Array.isArray(resources))
    throw new OtlpRelayError(400, `${signal.resources} must be a list`);
  for (const entry of (resources ?? []) as Record<string, unknown>[]) {
    if (typeof entry !== 'object' || entry === null)
      throw new OtlpRelayError(400, `${signal.resources}[] must be objects`);
    const resource = (entry.resource ??= {}) as Attributed;
    const claimed = attribute(resource, 'session.id');
    if (claimed !== undefined && claimed !== stamp.sessionId)
      throw new OtlpRelayError(403, 'telemetry from this session may not claim another session.id');
    if (stamp.sessionId) setAttribute(resource, 'session.id', stamp.sessionId);
    setAttribute(resource, 'cloud.resource_id', stamp.runtimeArn);
    setAttribute(resource, 'service.name', stamp.serviceName);
    if (!signal.items) continue;
    for (const scope of (entry[signal.scopes] ?? []) as Record<string, unknown>[]) {
      for (const item of (scope?.[signal.items] ?? []) as Attributed[]) {
        const own = attribute(item, 'session.id');
        if (own !== undefined && own !== stamp.sessionId)
          throw new OtlpRelayError(403, 'telemetry from this session may not claim another session.id');
        if (stamp.sessionId && own === undefined) setAttribute(item, 'session.id', stamp.sessionId);
      }
    }
  }
  return body;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_RELAY_BYTES) {
        req.destroy();
        reject(new OtlpRelayError(413, `OTLP export larger than ${MAX_RELAY_BYTES} bytes`));
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * The per-session telemetry relay: the only OTLP endpoint a sandboxed worker can reach. It accepts
 * OTLP/JSON exports, stamps and checks them (see stampOtlp) and forwards them to the runtime's OTLP
 * endpoint. Anything else of the collector (its query API, other sessions' spans) stays out of reach.
 * Resolves with a close function once it listens.
 */
export function createOtlpRelay(options: OtlpRelayOptions): Promise<() => void> {
  const base = options.upstream.replace(/\/+$/, '');
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    try {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      if (req.method !== 'POST') throw new OtlpRelayError(405, 'the telemetry relay accepts POST only');
      if (!SIGNALS.has(path as '/v1/traces'))
        throw new OtlpRelayError(
          404,
          `the telemetry relay serves /v1/traces, /v1/logs and /v1/metrics, not ${path}`,
        );
      const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
      if (type !== 'application/json')
        throw new OtlpRelayError(
          415,
          'the telemetry relay accepts OTLP/JSON only (OTEL_EXPORTER_OTLP_PROTOCOL=http/json)',
        );
      let parsed: unknown;
      try {
        parsed = JSON.parse((await readBody(req)).toString('utf8'));
      } catch (error) {
        if (error instanceof OtlpRelayError) throw error;
        throw new OtlpRelayError(400, 'the body is not valid JSON');
      }
      const stamped = stampOtlp(path, parsed, {
        sessionId: options.sessionId(),
        runtimeArn: options.runtimeArn,
        serviceName: options.serviceName,
      });
      const upstream = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(stamped),
        signal: AbortSignal.timeout(10_000),
      });
      res.writeHead(upstream.status, {
        'content-type': upstream.headers.get('content-type') ?? 'application/json',
      });
      res.end(Buffer.from(await upstream.arrayBuffer()));
    } catch (error) {
      const status = error instanceof OtlpRelayError ? error.status : 502;
      const message =
        error instanceof OtlpRelayError
          ? error.message
          : `the OTLP endpoint did not answer (${(error as Error).message})`;
      if (!res.headersSent) res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: status, message }));
    }
  };
  const server = createServer((req, res) => void handle(req, res));
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.socketPath, () => {
      chmodSync(options.socketPath, 0o666); // the sandbox user connects; only its sandbox sees the folder
      resolve(() => {
        server.close();
        server.closeAllConnections();
      });
    });
  });
}
