/**
 * The UI's own view types. The collector's wire types (../../src/wire-types.ts) are converted into
 * these at one boundary (convert.ts), so a wire change touches one file, not every component.
 */
import type { Attributes, AttributeValue, LogRecord, SpanRecord, TokenTotals } from '../../src/wire-types.js';
import type { CriticalPath, GenAiFacts, SpanTreeNode, TokenRollup } from '../../src/trace-model/index.js';

export type { Attributes, AttributeValue, TokenTotals };

export type SpanStatus = 'ok' | 'error' | 'unset';

export interface EventView {
  name: string;
  timeMs: number;
  attributes: Attributes;
}

export interface LinkView {
  traceId: string;
  spanId: string;
  attributes: Attributes;
}

export interface LogView {
  timeMs: number;
  severity: string;
  body: AttributeValue;
  attributes: Attributes;
  eventName?: string;
}

export interface SpanView {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: string;
  service: string;
  scope: string;
  /** Kept in nanoseconds for the trace-model functions; the UI reads the ms fields. */
  startTimeUnixNano: number;
  endTimeUnixNano: number;
  startMs: number;
  durationMs: number;
  status: SpanStatus;
  statusMessage?: string;
  attributes: Attributes;
  resource: Attributes;
  events: EventView[];
  links: LinkView[];
  logs: LogView[];
  genai: GenAiFacts;
  /** The wire records, for the GenAI readers (messages can come from events or log records). */
  source: { span: SpanRecord; logs: LogRecord[] };
}

export interface TraceSummaryView {
  traceId: string;
  rootName: string;
  service: string;
  /** The hosted agent (its runtime's name) a call through the runtime went to. */
  agent?: string;
  sessionId?: string;
  startMs: number;
  durationMs: number;
  spanCount: number;
  errorCount: number;
  tokens: TokenTotals;
  inProgress: boolean;
  /** Usage per model (for cost). */
  tokensByModel?: Record<string, TokenTotals>;
  /** A probe, synthetic check or internal traffic (listed only with "show probes & internal"). */
  noise?: 'probe' | 'synthetic' | 'internal';
}

export interface TraceView {
  summary: TraceSummaryView;
  spans: SpanView[];
  roots: SpanTreeNode<SpanView>[];
  criticalPath: CriticalPath;
  tokens: TokenRollup;
  /** Log records of the trace that belong to no span of it. */
  logs: LogView[];
  startMs: number;
  endMs: number;
}

export interface SessionView {
  sessionId: string;
  services: string[];
  traceCount: number;
  spanCount: number;
  errorCount: number;
  tokens: TokenTotals;
  /** Usage per model (for cost). */
  tokensByModel?: Record<string, TokenTotals>;
  firstSeenMs: number;
  lastSeenMs: number;
  durationMs: number;
}

export interface ServiceView {
  name: string;
  spanCount: number;
  lastSeenMs: number;
}
