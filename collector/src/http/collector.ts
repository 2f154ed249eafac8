import { readFileSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startBackgroundJobs } from '../background-jobs.js';
import { DEFAULTS, type CollectorConfig } from '../config.js';
import { DEFAULT_PRICES, parsePriceFile } from '../cost/prices.js';
import { type Logger, silentLogger } from '../logger.js';
import type { MetricLimits } from '../metrics/metric-store.js';
import { type Signal, grpcCodeFor, statusProtobuf } from '../otlp/encode-response.js';
import { openBackend } from '../store/backend.js';
import { type Backend, parseStoreSetting } from '../store/store.js';
import { createAccessGuard } from './access.js';
import type { ApiRoute } from './api-route.js';
import { apiRoutes, routeApi } from './api-routes.js';
import { createExportStreamer } from './export.js';
import { createForwarder } from './forwarder.js';
import { HttpError } from '@agentrt/kit';
import { type Encoding, type IngestCounters, createIngest, ingestEncoding } from './ingest.js';
import { createIngestQueue } from './ingest-queue.js';
import { IMPORT_PATH, createImport } from './import.js';
import { alertRoutes, loadAlertRules } from '../alerts/alert-routes.js';
import { createAlertEngine } from '../alerts/engine.js';
import { persistAlertWindows } from '../alerts/alert-state.js';
import { createLiveHub } from './live-hub.js';
import { send, sendJson } from './respond.js';
import { DEFAULT_UI_DIR, serveUi } from './static-ui.js';
import { toHttpError } from './to-http-error.js';

/** Options of createCollector: the config fields (all optional) plus library-only knobs. */
export interface CollectorOptions extends Partial<CollectorConfig> {
  dataDir: string;
  logger?: Logger;
  /** Same as ingestLingerMs (kept for tests that hold a batch open on purpose). */
  flushDelayMs?: number;
  /** How often retention runs (default 60 s). */
  retentionIntervalMs?: number;
  /** Series limits of the metrics store (attribute cardinality). */
  metricLimits?: Partial<MetricLimits>;
  /** Exports streaming at once before more get 429 (default 2). */
  maxConcurrentExports?: number;
  /** How often stale trace/session summaries are rebuilt in the background (default 2 s; 0: only on read). */
  summaryRefreshIntervalMs?: number;
}

export interface Collector {
  /** Base URL, e.g. http://127.0.0.1:4318 */
  url: string;
  port: number;
  host: string;
  /** The store behind the API (AGENTRT_STORE), by signal. */
  backend: Backend;
  /** Stops accepting, flushes queued writes, closes the store. Idempotent. */
  close(): Promise<void>;
}

interface Route {
  /** How errors are written: OTLP google.rpc.Status in the request's encoding, or API JSON. */
  errors: Encoding | 'api';
}

/** Everything a request is served with (createCollector wires it once). */
interface Parts {
  backend: Backend;
  logger: Logger;
  uiDir: string;
  access: ReturnType<typeof createAccessGuard>;
  ingest: ReturnType<typeof createIngest>;
  importLines: ReturnType<typeof createImport>;
  routes: readonly ApiRoute[];
  counters: IngestCounters;
  health: () => Record<string, unknown>;
}

/** Serves one request: OTLP ingest, the API, /healthz or the UI; every error goes to onError. */
async function handle(parts: Parts, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let route: Route = { errors: 'api' };
  try {
    const url = new URL(req.url ?? '/', 'http://collector.local');
    const path = url.pathname;
    const signal = /^\/v1\/(traces|logs|metrics)\/?$/.exec(path)?.[1] as Signal | undefined;
    if (signal) {
      parts.counters.requests++;
      if (req.method !== 'POST') {
        throw new HttpError(405, `use POST for /v1/${signal}`, {
          code: 'method_not_allowed',
          headers: { allow: 'POST' },
        });
      }
      const encoding = ingestEncoding(req);
      route = { errors: encoding };
      parts.access.check(req, path);
      return await parts.ingest(signal, req, res, encoding);
    }
    if (path === IMPORT_PATH || path === `${IMPORT_PATH}/`) {
      parts.counters.requests++;
      if (req.method !== 'POST')
        throw new HttpError(405, `use POST for ${IMPORT_PATH}`, {
          code: 'method_not_allowed',
          headers: { allow: 'POST' },
        });
      parts.access.check(req, path);
      return await parts.importLines(req, res);
    }
    parts.access.check(req, path);
    if (path === '/healthz') {
      const health = parts.backend.health();
      return sendJson(res, health.ok ? 200 : 503, { ...parts.health(), ...health.detail });
    }
    if (path.startsWith('/api/'))
      return await routeApi(parts.routes, path, { req, res, params: url.searchParams });
    if (path.startsWith('/v1/')) throw new HttpError(404, `no OTLP route ${path}`, { code: 'not_found' });
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new HttpError(405, `use GET for ${path}`, { code: 'method_not_allowed' });
    }
    if (parts.access.login(req, url, res)) return;
    return serveUi(parts.uiDir, path, res, req.method === 'HEAD');
  } catch (error) {
    onError(parts, error, route, res);
  }
}

/** The one place errors become responses. */
function onError(parts: Parts, error: unknown, route: Route, res: ServerResponse): void {
  const err = toHttpError(parts.backend.failure(error));
  if (err.status >= 500)
    parts.logger.error('request failed', { status: err.status, error: err.cause ?? err });
  if (err.status === 429) parts.counters.rejected++;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  const message = err.expose ? err.message : 'internal error';
  if (route.errors === 'protobuf') {
    send(
      res,
      err.status,
      'application/x-protobuf',
      Buffer.from(statusProtobuf(grpcCodeFor(err.status), message)),
    );
  } else if (route.errors === 'json') {
    sendJson(res, err.status, { code: grpcCodeFor(err.status), message, details: [] });
  } else {
    sendJson(res, err.status, { error: err.code, message });
  }
}

/** Opens the backend the options name. */
async function openBackendOf(options: CollectorOptions, logger: Logger): Promise<Backend> {
  return openBackend(parseStoreSetting(options.store), {
    dataDir: options.dataDir,
    logger,
    traceIndexPercent: options.traceIndexPercent ?? DEFAULTS.traceIndexPercent,
    queryWorkers: options.queryWorkers ?? DEFAULTS.queryWorkers,
    queryTimeoutMs: options.queryTimeoutMs ?? DEFAULTS.queryTimeoutMs,
    integrityCheckMinutes: options.integrityCheckMinutes ?? DEFAULTS.integrityCheckMinutes,
    ingestLingerMs: options.ingestLingerMs ?? DEFAULTS.ingestLingerMs,
    spoolMb: options.spoolMb ?? DEFAULTS.spoolMb,
    spoolShipMs: options.spoolShipMs ?? DEFAULTS.spoolShipMs,
    ...(options.metricLimits ? { metricLimits: options.metricLimits } : {}),
  });
}

/** Listens on host:port; resolves with the address. */
async function listen(
  server: ReturnType<typeof createServer>,
  port: number,
  host: string,
): Promise<AddressInfo> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server.address() as AddressInfo;
}

/** Starts the collector: OTLP/HTTP ingest, query API, live view and web UI on one port. */
export async function createCollector(options: CollectorOptions): Promise<Collector> {
  const logger = options.logger ?? silentLogger;
  // A price file that is wrong stops the start with its message, like any other bad setting would.
  const prices = options.pricesFile
    ? parsePriceFile(readFileSync(options.pricesFile, 'utf8'), options.pricesFile)
    : DEFAULT_PRICES;
  const alerts = createAlertEngine({ prices });
  loadAlertRules(alerts, options.dataDir, options.alertRulesFile);
  const backend = await openBackendOf(options, logger);
  const alertWindows = await persistAlertWindows(alerts, backend.alertWindows, logger);
  const live = createLiveHub();
  const exporter = createExportStreamer(backend, {
    maxConcurrent: options.maxConcurrentExports ?? 2,
  });
  let lastCommitMs = 0;
  const queue = createIngestQueue({
    write: (spans, logs) => backend.write(spans, logs),
    unavailable: () => backend.unwritable(),
    maxPendingRecords: options.maxPendingRecords ?? DEFAULTS.maxPendingRecords,
    // The linger has one owner: a store that batches requests itself asks for none here.
    flushDelayMs: options.flushDelayMs ?? backend.ingestLingerMs,
    onCommit: (spans) => {
      lastCommitMs = Date.now();
      live.publish(spans);
      alerts.observe(spans);
    },
  });
  const forwarder = createForwarder(options.forwardEndpoints ?? [], logger);
  const host = options.host ?? DEFAULTS.host;
  const counters: IngestCounters = { spans: 0, logs: 0, metricDataPoints: 0, rejected: 0, requests: 0 };
  const parts: Parts = {
    backend,
    logger,
    uiDir: options.uiDir ?? DEFAULT_UI_DIR,
    access: createAccessGuard({
      // A bind address that is a name (not 0.0.0.0 or an IP) is one of the collector's names.
      allowedHosts: [...(options.allowedHosts ?? []), host],
      allowedOrigins: options.allowedOrigins ?? [],
      ...(options.ingestToken ? { ingestToken: options.ingestToken } : {}),
      ...(options.queryToken ? { queryToken: options.queryToken } : {}),
    }),
    ingest: createIngest({
      backend,
      queue,
      forwarder,
      counters,
      maxBodyBytes: options.maxBodyBytes ?? DEFAULTS.maxBodyBytes,
    }),
    importLines: createImport({
      backend,
      queue,
      counters,
      maxBodyBytes: options.maxBodyBytes ?? DEFAULTS.maxBodyBytes,
    }),
    routes: [...apiRoutes({ backend, prices, live, exporter }), ...alertRoutes(alerts, options.dataDir)],
    counters,
    health: () => ({
      status: 'ok',
      received: counters,
      pendingRecords: queue.pendingRecords,
      forward: forwarder.stats,
      liveClients: live.size,
      queries: backend.queryStats(),
      exportsRunning: exporter.running,
    }),
  };

  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    void handle(parts, req, res);
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });
  let address: AddressInfo;
  try {
    address = await listen(server, options.port ?? DEFAULTS.port, host);
  } catch (error) {
    live.close();
    await backend.close();
    throw error;
  }
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const jobs = startBackgroundJobs({
    backend,
    logger,
    summaryRefreshIntervalMs: options.summaryRefreshIntervalMs ?? 2000,
    retentionIntervalMs: options.retentionIntervalMs ?? 60_000,
    maxAgeMs: (options.retentionHours ?? DEFAULTS.retentionHours) * 3_600_000,
    maxBytes: (options.maxDbMb ?? DEFAULTS.maxDbMb) * 1024 * 1024,
    lastCommitMs: () => lastCommitMs,
  });

  let closing: Promise<void> | undefined;
  // Resolutions that no new span brings: a window ages every second.
  const alertClock = setInterval(() => {
    alerts.tick();
    void alertWindows.save();
  }, 1000);
  alertClock.unref();
  return {
    url: `http://${urlHost}:${address.port}`,
    port: address.port,
    host,
    backend,
    close(): Promise<void> {
      closing ??= (async () => {
        jobs.stop();
        clearInterval(alertClock);
        // Queued batches are written and their requests answered before the connections close.
        const drained = queue.close();
        live.close();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          setTimeout(() => server.closeAllConnections(), 2000).unref();
        });
        await drained;
        await alertWindows.save();
        // Its metric store with it.
        await backend.close();
      })();
      return closing;
    },
  };
}
