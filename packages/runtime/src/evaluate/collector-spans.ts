/**
 * A session's span and log documents from the local collector's API: the session's traces
 * (`GET /api/sessions/:id`), then each trace's span tree with its logs (`GET /api/traces/:id`),
 * flattened into the documents `evaluationInput.sessionSpans` holds.
 */
import type { LogRecord, SessionResponse, SpanNode, TraceResponse } from '@agentrt/collector';
import { RuntimeApiError, notFound } from '../errors.js';

export interface CollectorLocation {
  url: string;
  /** AGENTRT_QUERY_TOKEN of the collector, when it asks for one. */
  token?: string;
  /** Headers of OTLP exports to it (its ingest token), for storing results. */
  ingestHeaders?: Record<string, string>;
}

const TIMEOUT_MS = 30_000;

async function getJson<T>(at: CollectorLocation, path: string): Promise<T | undefined> {
  const url = `${at.url.replace(/\/+$/, '')}${path}`;
  const res = await fetch(url, {
    signal: AbortSignal.timeout(TIMEOUT_MS),
    headers: at.token ? { authorization: `Bearer ${at.token}` } : {},
  }).catch((error: unknown) => {
    throw new RuntimeApiError(
      'InternalServerException',
      `the collector at ${at.url} is unreachable`,
      {},
      { cause: error },
    );
  });
  if (res.status === 404) return undefined;
  if (!res.ok)
    throw new RuntimeApiError(
      'InternalServerException',
      `the collector answered HTTP ${res.status} for ${path}`,
    );
  return (await res.json()) as T;
}

function flatten(nodes: readonly SpanNode[], out: { spans: unknown[]; logs: LogRecord[] }): void {
  for (const node of nodes) {
    out.spans.push(node.span);
    out.logs.push(...node.logs);
    flatten(node.children, out);
  }
}

/** Every stored span and log of the session (a session the collector does not know: 404). */
export async function sessionDocuments(at: CollectorLocation, sessionId: string): Promise<unknown[]> {
  const session = await getJson<SessionResponse>(at, `/api/sessions/${encodeURIComponent(sessionId)}`);
  if (!session) throw notFound(`the collector holds no spans of session ${JSON.stringify(sessionId)}`);
  return traceDocuments(
    at,
    session.traces.map((t) => t.traceId),
  );
}

export async function traceDocuments(at: CollectorLocation, traceIds: readonly string[]): Promise<unknown[]> {
  const out: { spans: unknown[]; logs: LogRecord[] } = { spans: [], logs: [] };
  for (const traceId of traceIds) {
    const trace = await getJson<TraceResponse>(at, `/api/traces/${traceId}`);
    if (!trace) continue;
    flatten(trace.roots, out);
    out.logs.push(...(trace.logs ?? []));
  }
  return [...out.spans, ...out.logs];
}
