/** The collector API client. Every response crosses into view types here. */
import type {
  KeyListResponse,
  QueryErrorBody,
  QueryResponse,
  ServiceListResponse,
  SessionListResponse,
  SessionResponse,
  TraceListResponse,
  TraceResponse,
} from '../../src/wire-types.js';
import { nsToMs, toSessionView, toTraceSummaryView, toTraceView } from './convert.js';
import type { Price } from '../../src/cost/prices.js';
import type { TraceFilters } from './router.js';
import type { ServiceView, SessionView, TraceSummaryView, TraceView } from './view-types.js';

export type { QueryErrorBody, QueryResponse };

/** A failed API call: HTTP status plus the server's message (and its body, for query errors). */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
    readonly body?: unknown,
  ) {
    super(message);
  }
}

/** The response to a request to the collector (ApiError 0 when it cannot be reached). */
export async function send(path: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(path, init);
  } catch (err) {
    if (init?.signal?.aborted) throw err;
    throw new ApiError(0, 'The collector is not reachable. Is it still running?', err);
  }
}

/** A failed response's ApiError: its JSON `message`, or its status. */
export function apiErrorOf(response: Response, text: string): ApiError {
  const body = parseBody(text);
  const message =
    typeof body === 'object' && body !== null && 'message' in body && typeof body.message === 'string'
      ? body.message
      : `${response.status} ${response.statusText}`;
  return new ApiError(response.status, message, body);
}

function parseBody(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return text; // A non-JSON error page: show its text.
  }
}

async function request<T>(path: string, init?: RequestInit): Promise<T> {
  const response = await send(path, init);
  const text = await response.text();
  if (!response.ok) throw apiErrorOf(response, text);
  return parseBody(text) as T;
}

export async function listSessions(): Promise<SessionView[]> {
  const r = await request<SessionListResponse>('/api/sessions');
  return r.sessions.map(toSessionView);
}

export async function getSession(id: string): Promise<{ session: SessionView; traces: TraceSummaryView[] }> {
  const r = await request<SessionResponse>(`/api/sessions/${encodeURIComponent(id)}`);
  return { session: toSessionView(r.session), traces: r.traces.map(toTraceSummaryView) };
}

export async function listTraces(filters: TraceFilters, limit = 200): Promise<TraceSummaryView[]> {
  const p = new URLSearchParams();
  if (filters.service) p.set('service', filters.service);
  if (filters.status) p.set('status', filters.status);
  if (filters.minDurationMs) p.set('minDurationMs', String(filters.minDurationMs));
  if (filters.q) p.set('q', filters.q);
  if (filters.startMs) p.set('startMs', String(filters.startMs));
  if (filters.endMs) p.set('endMs', String(filters.endMs));
  if (filters.noise) p.set('noise', filters.noise);
  p.set('limit', String(limit));
  const r = await request<TraceListResponse>(`/api/traces?${p.toString()}`);
  return r.traces.map(toTraceSummaryView);
}

/** A cost alert firing now (GET /api/alerts). */
export interface FiringAlert {
  rule: string;
  measure: 'tokens' | 'usd';
  group: string;
  groupBy: string;
  value: number;
  threshold: number;
  windowSeconds: number;
  at: string;
}

export async function listFiringAlerts(): Promise<FiringAlert[]> {
  return (await request<{ firing: FiringAlert[] }>('/api/alerts')).firing;
}

/** A trace as the API answers it (raw span attributes: what a replay re-sends). */
export function getTraceResponse(traceId: string): Promise<TraceResponse> {
  return request<TraceResponse>(`/api/traces/${encodeURIComponent(traceId)}`);
}

export async function getTrace(traceId: string): Promise<TraceView> {
  return toTraceView(await getTraceResponse(traceId));
}

export async function listServices(): Promise<ServiceView[]> {
  const r = await request<ServiceListResponse>('/api/services');
  return r.services.map((s) => ({
    name: s.name,
    spanCount: s.spanCount,
    lastSeenMs: nsToMs(s.lastSeenUnixNano),
  }));
}

export async function listKeys(): Promise<string[]> {
  return (await request<KeyListResponse>('/api/keys')).keys;
}

/** Runs a query; a query-language error comes back as ApiError with a QueryErrorBody `body`. */
export async function runQuery(query: string, startMs?: number, endMs?: number): Promise<QueryResponse> {
  return request<QueryResponse>('/api/query', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, startMs, endMs }),
  });
}

export function isQueryError(body: unknown): body is QueryErrorBody {
  return (
    typeof body === 'object' &&
    body !== null &&
    'position' in body &&
    typeof body.position === 'number' &&
    'message' in body &&
    typeof body.message === 'string'
  );
}

/** One time series answer of GET /api/metrics/query. */
export interface MetricSeriesAnswer {
  name: string;
  kind: string | null;
  unit: string;
  fn: string;
  stepMs: number;
  series: { group: Record<string, string>; points: [number, number | null][] }[];
}

/** A time series (undefined when the collector has no such metric yet). */
export async function queryMetric(params: {
  name: string;
  fn: string;
  by?: string;
  where?: string[];
  startMs: number;
  endMs: number;
  stepMs?: number;
}): Promise<MetricSeriesAnswer | undefined> {
  const p = new URLSearchParams({
    name: params.name,
    fn: params.fn,
    startMs: String(params.startMs),
    endMs: String(params.endMs),
  });
  if (params.by) p.set('by', params.by);
  if (params.stepMs) p.set('stepMs', String(params.stepMs));
  for (const w of params.where ?? []) p.append('where', w);
  const answer = await request<MetricSeriesAnswer>(`/api/metrics/query?${p.toString()}`);
  // kind null: no point of this name has arrived yet (the runtime has not exported any).
  return answer.kind === null ? undefined : answer;
}

/** One log record as GET /api/logs answers it. */
export interface LogRowView {
  cursor: number;
  timeMs: number;
  severityNumber: number;
  severityText: string;
  body: string;
  service: string;
  sessionId?: string;
  traceId?: string;
  spanId?: string;
}

export async function listLogs(
  filters: { sessionId?: string; traceId?: string; service?: string; severity?: string; q?: string },
  after?: number,
): Promise<{ logs: LogRowView[]; cursor: number }> {
  const p = new URLSearchParams({ limit: after === undefined ? '300' : '1000' });
  for (const [k, v] of Object.entries(filters)) if (v) p.set(k, v);
  if (after !== undefined) p.set('after', String(after));
  const r = await request<{
    logs: {
      cursor: number;
      timeUnixNano: number;
      severityNumber: number;
      severityText?: string;
      body: unknown;
      service: string;
      sessionId?: string;
      traceId?: string;
      spanId?: string;
    }[];
    cursor: number;
  }>(`/api/logs?${p.toString()}`);
  return {
    cursor: r.cursor,
    logs: r.logs.map((l) => ({
      cursor: l.cursor,
      timeMs: nsToMs(l.timeUnixNano),
      severityNumber: l.severityNumber,
      severityText: l.severityText || String(l.severityNumber),
      body: typeof l.body === 'string' ? l.body : JSON.stringify(l.body),
      service: l.service,
      ...(l.sessionId ? { sessionId: l.sessionId } : {}),
      ...(l.traceId ? { traceId: l.traceId } : {}),
      ...(l.spanId ? { spanId: l.spanId } : {}),
    })),
  };
}

/** The model price table of the cost columns (defaults, or the collector's AGENTRT_PRICES_FILE). */
export async function getPrices(): Promise<Record<string, Price>> {
  return (await request<{ prices: Record<string, Price> }>('/api/prices')).prices;
}
