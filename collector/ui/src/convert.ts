/** The boundary: wire records from the collector API → view types. */
import type {
  LogRecord,
  SessionSummary,
  SpanNode,
  SpanRecord,
  TraceResponse,
  TraceSummary,
} from '../../src/wire-types.js';
import {
  buildSpanTree,
  genAiFacts,
  rollUpTokens,
  traceBounds,
  traceCriticalPath,
} from '../../src/trace-model/index.js';
import type { LogView, SessionView, SpanView, TraceSummaryView, TraceView } from './view-types.js';

const NS_PER_MS = 1e6;
export const nsToMs = (ns: number): number => ns / NS_PER_MS;

function serviceOf(record: { resource: { attributes: Record<string, unknown> } }): string {
  const name = record.resource.attributes['service.name'];
  return typeof name === 'string' && name !== '' ? name : 'unknown_service';
}

export function toLogView(log: LogRecord): LogView {
  const view: LogView = {
    timeMs: nsToMs(log.timeUnixNano || log.observedTimeUnixNano),
    severity: log.severityText || severityName(log.severityNumber),
    body: log.body,
    attributes: log.attributes,
  };
  const eventName =
    log.eventName || (typeof log.attributes['event.name'] === 'string' ? log.attributes['event.name'] : '');
  if (eventName) view.eventName = eventName;
  return view;
}

function severityName(n: number): string {
  if (n >= 21) return 'FATAL';
  if (n >= 17) return 'ERROR';
  if (n >= 13) return 'WARN';
  if (n >= 9) return 'INFO';
  if (n >= 5) return 'DEBUG';
  return n > 0 ? 'TRACE' : 'UNSPECIFIED';
}

export function toSpanView(span: SpanRecord, logs: LogRecord[] = []): SpanView {
  const view: SpanView = {
    traceId: span.traceId,
    spanId: span.spanId,
    name: span.name,
    kind: span.kind,
    service: serviceOf(span),
    scope: span.scope.name,
    startTimeUnixNano: span.startTimeUnixNano,
    endTimeUnixNano: Math.max(span.endTimeUnixNano, span.startTimeUnixNano),
    startMs: nsToMs(span.startTimeUnixNano),
    durationMs: Math.max(0, nsToMs(span.durationNano)),
    status: span.status.code === 'ERROR' ? 'error' : span.status.code === 'OK' ? 'ok' : 'unset',
    attributes: span.attributes,
    resource: span.resource.attributes,
    events: span.events.map((e) => ({
      name: e.name,
      timeMs: nsToMs(e.timeUnixNano),
      attributes: e.attributes,
    })),
    links: span.links.map((l) => ({ traceId: l.traceId, spanId: l.spanId, attributes: l.attributes })),
    logs: logs.map(toLogView).sort((a, b) => a.timeMs - b.timeMs),
    genai: genAiFacts(span),
    source: { span, logs },
  };
  if (span.parentSpanId) view.parentSpanId = span.parentSpanId;
  if (span.status.message) view.statusMessage = span.status.message;
  return view;
}

export function toTraceSummaryView(t: TraceSummary): TraceSummaryView {
  const view: TraceSummaryView = {
    traceId: t.traceId,
    rootName: t.rootName,
    service: t.serviceName,
    startMs: nsToMs(t.startTimeUnixNano),
    durationMs: nsToMs(t.durationNano),
    spanCount: t.spanCount,
    errorCount: t.errorCount,
    tokens: t.tokens,
    inProgress: t.inProgress,
  };
  if (t.sessionId) view.sessionId = t.sessionId;
  if (t.agentName) view.agent = t.agentName;
  if (t.noise) view.noise = t.noise;
  if (t.tokensByModel) view.tokensByModel = t.tokensByModel;
  return view;
}

export function toSessionView(s: SessionSummary): SessionView {
  const view: SessionView = {
    sessionId: s.sessionId,
    services: s.serviceNames,
    traceCount: s.traceCount,
    spanCount: s.spanCount,
    errorCount: s.errorCount,
    tokens: s.tokens,
    firstSeenMs: nsToMs(s.firstSeenUnixNano),
    lastSeenMs: nsToMs(s.lastSeenUnixNano),
    durationMs: nsToMs(s.lastSeenUnixNano - s.firstSeenUnixNano),
  };
  if (s.tokensByModel) view.tokensByModel = s.tokensByModel;
  return view;
}

/** Spans of a trace, from the API's nested nodes (the UI rebuilds its own ordered tree). */
function flattenNodes(roots: SpanNode[]): SpanView[] {
  const out: SpanView[] = [];
  const stack = [...roots];
  while (stack.length > 0) {
    const node = stack.pop()!;
    out.push(toSpanView(node.span, node.logs));
    stack.push(...node.children);
  }
  return out;
}

/** A trace view from spans in any order (API response or live stream). */
export function traceFromSpans(
  summary: TraceSummaryView,
  spans: SpanView[],
  logs: LogView[] = [],
): TraceView {
  const roots = buildSpanTree(spans);
  const bounds = traceBounds(spans);
  return {
    summary,
    spans,
    roots,
    criticalPath: traceCriticalPath(roots),
    tokens: rollUpTokens(roots),
    logs,
    startMs: nsToMs(bounds.startTimeUnixNano),
    endMs: nsToMs(bounds.endTimeUnixNano),
  };
}

export function toTraceView(response: TraceResponse): TraceView {
  return traceFromSpans(
    toTraceSummaryView(response.summary),
    flattenNodes(response.roots),
    (response.logs ?? []).map(toLogView).sort((a, b) => a.timeMs - b.timeMs),
  );
}
