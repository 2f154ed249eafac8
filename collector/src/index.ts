/**
 * @agentrt/collector — local OTLP/HTTP collector: spans stored as structured log records in SQLite,
 * a Logs Insights-like query language, an HTTP API and the web UI, on one port.
 */
export { createCollector, type Collector, type CollectorOptions } from './http/collector.js';
export { costOfUsage, formatUsd, type Price, type UsageCost } from './cost/prices.js';
export { HttpError } from '@agentrt/kit';
export { loadConfig, DEFAULTS, type CollectorConfig } from './config.js';
export { createJsonLogger, silentLogger, type Logger } from './logger.js';
export { decodeTraceRequest, decodeLogsRequest, decodeMetricsRequest } from './otlp/decode-protobuf.js';
export {
  decodeTraceRequestJson,
  decodeLogsRequestJson,
  decodeMetricsRequestJson,
} from './otlp/decode-json.js';
export type { DecodedTraces, DecodedLogs, DecodedMetrics } from './otlp/records.js';
export { OtlpDecodeError } from './otlp/otlp-decode-error.js';
export { spansToOtlpJson, logsToOtlpJson } from './otlp/encode-json.js';
export {
  createSpanStore,
  isTraceIndexed,
  type SpanStore,
  type SpanStoreOptions,
} from './store/sqlite/span-store.js';
export type { TraceListFilter, RetentionOptions } from './store/read-options.js';
export {
  parseStoreSetting,
  StoreUnavailableError,
  StoreConfigError,
  StoreCorruptError,
  type Backend,
  type SpanBackend,
  type LogBackend,
  type MetricBackend,
  type StoreSetting,
  type ClickHouseLocation,
} from './store/store.js';
export { openBackend, type BackendOptions } from './store/backend.js';
export { createSqliteStore, type SqliteStore } from './store/sqlite/sqlite-store.js';
export {
  createClickHouseStore,
  type ClickHouseStore,
  type ClickHouseStoreOptions,
} from './store/clickhouse/clickhouse-store.js';
export { runQuery, DEFAULT_COLUMNS, DEFAULT_LIMIT, type QueryOptions } from './query/engine.js';
export { parseQuery } from './query/parser.js';
export { type ColumnUnit, columnUnit } from './query/column-units.js';
export { QueryError } from './query/query-error.js';
export { resolveField } from './query/fields.js';
export type {
  AttributeValue,
  Attributes,
  SpanKindName,
  StatusCodeName,
  SpanEventRecord,
  SpanLinkRecord,
  SpanRecord,
  LogRecord,
  TokenTotals,
  QueryRequest,
  QueryResponse,
  QueryErrorBody,
  SpanNode,
  TraceSummary,
  TraceResponse,
  TraceListResponse,
  SessionSummary,
  SessionListResponse,
  SessionResponse,
  ServiceListResponse,
  KeyListResponse,
  LiveSpansEvent,
} from './wire-types.js';
export type { MetricQueryResult, MetricSeriesResult } from './metrics/metric-query.js';
export type { MetricKind } from './metrics/metric-point.js';
export type { MetricName } from './metrics/metric-store.js';
export type { LogQueryResult, LogRow } from './logs/log-query.js';
export {
  NotReplayable,
  REPLAY_OF_HEADER,
  replayRequestOf,
  type ReplayRequest,
} from './trace-model/replay.js';
export type { AlertEvent } from './alerts/engine.js';
export type { AlertRule } from './alerts/rules.js';
