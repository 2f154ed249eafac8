import { hostedAgentOf } from '../trace-model/agent-name.js';
import { sessionIdOf } from '../trace-model/genai.js';
import { traceNoise } from '../trace-model/noise.js';
import { sumTokens, sumTokensByModel, traceTokenUsage } from '../trace-model/tokens.js';
import type { SessionSummary, SpanRecord, TraceSummary } from '../wire-types.js';

/** A span that entered this system from a caller elsewhere (a SERVER or CONSUMER span with a parent). */
export function continuesRemoteTrace(span: Pick<SpanRecord, 'kind' | 'parentSpanId'>): boolean {
  return Boolean(span.parentSpanId) && (span.kind === 'SERVER' || span.kind === 'CONSUMER');
}

/** The summary of one trace from its spans (any order, possibly still incomplete). */
export function summarizeTrace(traceId: string, spans: readonly SpanRecord[]): TraceSummary {
  const ids = new Set(spans.map((s) => s.spanId));
  let root: SpanRecord | undefined;
  let fallback: SpanRecord | undefined;
  let start = Infinity;
  let end = -Infinity;
  let errorCount = 0;
  let sessionId: string | undefined;
  for (const s of spans) {
    const sEnd = s.startTimeUnixNano + s.durationNano;
    if (s.startTimeUnixNano < start) start = s.startTimeUnixNano;
    if (sEnd > end) end = sEnd;
    if (s.status.code === 'ERROR') errorCount++;
    sessionId ??= sessionIdOf(s.attributes, s.resource.attributes);
    if (!s.parentSpanId) {
      if (!root || s.startTimeUnixNano < root.startTimeUnixNano) root = s;
    } else if (!ids.has(s.parentSpanId)) {
      if (!fallback || s.startTimeUnixNano < fallback.startTimeUnixNano) fallback = s;
    }
  }
  const main = root ?? fallback ?? spans[0];
  const usage = traceTokenUsage(spans);
  if (!spans.length) start = end = 0;
  const summary: TraceSummary = {
    traceId,
    rootName: main?.name ?? '',
    serviceName: String(main?.resource.attributes['service.name'] ?? ''),
    startTimeUnixNano: start,
    endTimeUnixNano: end,
    durationNano: Math.max(0, end - start),
    spanCount: spans.length,
    errorCount,
    tokens: usage.total,
    // No root yet means the trace is still arriving, unless its first span is a server (or consumer)
    // span continuing an upstream caller's trace: every hosted invocation starts that way, and its
    // parent lives in the caller's process, never here.
    inProgress: !root && !(fallback && continuesRemoteTrace(fallback)),
  };
  if (sessionId) summary.sessionId = sessionId;
  const agent = hostedAgentOf(main);
  if (agent) summary.agentName = agent;
  if (Object.keys(usage.byModel).length > 0) summary.tokensByModel = usage.byModel;
  const noise = traceNoise(main, spans);
  if (noise) summary.noise = noise;
  return summary;
}

/** The summary of one session from the summaries of its traces. */
export function summarizeSession(sessionId: string, traces: readonly TraceSummary[]): SessionSummary {
  const services = new Set<string>();
  let first = Infinity;
  let last = -Infinity;
  for (const t of traces) {
    const name = t.agentName ?? t.serviceName;
    if (name) services.add(name);
    if (t.startTimeUnixNano < first) first = t.startTimeUnixNano;
    if (t.endTimeUnixNano > last) last = t.endTimeUnixNano;
  }
  const out: SessionSummary = {
    sessionId,
    serviceNames: [...services].sort(),
    traceCount: traces.length,
    spanCount: traces.reduce((n, t) => n + t.spanCount, 0),
    errorCount: traces.reduce((n, t) => n + t.errorCount, 0),
    tokens: sumTokens(traces.map((t) => t.tokens)),
    firstSeenUnixNano: traces.length ? first : 0,
    lastSeenUnixNano: traces.length ? last : 0,
  };
  const byModel = sumTokensByModel(traces.map((t) => t.tokensByModel));
  if (Object.keys(byModel).length > 0) out.tokensByModel = byModel;
  return out;
}
