// The ClickHouse schema, versioned like the SQLite one. Written for what Debian's ClickHouse 18.16
// and current releases both run: no TTL (retention drops daily partitions), no DateTime64 (UInt64
// nanoseconds plus a Date for partitions), no Map (parallel key/value arrays), no LowCardinality,
// no skip indexes (the lookups are tables of their own, filled by materialized views).
//
// Tables (with a cluster, each is `<name>_local` on every shard plus a Distributed `<name>` over
// them, sharded by trace id so a trace lives on one shard):
//   spans          one row per span: typed hot columns, attribute key/value arrays (values as JSON
//                  text), the whole record as JSON; ORDER BY (service, hour, name, start) for the
//                  time-bucketed stats by service/model the UI draws.
//   trace_spans    the same spans keyed by trace id (trace view, export, summaries): a view.
//   traces         per-trace aggregates (start, end, root service, errors, spans): a view.
//   session_traces (session, trace) pairs with first/last time: session list and lookup, a view.
//   attribute_keys distinct attribute keys for autocompletion, a view (version 1; replaced by
//                  attribute_key_sets in version 2).
//   logs           log records, by trace.
//   span_rollup    (version 2) per second × service × name × kind × status × GenAI model, operation
//                  and provider: span count, first start, duration and token sums/min/max as
//                  aggregate states, a view. `stats` whose filters, groups and aggregates it can
//                  answer read it instead of the spans (clickhouse-query.ts), ~60× fewer rows.
//   attribute_key_sets (version 2) the distinct attribute keys as one groupUniqArray state per
//                  INSERT, a view. attribute_keys' view used arrayJoin, for which 18.16 copies every
//                  column of the inserted block once per key: a span with 20,000 attributes made an
//                  INSERT need gigabytes and fail, and every INSERT paid for copies of its records.
//   metric_series  (version 3) one row per metric series and day it had points: name, kind, unit,
//                  temporality, attributes and resource (JSON); the id is a hash of all of them, so
//                  every collector gives a series the same id. ORDER BY (name, id): a query's lookup.
//   metric_points  (version 3) one row per data point: raw value and its increase over the series'
//                  previous point (worked out at ingest, as on SQLite), histogram bucket increases as
//                  lower edges, upper edges and counts (a percentile adds them up in ClickHouse, by
//                  edges). An exporter's retry of a delta point is the same row again: queries read
//                  one row per (series, time), and merges keep one.
//   metric_rollup, metric_bucket_rollup (version 3) per series and hour / five minutes: the points'
//                  totals, and their histogram buckets added up by edges, as aggregate states, views
//                  of metric_points. A query reads them for its whole windows, points at its ends.
//   metric_last    (version 3) each series' last point as it came (start time, cumulative value,
//                  count, buckets): what a collector computes the next point's increase from,
//                  whichever collector stored the last one. Merges keep the newest per day.
//   alert_windows  (version 4) the cost alert windows, one row per rule, group and save (JSON, or a
//                  tombstone); merges keep the newest per rule and group. Every collector on the
//                  database reads them.
// All but the attribute key tables and alert_windows are partitioned by day; retention drops whole partitions.
// Sharded by trace id, except span_rollup (service) and the metric tables (series id).
//
// The DDL they are written in: schema-ddl.ts; version 2: schema-rollup.ts; version 3: schema-metrics.ts.
import {
  type SchemaTarget,
  type TableDef,
  type ViewDef,
  onCluster,
  tableStatements,
  viewStatements,
} from './schema-ddl.js';
import { metricStatements } from './schema-metrics.js';
import { SPAN_KEYS, rollupStatements } from './schema-rollup.js';

/** The schema version this collector writes; older ones are migrated at start. */
export const CLICKHOUSE_SCHEMA_VERSION = 4;

/** The oldest ClickHouse release the schema and queries are tested with. */
export const MIN_CLICKHOUSE_VERSION = [18, 16] as const;
/** Tables partitioned by day, dropped partition by partition by retention. */
export const DAILY_TABLES = [
  'spans',
  'trace_spans',
  'traces',
  'session_traces',
  'logs',
  'span_rollup',
  'metric_series',
  'metric_points',
  'metric_last',
  'metric_rollup',
  'metric_bucket_rollup',
] as const;

const TABLES: TableDef[] = [
  {
    name: 'spans',
    columns: `date Date,
      start_ns UInt64,
      end_ns UInt64,
      start_us Int64,
      end_us Int64,
      duration_ns Int64,
      trace_id String,
      span_id String,
      parent_span_id String,
      service String,
      session_id String,
      name String,
      kind String,
      status String,
      ga_model Nullable(String),
      ga_operation Nullable(String),
      ga_provider Nullable(String),
      ga_input_tokens Nullable(Float64),
      ga_output_tokens Nullable(Float64),
      hot_odd UInt8,
      attr_keys Array(String),
      attr_values Array(String),
      res_keys Array(String),
      res_values Array(String),
      doc String`,
    engine: 'MergeTree',
    partition: 'date',
    order: '(service, toStartOfHour(toDateTime(intDiv(start_ns, 1000000000))), name, start_ns)',
  },
  {
    name: 'trace_spans',
    columns: `date Date, trace_id String, span_id String, start_ns UInt64, session_id String, doc String`,
    engine: 'MergeTree',
    partition: 'date',
    order: '(trace_id, start_ns, span_id)',
    granularity: 256,
  },
  {
    name: 'traces',
    columns: `date Date,
      trace_id String,
      start_ns AggregateFunction(min, UInt64),
      end_ns AggregateFunction(max, UInt64),
      root_service AggregateFunction(anyIf, String, UInt8),
      errors AggregateFunction(sum, UInt64),
      spans AggregateFunction(count)`,
    engine: 'AggregatingMergeTree',
    partition: 'date',
    order: 'trace_id',
  },
  {
    name: 'session_traces',
    columns: `date Date,
      session_id String,
      trace_id String,
      first_ns AggregateFunction(min, UInt64),
      last_ns AggregateFunction(max, UInt64)`,
    engine: 'AggregatingMergeTree',
    partition: 'date',
    order: '(session_id, trace_id)',
    granularity: 1024,
  },
  {
    name: 'attribute_keys',
    columns: 'key String',
    engine: 'ReplacingMergeTree',
    order: 'key',
    shardKey: 'key',
  },
  {
    name: 'logs',
    columns: `date Date, time_ns UInt64, time_us Int64, trace_id String, span_id String, severity Int32, doc String`,
    engine: 'MergeTree',
    partition: 'date',
    order: '(trace_id, time_ns)',
    granularity: 256,
  },
];

const VIEWS: ViewDef[] = [
  {
    name: 'trace_spans_mv',
    target: 'trace_spans',
    select: (spans) => `SELECT date, trace_id, span_id, start_ns, session_id, doc FROM ${spans}`,
  },
  {
    name: 'traces_mv',
    target: 'traces',
    select: (spans) => `SELECT date, trace_id,
      minState(start_ns) AS start_ns,
      maxState(end_ns) AS end_ns,
      anyIfState(service, toUInt8(parent_span_id = '')) AS root_service,
      sumState(toUInt64(status = 'ERROR')) AS errors,
      countState() AS spans
      FROM ${spans} GROUP BY date, trace_id`,
  },
  {
    name: 'session_traces_mv',
    target: 'session_traces',
    select: (spans) => `SELECT date, session_id, trace_id,
      minState(start_ns) AS first_ns,
      maxState(end_ns) AS last_ns
      FROM ${spans} WHERE session_id != '' GROUP BY date, session_id, trace_id`,
  },
  {
    name: 'attribute_keys_mv',
    target: 'attribute_keys',
    select: (spans) => `SELECT DISTINCT arrayJoin(${SPAN_KEYS}) AS key FROM ${spans}`,
  },
];

/**
 * The views a ClickHouse stopped in the middle of an INSERT can leave short: 18.16 writes the spans
 * part, then each view in the order of its name (checked on the server: a failing view named after
 * another leaves that one's rows in place, named before it leaves none), so a span found in `spans`
 * and not in trace_spans reached neither trace_spans nor traces; the views before it got the rows.
 * `INSERT INTO <target> <select>` of each, from the spans `source` (a subquery of the rows), repairs them.
 */
export function viewsAfterTraceSpans(source: string): { target: string; select: string }[] {
  return VIEWS.filter((v) => v.name >= 'trace_spans_mv').map((v) => ({
    target: v.target,
    select: v.select(source),
  }));
}

/** Statements creating schema version 1 (all idempotent: IF NOT EXISTS). */
export function schemaStatements(t: SchemaTarget): string[] {
  return [
    `CREATE DATABASE IF NOT EXISTS ${t.database}${onCluster(t)}`,
    ...tableStatements(t, TABLES),
    ...viewStatements(t, VIEWS),
  ];
}

/** Version 4: the cost alert windows, shared by the collectors on the database. */
const ALERT_WINDOWS_TABLE: TableDef = {
  name: 'alert_windows',
  columns: 'rule String, grp String, json String, deleted UInt8, saved_us Int64',
  engine: 'ReplacingMergeTree',
  version: 'saved_us',
  order: '(rule, grp)',
  granularity: 1024,
  shardKey: 'grp',
};

/** Migrations by target version: what turns version n-1 into n. */
export const MIGRATIONS: Record<number, (t: SchemaTarget) => string[]> = {
  1: schemaStatements,
  2: rollupStatements,
  3: metricStatements,
  4: (t) => tableStatements(t, [ALERT_WINDOWS_TABLE]),
};
