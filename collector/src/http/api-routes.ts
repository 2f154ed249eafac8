// The read API's route table (/api/*): each route parses its parameters (400 names the one that is
// wrong) and asks the backend; the answers are the backend's bytes or small JSON values.
import type { Price } from '../cost/prices.js';
import { isMetricForm, runMetricForm } from '../query/metric-form.js';
import { QueryError, QueryFailure } from '../query/query-error.js';
import type { Backend, TraceListFilter } from '../store/store.js';
import type { QueryRequest } from '../wire-types.js';
import type { ApiContext, ApiRoute } from './api-route.js';
import type { createExportStreamer } from './export.js';
import { HttpError } from '@agentrt/kit';
import type { createLiveHub } from './live-hub.js';
import { metricAndLogRoutes } from './metric-routes.js';
import { decodePathSegment, limitParam, optionalNumber, readJson, sendBytes, sendJson } from './respond.js';
import { SESSION_SPANS_PATH, streamSessionSpans } from './session-spans.js';

const TRACE_ID_RE = /^[0-9a-f]{32}$/;

/**
 * GET /api/traces/{id}/spans and /logs: the trace's stored records, one a line in start order,
 * streamed a page at a time (the trace view paints its first rows from the first page).
 */
const TRACE_RECORDS_PATH = /^\/api\/traces\/([^/]+)\/(spans|logs)$/;

export interface ApiDeps {
  backend: Backend;
  prices: Readonly<Record<string, Price>>;
  live: ReturnType<typeof createLiveHub>;
  exporter: ReturnType<typeof createExportStreamer>;
}

/** POST /api/query: the query language, or `metric …` (the metric store); both on query threads. */
async function query({ req, res }: ApiContext, backend: Backend): Promise<undefined> {
  const body = await readJson(req);
  if (typeof body.query !== 'string')
    throw new HttpError(400, 'query must be a string', { code: 'bad_request' });
  if (body.query.length > 100_000)
    throw new HttpError(400, 'query is longer than 100000 characters', { code: 'bad_request' });
  const request: QueryRequest = { query: body.query };
  const startMs = optionalNumber(body.startMs, 'startMs', 'body');
  const endMs = optionalNumber(body.endMs, 'endMs', 'body');
  if (startMs !== undefined) request.startMs = startMs;
  if (endMs !== undefined) request.endMs = endMs;
  try {
    sendBytes(
      res,
      isMetricForm(request.query)
        ? await runMetricForm(request.query, (read) => backend.metrics.json(read), request)
        : await backend.spans.queryJson(request.query, request),
    );
  } catch (error) {
    if (error instanceof QueryError) sendJson(res, 400, error.toBody(request.query));
    else if (error instanceof QueryFailure) sendJson(res, 400, error.body);
    else throw error;
  }
  return undefined;
}

/** GET /api/traces: the trace list's filter from the query string. */
function traceFilter(params: URLSearchParams): TraceListFilter {
  const status = params.get('status') || undefined;
  if (status && status !== 'error' && status !== 'ok') {
    throw new HttpError(400, "status must be 'error' or 'ok'", { code: 'bad_request' });
  }
  const noise = params.get('noise') || undefined;
  if (noise && noise !== 'include' && noise !== 'exclude' && noise !== 'only') {
    throw new HttpError(400, "noise must be 'exclude' (default), 'include' or 'only'", {
      code: 'bad_request',
    });
  }
  return {
    service: params.get('service') || undefined,
    status: status as TraceListFilter['status'],
    minDurationMs: optionalNumber(params.get('minDurationMs'), 'minDurationMs', 'query'),
    q: params.get('q') || undefined,
    sessionId: params.get('sessionId') || undefined,
    noise: noise as TraceListFilter['noise'],
    startMs: optionalNumber(params.get('startMs'), 'startMs', 'query'),
    endMs: optionalNumber(params.get('endMs'), 'endMs', 'query'),
    limit: limitParam(params, 100, 1000),
  };
}

/** A trace id from the path or the query string, lower case; 400 unless 32 hex characters. */
function traceIdOf(raw: string): string {
  const traceId = raw.toLowerCase();
  if (!TRACE_ID_RE.test(traceId))
    throw new HttpError(400, 'traceId must be 32 hex characters', { code: 'bad_request' });
  return traceId;
}

/**
 * GET /api/export: OTLP/JSON lines, streamed in chunks with back-pressure (export.ts):
 * ExportTraceServiceRequest lines, then ExportLogsServiceRequest lines.
 */
async function exportData({ params, res }: ApiContext, deps: ApiDeps): Promise<undefined> {
  const raw = params.get('traceId');
  const traceId = raw ? traceIdOf(raw) : undefined;
  const startMs = optionalNumber(params.get('startMs'), 'startMs', 'query') ?? 0;
  const endMs = optionalNumber(params.get('endMs'), 'endMs', 'query') ?? 8.64e15;
  if (traceId) await deps.exporter.stream({ traceId }, res);
  else
    await deps.exporter.stream({ startUs: Math.floor(startMs * 1000), endUs: Math.floor(endMs * 1000) }, res);
  return undefined;
}

/** The API's routes, whatever the backend. */
export function apiRoutes(deps: ApiDeps): ApiRoute[] {
  const { backend } = deps;
  return [
    { method: 'POST', path: /^\/api\/query$/, handle: (ctx) => query(ctx, backend) },
    ...metricAndLogRoutes(backend, deps.prices),
    {
      method: 'GET',
      path: /^\/api\/traces$/,
      handle: async ({ params }) => ({ traces: await backend.spans.listTraces(traceFilter(params)) }),
    },
    {
      method: 'GET',
      path: /^\/api\/traces\/([^/]+)$/,
      async handle({ match }) {
        const traceId = traceIdOf(decodePathSegment(match[1]!, 'traceId'));
        const json = await backend.spans.traceJson(traceId);
        if (!json) throw new HttpError(404, `trace ${traceId} not found`, { code: 'not_found' });
        return json;
      },
    },
    {
      method: 'GET',
      path: TRACE_RECORDS_PATH,
      async handle({ match, res }) {
        const traceId = traceIdOf(decodePathSegment(match[1]!, 'traceId'));
        const table = match[2] as 'spans' | 'logs';
        // A trace with no span is not there; one with no log record has an empty list of them.
        const missing = new HttpError(404, `trace ${traceId} not found`, { code: 'not_found' });
        await deps.exporter.streamRecords(table, [traceId], res, table === 'spans' ? missing : undefined);
        return undefined;
      },
    },
    {
      method: 'GET',
      path: /^\/api\/sessions$/,
      handle: async ({ params }) => ({
        sessions: await backend.spans.listSessions(limitParam(params, 100, 1000)),
      }),
    },
    {
      method: 'GET',
      path: SESSION_SPANS_PATH,
      async handle({ match, res }) {
        const id = decodePathSegment(match[1]!, 'sessionId');
        await streamSessionSpans(backend.spans, deps.exporter, id, res);
        return undefined;
      },
    },
    {
      method: 'GET',
      path: /^\/api\/sessions\/([^/]+)$/,
      async handle({ match }) {
        const id = decodePathSegment(match[1]!, 'sessionId');
        const json = await backend.spans.sessionJson(id);
        if (!json) throw new HttpError(404, `session ${JSON.stringify(id)} not found`, { code: 'not_found' });
        return json;
      },
    },
    {
      method: 'GET',
      path: /^\/api\/services$/,
      handle: async () => ({ services: await backend.spans.services() }),
    },
    {
      method: 'GET',
      path: /^\/api\/keys$/,
      handle: async () => ({ keys: await backend.spans.attributeKeys() }),
    },
    {
      method: 'GET',
      path: /^\/api\/live$/,
      handle: ({ res }) => {
        deps.live.add(res);
        return undefined;
      },
    },
    { method: 'GET', path: /^\/api\/export$/, handle: (ctx) => exportData(ctx, deps) },
  ];
}

/** Runs the route of `path`: 405 naming the method a route takes, 404 for a path none has. */
export async function routeApi(
  routes: readonly ApiRoute[],
  path: string,
  ctx: Omit<ApiContext, 'match'>,
): Promise<void> {
  const method = ctx.req.method === 'HEAD' ? 'GET' : (ctx.req.method ?? 'GET');
  let allowed: string | undefined;
  for (const route of routes) {
    const match = route.path.exec(path);
    if (!match) continue;
    if (route.method !== method) {
      allowed = route.method;
      continue;
    }
    const answer = await route.handle({ ...ctx, match });
    if (answer instanceof Uint8Array) sendBytes(ctx.res, answer);
    else if (answer !== undefined) sendJson(ctx.res, 200, answer);
    return;
  }
  // A path no route has is 404 to a read, and the read API takes nothing else.
  if (allowed || method !== 'GET')
    throw new HttpError(405, `use ${allowed ?? 'GET'} for ${path}`, { code: 'method_not_allowed' });
  throw new HttpError(404, `no API route ${path}`, { code: 'not_found' });
}
