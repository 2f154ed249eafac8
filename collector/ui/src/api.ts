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

async function request<T>(path: string, init?: RequestInit): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, 'The collector is not reachable. Is it still running?', err);
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text; // A non-JSON error page: show its text.
  }
  if (!response.ok) {
    const message =
      typeof body === 'object' && body !== null && 'message' in body && typeof body.message === 'string'
        ? body.message
        : `${response.status} ${response.statusText}`;
    throw new ApiError(response.status, message, body);
  }
  return body as T;
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
  p.set('limit', String(limit));
  const r = await request<TraceListResponse>(`/api/traces?${p.toString()}`);
  return r.traces.map(toTraceSummaryView);
}

export async function getTrace(traceId: string): Promise<TraceView> {
  return toTraceView(await request<TraceResponse>(`/api/traces/${encodeURIComponent(traceId)}`));
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
