import { type Price } from '../cost/prices.js';
import { HttpError } from '@agentrt/kit';
import { type LogQuery, SEVERITY_NAMES } from '../logs/log-query.js';
import type { Backend } from '../store/store.js';
import { UNIT_MS } from '../query/parser.js';
import { QueryFailure } from '../query/query-error.js';
import type { ApiRoute } from './api-route.js';

const DURATION = /^(\d+(?:\.\d+)?)([a-z]+)$/;

function number(params: URLSearchParams, name: string): number | undefined {
  const raw = params.get(name);
  if (raw === null || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new HttpError(400, `${name} must be a number`, { code: 'bad_request' });
  return n;
}

/** `since=15m` or startMs/endMs (epoch ms); default: the last hour. */
function range(params: URLSearchParams, nowMs: number): { startMs: number; endMs: number } {
  const since = params.get('since');
  const endMs = number(params, 'endMs') ?? nowMs;
  if (since) {
    const m = DURATION.exec(since);
    const unitMs = m ? UNIT_MS[m[2]!] : undefined;
    if (!m || unitMs === undefined)
      throw new HttpError(400, 'since must be a duration such as 90s, 15m, 2h, 7d', { code: 'bad_request' });
    return { startMs: endMs - Number(m[1]) * unitMs, endMs };
  }
  return { startMs: number(params, 'startMs') ?? endMs - 3_600_000, endMs };
}

const list = (params: URLSearchParams, name: string): string[] =>
  params
    .getAll(name)
    .flatMap((v) => (name === 'by' ? v.split(',') : [v]))
    .map((v) => v.trim())
    .filter(Boolean);

/** `/api/logs`'s parameters as a log search; 400 names the parameter that is wrong. */
function logQuery(params: URLSearchParams, nowMs: number): LogQuery {
  const limit = number(params, 'limit') ?? 200;
  if (!Number.isInteger(limit) || limit < 1 || limit > 5000)
    throw new HttpError(400, 'limit must be a whole number from 1 to 5000', { code: 'bad_request' });
  const q: LogQuery = { limit };
  const severity = params.get('severity');
  if (severity) {
    const n = SEVERITY_NAMES[severity.toLowerCase()] ?? Number(severity);
    if (!Number.isInteger(n) || n < 0 || n > 24)
      throw new HttpError(400, 'severity must be trace, debug, info, warn, error, fatal or 0-24', {
        code: 'bad_request',
      });
    q.minSeverity = n;
  }
  const traceId = params.get('traceId')?.toLowerCase();
  if (traceId) {
    if (!/^[0-9a-f]{32}$/.test(traceId))
      throw new HttpError(400, 'traceId must be 32 hex characters', { code: 'bad_request' });
    q.traceId = traceId;
  }
  for (const [param, key] of [
    ['sessionId', 'sessionId'],
    ['service', 'service'],
    ['q', 'text'],
  ] as const) {
    const v = params.get(param);
    if (v) q[key] = v;
  }
  const after = number(params, 'after');
  if (after !== undefined) q.afterCursor = after;
  if (params.get('since') || params.get('startMs')) Object.assign(q, range(params, nowMs));
  return q;
}

/** `/api/metrics/query`: a time series on a query thread; a bad question is 400 (404: no such name). */
async function metricSeries(backend: Backend, params: URLSearchParams, nowMs: number): Promise<Uint8Array> {
  const { startMs, endMs } = range(params, nowMs);
  const stepMs = number(params, 'stepMs');
  try {
    return await backend.metrics.json({
      type: 'series',
      query: {
        name: params.get('name') ?? '',
        ...(params.get('fn') ? { fn: params.get('fn')! } : {}),
        by: list(params, 'by'),
        where: list(params, 'where'),
        startMs,
        endMs,
        ...(stepMs !== undefined ? { stepMs } : {}),
      },
    });
  } catch (error) {
    // A bad question, or one stopped at its deadline or a limit: the message says which.
    if (error instanceof QueryFailure)
      throw new HttpError(error.status, error.message, {
        code: error.status === 404 ? 'not_found' : 'bad_request',
      });
    throw error;
  }
}

/**
 * The metrics and logs API (GET only): `/api/metrics` (names, kinds, units), `/api/metrics/query`
 * (time series), `/api/logs` and `/api/prices` (the model price table of the cost columns). The
 * backend's reads answer as the bytes a query thread made.
 */
export function metricAndLogRoutes(
  backend: Backend,
  prices: Readonly<Record<string, Price>>,
  now: () => number = Date.now,
): ApiRoute[] {
  return [
    { method: 'GET', path: /^\/api\/prices$/, handle: () => ({ prices }) },
    { method: 'GET', path: /^\/api\/metrics$/, handle: () => backend.metrics.json({ type: 'names' }) },
    {
      method: 'GET',
      path: /^\/api\/metrics\/query$/,
      handle: ({ params }) => metricSeries(backend, params, now()),
    },
    {
      method: 'GET',
      path: /^\/api\/logs$/,
      handle: ({ params }) => backend.logs.json(logQuery(params, now())),
    },
  ];
}
