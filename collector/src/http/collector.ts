import { readFileSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULTS, type CollectorConfig } from '../config.js';
import { type Logger, silentLogger } from '../logger.js';
import { decodeLogsRequestJson, decodeTraceRequestJson } from '../otlp/decode-json.js';
import { decodeLogsRequest, decodeTraceRequest } from '../otlp/decode-protobuf.js';
import {
  type Signal,
  exportResponseJson,
  exportResponseProtobuf,
  grpcCodeFor,
  statusProtobuf,
} from '../otlp/encode-response.js';
import { OtlpDecodeError } from '../otlp/otlp-decode-error.js';
import { spansInTimeWindow } from '../otlp/span-time.js';
import { DEFAULT_PRICES, parsePriceFile } from '../cost/prices.js';
import { decodeMetricPoints, decodeMetricPointsJson } from '../metrics/decode-metrics.js';
import { metricsAndLogsApi } from '../metrics/metric-routes.js';
import type { MetricLimits, MetricStore } from '../metrics/metric-store.js';
import { RECOVERY_HINT, corruptError, isCorruption } from '../store/integrity.js';
import { isMetricForm, runMetricForm } from '../query/metric-form.js';
import { QueryError } from '../query/query-error.js';
import { QueryFailure } from '../query/query-pool.js';
import { createClickHouseStore } from '../store/clickhouse/clickhouse-store.js';
import { traceResponse } from '../store/read-ops.js';
import { summarizeTrace } from '../store/summaries.js';
import { type SqliteStore, createSqliteStore } from '../store/sqlite-store.js';
import {
  type CollectorStore,
  StoreUnavailableError,
  type TraceListFilter,
  parseStoreSetting,
} from '../store/store.js';
import type { WriterThread } from '../store/writer-thread.js';
import type {
  KeyListResponse,
  QueryRequest,
  ServiceListResponse,
  SessionListResponse,
  TraceListResponse,
  TraceResponse,
} from '../wire-types.js';
import { createAccessGuard } from './access.js';
import { createExportStreamer } from './export.js';
import { createForwarder } from './forwarder.js';
import { HttpError } from './http-error.js';
import { createIngestQueue } from './ingest-queue.js';
import { createLiveHub } from './live-hub.js';
import { readBody } from './read-body.js';
import { SESSION_SPANS_PATH, streamSessionSpans } from './session-spans.js';
import { DEFAULT_UI_DIR, serveUi } from './static-ui.js';

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
  /** The store behind the API (SQLite, or ClickHouse with `store: 'clickhouse://…'`). */
  store: CollectorStore;
  /** The SQLite store's writer thread, which commits ingested batches (tests, diagnostics). */
  writer: WriterThread | undefined;
  /** The metrics store: metrics.sqlite in the data dir, or the ClickHouse store's metric tables. */
  metrics: MetricStore;
  /** Stops accepting, flushes queued writes, closes the store. Idempotent. */
  close(): Promise<void>;
}

const MAX_API_BODY_BYTES = 1024 * 1024;
/** A background summary slice: this many traces and sessions per transaction. */
const SUMMARY_SLICE_ITEMS = 8;
const TRACE_ID_RE = /^[0-9a-f]{32}$/;

type Encoding = 'protobuf' | 'json';

interface Route {
  /** How errors are written: OTLP google.rpc.Status in the request's encoding, or API JSON. */
  errors: Encoding | 'api';
}

/** Starts the collector: OTLP/HTTP ingest, query API, live view and web UI on one port. */
export async function createCollector(options: CollectorOptions): Promise<Collector> {
  const logger = options.logger ?? silentLogger;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULTS.maxBodyBytes;
  const uiDir = options.uiDir ?? DEFAULT_UI_DIR;
  // A price file that is wrong stops the start with its message, like any other bad setting would.
  const prices = options.pricesFile
    ? parsePriceFile(readFileSync(options.pricesFile, 'utf8'), options.pricesFile)
    : DEFAULT_PRICES;
  const traceIndexPercent = options.traceIndexPercent ?? DEFAULTS.traceIndexPercent;
  const setting = parseStoreSetting(options.store);
  const store: CollectorStore =
    setting.kind === 'clickhouse'
      ? await createClickHouseStore({
          ...setting,
          logger,
          queryTimeoutMs: options.queryTimeoutMs ?? DEFAULTS.queryTimeoutMs,
          queryWorkers: options.queryWorkers ?? DEFAULTS.queryWorkers,
          lingerMs: options.ingestLingerMs ?? DEFAULTS.ingestLingerMs,
          ...(options.metricLimits ? { metricLimits: options.metricLimits } : {}),
        })
      : await createSqliteStore({
          dataDir: options.dataDir,
          traceIndexPercent,
          logger,
          queryWorkers: options.queryWorkers ?? DEFAULTS.queryWorkers,
          queryTimeoutMs: options.queryTimeoutMs ?? DEFAULTS.queryTimeoutMs,
          integrityCheckMinutes: options.integrityCheckMinutes ?? DEFAULTS.integrityCheckMinutes,
          ...(options.metricLimits ? { metricLimits: options.metricLimits } : {}),
        });
  /** The SQLite store, for what only it has (writer thread, integrity checks). */
  const sqlite = store.kind === 'sqlite' ? (store as SqliteStore) : undefined;
  const writer = 'writer' in store ? (store.writer as WriterThread) : undefined;
  // metrics.sqlite beside the span store, or ClickHouse's metric tables (every collector sees them all).
  const metrics = store.metrics;
  const live = createLiveHub();
  const exporter = createExportStreamer(store.exportPage, {
    maxConcurrent: options.maxConcurrentExports ?? 2,
  });
  const queue = createIngestQueue({
    write: (spans, logs) => store.write(spans, logs),
    unavailable: () => store.unavailable(),
    maxPendingRecords: options.maxPendingRecords ?? DEFAULTS.maxPendingRecords,
    // The linger has one owner: the ClickHouse store holds requests for it itself (and starts an
    // INSERT early once enough wait), so there the queue does not hold them first.
    flushDelayMs:
      options.flushDelayMs ??
      (store.kind === 'clickhouse' ? 0 : (options.ingestLingerMs ?? DEFAULTS.ingestLingerMs)),
    onCommit: (spans) => {
      lastCommitMs = Date.now();
      live.publish(spans);
    },
  });
  let lastCommitMs = 0;
  const forwarder = createForwarder(options.forwardEndpoints ?? [], logger);
  const bindHost = options.host ?? DEFAULTS.host;
  const access = createAccessGuard({
    // A bind address that is a name (not 0.0.0.0 or an IP) is one of the collector's names.
    allowedHosts: [...(options.allowedHosts ?? []), bindHost],
    allowedOrigins: options.allowedOrigins ?? [],
    ...(options.ingestToken ? { ingestToken: options.ingestToken } : {}),
    ...(options.queryToken ? { queryToken: options.queryToken } : {}),
  });
  const counters = { spans: 0, logs: 0, metricDataPoints: 0, rejected: 0, requests: 0 };

  async function ingest(
    signal: Signal,
    req: IncomingMessage,
    res: ServerResponse,
    encoding: Encoding,
  ): Promise<void> {
    if (req.method !== 'POST') {
      throw new HttpError(405, 'method_not_allowed', `use POST for /v1/${signal}`, {
        headers: { allow: 'POST' },
      });
    }
    // Refuse early when full or closing: no point inflating a body we will not take.
    queue.checkAccepting(1);
    sqlite?.integrity.assertWritable();
    const body = await readBody(req, maxBodyBytes);
    let rejected = 0;
    let message: string | undefined;
    if (signal === 'traces') {
      const d = spansInTimeWindow(
        encoding === 'protobuf' ? decodeTraceRequest(body) : decodeTraceRequestJson(body),
        Date.now(),
      );
      rejected = d.rejected;
      message = d.rejectReason;
      await queue.enqueue(d.spans, []);
      counters.spans += d.spans.length;
    } else if (signal === 'logs') {
      const d = encoding === 'protobuf' ? decodeLogsRequest(body) : decodeLogsRequestJson(body);
      await queue.enqueue([], d.logs);
      counters.logs += d.logs.length;
    } else {
      const d = encoding === 'protobuf' ? decodeMetricPoints(body) : decodeMetricPointsJson(body);
      const stored = await metrics.ingest(d.points);
      rejected = d.rejected + stored.rejected;
      message = d.rejectReason ?? stored.rejectReason;
      counters.metricDataPoints += stored.stored;
    }
    counters.rejected += rejected;
    if (forwarder.enabled) {
      forwarder.forward(
        signal,
        body,
        encoding === 'protobuf' ? 'application/x-protobuf' : 'application/json',
      );
    }
    if (encoding === 'protobuf') {
      send(res, 200, 'application/x-protobuf', Buffer.from(exportResponseProtobuf(rejected, message)));
    } else {
      send(res, 200, 'application/json', exportResponseJson(signal, rejected, message));
    }
  }

  function ingestEncoding(req: IncomingMessage): Encoding {
    const type = String(req.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    if (type === 'application/x-protobuf' || type === 'application/protobuf') return 'protobuf';
    if (type === 'application/json') return 'json';
    throw new HttpError(
      415,
      'unsupported_media_type',
      `Content-Type '${type || '(none)'}' is not supported; use application/x-protobuf or application/json`,
    );
  }

  async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
    const type = String(req.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    if (type !== 'application/json') {
      throw new HttpError(415, 'unsupported_media_type', 'send the request body as application/json');
    }
    const body = await readBody(req, MAX_API_BODY_BYTES);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch (error) {
      throw new HttpError(400, 'bad_json', `body is not valid JSON: ${(error as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new HttpError(400, 'bad_json', 'body must be a JSON object');
    }
    return parsed as Record<string, unknown>;
  }

  function optionalNumber(value: unknown, name: string, where: 'body' | 'query'): number | undefined {
    if (value === undefined || value === null || value === '') return undefined;
    const n = typeof value === 'string' && where === 'query' ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isFinite(n)) {
      throw new HttpError(400, 'bad_request', `${name} must be a number`);
    }
    return n;
  }

  function limitParam(params: URLSearchParams, fallback: number, max: number): number {
    const n = optionalNumber(params.get('limit'), 'limit', 'query') ?? fallback;
    if (!Number.isInteger(n) || n < 1 || n > max) {
      throw new HttpError(400, 'bad_request', `limit must be a whole number from 1 to ${max}`);
    }
    return n;
  }

  async function api(
    path: string,
    params: URLSearchParams,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const method = req.method ?? 'GET';
    const get = method === 'GET' || method === 'HEAD';
    if (path === '/api/query') {
      if (method !== 'POST') throw new HttpError(405, 'method_not_allowed', 'use POST for /api/query');
      const body = await readJson(req);
      if (typeof body.query !== 'string') throw new HttpError(400, 'bad_request', 'query must be a string');
      if (body.query.length > 100_000)
        throw new HttpError(400, 'bad_request', 'query is longer than 100000 characters');
      const request: QueryRequest = { query: body.query };
      const startMs = optionalNumber(body.startMs, 'startMs', 'body');
      const endMs = optionalNumber(body.endMs, 'endMs', 'body');
      if (startMs !== undefined) request.startMs = startMs;
      if (endMs !== undefined) request.endMs = endMs;
      try {
        // `metric <name> …` reads the metric store, not the span store (on a query thread either way).
        return sendBytes(
          res,
          isMetricForm(request.query)
            ? await runMetricForm(request.query, store.metricJson, request)
            : await store.queryJson(request.query, request),
        );
      } catch (error) {
        if (error instanceof QueryError) return sendJson(res, 400, error.toBody(request.query));
        if (error instanceof QueryFailure) return sendJson(res, 400, error.body);
        throw error;
      }
    }
    if (!get) throw new HttpError(405, 'method_not_allowed', `use GET for ${path}`);
    const answer: unknown = await metricsAndLogsApi(path, params, {
      metricJson: store.metricJson,
      logsJson: store.logsJson,
      prices,
    });
    if (answer instanceof Uint8Array) return sendBytes(res, answer);
    if (answer !== undefined) return sendJson(res, 200, answer);
    if (path === '/api/traces') {
      const status = params.get('status') || undefined;
      if (status && status !== 'error' && status !== 'ok') {
        throw new HttpError(400, 'bad_request', "status must be 'error' or 'ok'");
      }
      const minDurationMs = optionalNumber(params.get('minDurationMs'), 'minDurationMs', 'query');
      const noise = params.get('noise') || undefined;
      if (noise && noise !== 'include' && noise !== 'exclude' && noise !== 'only') {
        throw new HttpError(400, 'bad_request', "noise must be 'exclude' (default), 'include' or 'only'");
      }
      const out: TraceListResponse = {
        traces: await store.listTraces({
          service: params.get('service') || undefined,
          status: status as 'error' | 'ok' | undefined,
          minDurationMs,
          q: params.get('q') || undefined,
          sessionId: params.get('sessionId') || undefined,
          noise: noise as TraceListFilter['noise'],
          startMs: optionalNumber(params.get('startMs'), 'startMs', 'query'),
          endMs: optionalNumber(params.get('endMs'), 'endMs', 'query'),
          limit: limitParam(params, 100, 1000),
        }),
      };
      return sendJson(res, 200, out);
    }
    const trace = /^\/api\/traces\/([^/]+)$/.exec(path);
    if (trace) {
      const traceId = decodePathSegment(trace[1]!, 'traceId').toLowerCase();
      if (!TRACE_ID_RE.test(traceId))
        throw new HttpError(400, 'bad_request', 'traceId must be 32 hex characters');
      const notFound = (): HttpError => new HttpError(404, 'not_found', `trace ${traceId} not found`);
      if (sqlite) {
        // Built on a query thread; the bytes go out as they are.
        const json = await sqlite.traceJson(traceId);
        if (!json) throw notFound();
        return sendBytes(res, json);
      }
      // The spans and the logs at once; the summary from the spans in hand (not read again).
      const [spans, logs] = await Promise.all([store.spansOfTrace(traceId), store.logsOfTrace(traceId)]);
      if (!spans.length) throw notFound();
      const out: TraceResponse = traceResponse(summarizeTrace(traceId, spans), spans, logs);
      return sendJson(res, 200, out);
    }
    if (path === '/api/sessions') {
      const out: SessionListResponse = { sessions: await store.listSessions(limitParam(params, 100, 1000)) };
      return sendJson(res, 200, out);
    }
    const sessionSpans = SESSION_SPANS_PATH.exec(path);
    if (sessionSpans)
      return await streamSessionSpans(store, exporter, decodePathSegment(sessionSpans[1]!, 'sessionId'), res);
    const session = /^\/api\/sessions\/([^/]+)$/.exec(path);
    if (session) {
      const id = decodePathSegment(session[1]!, 'sessionId');
      const notFound = (): HttpError =>
        new HttpError(404, 'not_found', `session ${JSON.stringify(id)} not found`);
      if (sqlite) {
        const json = await sqlite.sessionJson(id);
        if (!json) throw notFound();
        return sendBytes(res, json);
      }
      const found = await store.getSession(id);
      if (!found) throw notFound();
      return sendJson(res, 200, found);
    }
    if (path === '/api/services') {
      const out: ServiceListResponse = { services: await store.services() };
      return sendJson(res, 200, out);
    }
    if (path === '/api/keys') {
      const out: KeyListResponse = { keys: await store.attributeKeys() };
      return sendJson(res, 200, out);
    }
    if (path === '/api/live') {
      live.add(res);
      return;
    }
    if (path === '/api/export') return await exportData(params, res);
    throw new HttpError(404, 'not_found', `no API route ${path}`);
  }

  /**
   * OTLP/JSON lines, streamed in chunks with back-pressure (export.ts): ExportTraceServiceRequest
   * lines, then ExportLogsServiceRequest lines.
   */
  async function exportData(params: URLSearchParams, res: ServerResponse): Promise<void> {
    const traceId = params.get('traceId')?.toLowerCase();
    if (traceId && !TRACE_ID_RE.test(traceId))
      throw new HttpError(400, 'bad_request', 'traceId must be 32 hex characters');
    const startMs = optionalNumber(params.get('startMs'), 'startMs', 'query') ?? 0;
    const endMs = optionalNumber(params.get('endMs'), 'endMs', 'query') ?? 8.64e15;
    if (traceId) return exporter.stream({ traceId }, res);
    return exporter.stream({ startUs: Math.floor(startMs * 1000), endUs: Math.floor(endMs * 1000) }, res);
  }

  function healthBody(): Record<string, unknown> {
    return {
      status: 'ok',
      received: counters,
      pendingRecords: queue.pendingRecords,
      forward: forwarder.stats,
      liveClients: live.size,
      queries: store.queryStats(),
      exportsRunning: exporter.running,
    };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let route: Route = { errors: 'api' };
    try {
      const url = new URL(req.url ?? '/', 'http://collector.local');
      const path = url.pathname;
      const signal = /^\/v1\/(traces|logs|metrics)\/?$/.exec(path)?.[1] as Signal | undefined;
      if (signal) {
        counters.requests++;
        if (req.method !== 'POST') {
          throw new HttpError(405, 'method_not_allowed', `use POST for /v1/${signal}`, {
            headers: { allow: 'POST' },
          });
        }
        const encoding = ingestEncoding(req);
        route = { errors: encoding };
        access.check(req, path);
        return await ingest(signal, req, res, encoding);
      }
      access.check(req, path);
      if (path === '/healthz') {
        if (sqlite?.integrity.state.status === 'corrupt') {
          return sendJson(res, 503, {
            ...healthBody(),
            status: 'corrupt',
            store: sqlite.integrity.publicState(),
            hint: RECOVERY_HINT,
          });
        }
        return sendJson(res, 200, healthBody());
      }
      if (path.startsWith('/api/')) return await api(path, url.searchParams, req, res);
      if (path.startsWith('/v1/')) throw new HttpError(404, 'not_found', `no OTLP route ${path}`);
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        throw new HttpError(405, 'method_not_allowed', `use GET for ${path}`);
      }
      if (access.login(req, url, res)) return;
      return serveUi(uiDir, path, res, req.method === 'HEAD');
    } catch (error) {
      onError(error, route, res);
    }
  }

  /** The one place errors become responses. */
  function onError(error: unknown, route: Route, res: ServerResponse): void {
    let err: HttpError;
    if (sqlite && (isCorruption(error) || (error instanceof HttpError && isCorruption(error.message)))) {
      // markCorrupt logs the file; the client is told the store is corrupt, not where it is.
      sqlite.integrity.markCorrupt(error instanceof Error ? error.message : String(error));
      err =
        error instanceof HttpError && error.code === 'store_corrupt' ? error : corruptError(undefined, error);
    } else if (error instanceof HttpError) err = error;
    else if (error instanceof StoreUnavailableError)
      err = new HttpError(503, 'store_unavailable', `${error.message}; retry later`, {
        cause: error,
        headers: { 'retry-after': '5' },
        expose: true,
      });
    else if (error instanceof OtlpDecodeError)
      err = new HttpError(400, 'bad_data', error.message, { cause: error });
    // A read stopped at its deadline or over the result cap (the query threads): the client narrows it.
    else if (error instanceof QueryFailure)
      err = new HttpError(400, 'query_stopped', error.message, { cause: error, expose: true });
    else err = new HttpError(500, 'internal', 'internal error', { cause: error });
    if (err.status >= 500) logger.error('request failed', { status: err.status, error: err.cause ?? err });
    if (err.status === 429) counters.rejected++;
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

  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    void handle(req, res);
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? DEFAULTS.port, options.host ?? DEFAULTS.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    live.close();
    await store.close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const host = options.host ?? DEFAULTS.host;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;

  const refreshMs = options.summaryRefreshIntervalMs ?? 2000;
  let refreshing = false;
  /**
   * Rebuilds up to `budget` summaries in slices of a few milliseconds, yielding to the event loop
   * between them: a store with thousands of stale traces (a restart, a burst) never holds up
   * ingest or /healthz for longer than a slice.
   */
  const refreshSlices = async (budget: number): Promise<void> => {
    refreshing = true;
    try {
      for (let n = 1; n > 0 && budget > 0 && !closing;) {
        n = await store.refreshSummaries(SUMMARY_SLICE_ITEMS);
        budget -= n;
        await new Promise((resolve) => setImmediate(resolve));
      }
    } catch (error) {
      logger.warn('summary refresh failed', { error });
    } finally {
      refreshing = false;
    }
  };
  const refresher =
    refreshMs > 0
      ? setInterval(() => {
          // Summaries are rebuilt when ingest pauses (reads rebuild what they need right away),
          // so a burst of spans is not slowed by re-reading traces that are still growing.
          if (Date.now() - lastCommitMs < refreshMs || refreshing) return;
          void refreshSlices(500);
        }, refreshMs)
      : undefined;
  refresher?.unref();
  const maxAgeMs = (options.retentionHours ?? DEFAULTS.retentionHours) * 3_600_000;
  const maxBytes = (options.maxDbMb ?? DEFAULTS.maxDbMb) * 1024 * 1024;
  const runRetention = (): void => {
    store.applyRetention({ maxAgeMs, maxBytes }).then(
      (deleted) => {
        if (deleted) logger.info('retention deleted old spans', { deleted });
      },
      (error: unknown) => logger.warn('retention failed', { error }),
    );
    metrics.applyRetention({ maxAgeMs, maxBytes }).then(
      (points) => {
        if (points) logger.info('retention deleted old metric points', { points });
      },
      (error: unknown) => logger.warn('metric retention failed', { error }),
    );
  };
  const retention = setInterval(runRetention, options.retentionIntervalMs ?? 60_000);
  retention.unref();

  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${address.port}`,
    port: address.port,
    host,
    store,
    writer,
    metrics,
    close(): Promise<void> {
      closing ??= (async () => {
        clearInterval(refresher);
        clearInterval(retention);
        // Queued batches are written and their requests answered before the connections close.
        const drained = queue.close();
        live.close();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          setTimeout(() => server.closeAllConnections(), 2000).unref();
        });
        await drained;
        // Its metric store with it.
        await store.close();
      })();
      return closing;
    },
  };
}

/** A %-encoded path segment; malformed encoding is the client's error (400), not ours. */
function decodePathSegment(segment: string, name: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, 'bad_request', `${name} in the path is not valid %-encoded UTF-8`);
  }
}

function send(res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** A 200 JSON body produced elsewhere (a query thread) as bytes. */
function sendBytes(res: ServerResponse, json: Uint8Array): void {
  send(res, 200, 'application/json; charset=utf-8', Buffer.from(json.buffer, json.byteOffset, json.length));
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value));
}
