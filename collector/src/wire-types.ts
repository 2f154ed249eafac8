/**
 * The collector's wire types: what it stores for each span and log record, and what its HTTP API
 * returns. The ingest side (OTLP → records), the query engine, the CLI and the web UI all speak these
 * shapes; the UI keeps its own view types apart and converts at its boundary.
 *
 * The span record follows the transaction-search span shape (`aws/spans`): flat attribute maps,
 * lowercase hex ids, nanosecond numbers and a precomputed duration.
 */

/** An attribute value after flattening OTLP `AnyValue`: arrays stay arrays, kvlists become objects. */
export type AttributeValue =
  string | number | boolean | null | AttributeValue[] | { [key: string]: AttributeValue };

export type Attributes = Record<string, AttributeValue>;

export type SpanKindName = 'INTERNAL' | 'SERVER' | 'CLIENT' | 'PRODUCER' | 'CONSUMER' | 'UNSPECIFIED';
export type StatusCodeName = 'UNSET' | 'OK' | 'ERROR';

export interface SpanEventRecord {
  name: string;
  timeUnixNano: number;
  attributes: Attributes;
}

export interface SpanLinkRecord {
  traceId: string;
  spanId: string;
  traceState?: string;
  attributes: Attributes;
}

/** One span, stored as one structured log record. */
export interface SpanRecord {
  resource: { attributes: Attributes };
  scope: { name: string; version?: string };
  traceId: string; // 32 lowercase hex
  spanId: string; // 16 lowercase hex
  parentSpanId?: string; // absent on roots
  traceState?: string;
  flags?: number;
  name: string;
  kind: SpanKindName;
  startTimeUnixNano: number;
  endTimeUnixNano: number;
  durationNano: number;
  attributes: Attributes;
  status: { code: StatusCodeName; message?: string };
  events: SpanEventRecord[];
  links: SpanLinkRecord[];
}

/** One OTLP log record, joined to spans by traceId/spanId when it has them. */
export interface LogRecord {
  resource: { attributes: Attributes };
  scope: { name: string; version?: string };
  timeUnixNano: number;
  observedTimeUnixNano: number;
  severityNumber: number;
  severityText?: string;
  body: AttributeValue;
  attributes: Attributes;
  traceId?: string;
  spanId?: string;
  flags?: number;
  eventName?: string;
}

/** Token usage summed without double counting (see the collector's token roll-up). */
export interface TokenTotals {
  input: number;
  output: number;
  total: number;
}

// ---- HTTP API responses ----------------------------------------------------------------------

/** POST /api/query request body. Times are epoch milliseconds; both optional (default: all time). */
export interface QueryRequest {
  query: string;
  startMs?: number;
  endMs?: number;
}

/**
 * POST /api/query response. `rows` are span rows (projected by `fields`) or `stats` rows, keyed by
 * the names in `columns`. Without `fields`, span rows have the columns `@timestamp` (epoch ms),
 * `traceId`, `spanId`, `name`, `resource.attributes.service.name`, `durationNano`, `status.code` and
 * `@message` (the whole SpanRecord).
 */
export interface QueryResponse {
  kind: 'spans' | 'stats';
  columns: string[];
  rows: Record<string, AttributeValue>[];
  /** Records the engine looked at. */
  scanned: number;
  elapsedMs: number;
  /** For `stats ... by bin(...)`: the name of the time-bucket column, to draw a time series. */
  timeColumn?: string;
}

/** A query language error (HTTP 400 from /api/query). Positions are 0-based offsets into the query. */
export interface QueryErrorBody {
  error: 'QuerySyntaxError' | 'QueryError';
  message: string;
  position: number;
  line: number;
  column: number;
  expected?: string[];
}

/** One node of GET /api/traces/:traceId. */
export interface SpanNode {
  span: SpanRecord;
  logs: LogRecord[];
  children: SpanNode[];
}

export interface TraceSummary {
  traceId: string;
  rootName: string;
  /** The main span's `service.name` (what `service=` filters on). */
  serviceName: string;
  /**
   * Set when the trace is a call to a hosted agent: the runtime's name (`sdk_agent`), where the
   * main span's service is the hosting runtime's. Lists show it in place of the service.
   */
  agentName?: string;
  sessionId?: string;
  startTimeUnixNano: number;
  endTimeUnixNano: number;
  durationNano: number;
  spanCount: number;
  errorCount: number;
  tokens: TokenTotals;
  /** The same usage per model (`gen_ai.response.model`, else the request's; '' unnamed): cost = tokens × price. */
  tokensByModel?: Record<string, TokenTotals>;
  /** True while the root span has not arrived yet (spans of the trace are still coming in). */
  inProgress: boolean;
  /**
   * Set on traces the default trace list hides: a health probe, a synthetic check (`agentrt
   * doctor`, attribute `agentrt.synthetic`) or the observability stack's own traffic.
   */
  noise?: 'probe' | 'synthetic' | 'internal';
}

/** GET /api/traces/:traceId */
export interface TraceResponse {
  summary: TraceSummary;
  roots: SpanNode[];
  /** Log records of the trace that name no span of it (no spanId, or a span not received). */
  logs?: LogRecord[];
}

/** GET /api/traces?service=&status=error|ok&minDurationMs=&q=&sessionId=&noise=include&limit= */
export interface TraceListResponse {
  traces: TraceSummary[];
}

export interface SessionSummary {
  sessionId: string;
  /** Who its traces are the work of: each trace's agent (agentName), else its service. */
  serviceNames: string[];
  traceCount: number;
  spanCount: number;
  errorCount: number;
  tokens: TokenTotals;
  /** Usage per model over the session's traces (see TraceSummary.tokensByModel). */
  tokensByModel?: Record<string, TokenTotals>;
  firstSeenUnixNano: number;
  lastSeenUnixNano: number;
}

/** GET /api/sessions */
export interface SessionListResponse {
  sessions: SessionSummary[];
}

/** GET /api/sessions/:id — traces in time order. */
export interface SessionResponse {
  session: SessionSummary;
  traces: TraceSummary[];
}

/** GET /api/services */
export interface ServiceListResponse {
  services: { name: string; spanCount: number; lastSeenUnixNano: number }[];
}

/** GET /api/keys — field paths for autocompletion, e.g. `attributes.session.id`, `durationNano`. */
export interface KeyListResponse {
  keys: string[];
}

/** Server-sent events on GET /api/live: `event: spans`, `data: LiveSpansEvent`. */
export interface LiveSpansEvent {
  spans: SpanRecord[];
}
