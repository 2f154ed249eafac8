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

import { ROLLUP_WIDTHS_US } from '../../metrics/rollups.js';

/** The schema version this collector writes; older ones are migrated at start. */
export const CLICKHOUSE_SCHEMA_VERSION = 4;

/** The oldest ClickHouse release the schema and queries are tested with. */
export const MIN_CLICKHOUSE_VERSION = [18, 16] as const;

export interface SchemaTarget {
  database: string;
  cluster?: string;
  replicated: boolean;
}

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

/** The table a statement writes to or reads from: local with a cluster. */
export function localName(t: SchemaTarget, table: string): string {
  return t.cluster ? `${t.database}.${table}_local` : `${t.database}.${table}`;
}

/** The table reads and inserts go through (the Distributed one with a cluster). */
export function tableName(t: SchemaTarget, table: string): string {
  return `${t.database}.${table}`;
}

const onCluster = (t: SchemaTarget): string => (t.cluster ? ` ON CLUSTER ${t.cluster}` : '');

function engine(
  t: SchemaTarget,
  table: string,
  kind: 'MergeTree' | 'AggregatingMergeTree' | 'ReplacingMergeTree',
  version?: string,
): string {
  if (!t.replicated) return `${kind}(${version ?? ''})`;
  return `Replicated${kind}('/clickhouse/tables/{shard}/${t.database}.${table}', '{replica}'${version ? `, ${version}` : ''})`;
}

interface TableDef {
  name: string;
  columns: string;
  engine: 'MergeTree' | 'AggregatingMergeTree' | 'ReplacingMergeTree';
  /** ReplacingMergeTree's version column: a merge keeps the row with the highest. */
  version?: string;
  partition?: string;
  order: string;
  /**
   * Rows per primary-key granule (ClickHouse's default is 8192): smaller for the tables read by
   * one key at a time, whose granules hold whole records — a trace's spans are a few rows, and a
   * lookup reads every row of the granules it touches.
   */
  granularity?: number;
  /** The Distributed table's sharding expression (hashed; default the trace id). */
  shardKey?: string;
}

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

/** The keys a span row contributes: `attributes.<key>` and `resource.attributes.<key>`. */
const SPAN_KEYS = `arrayConcat(arrayMap(k -> concat('attributes.', k), attr_keys), arrayMap(k -> concat('resource.attributes.', k), res_keys))`;

/** A materialized view: what `select` makes of each INSERT into `source` (default spans) goes to `target`. */
interface ViewDef {
  name: string;
  target: string;
  source?: string;
  select: (source: string) => string;
}

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

/** The GenAI columns of the rollup: nullable in spans, so a flag plus the value ('' when NULL) here. */
export const ROLLUP_NULLABLE = [
  { column: 'ga_model', flag: 'm_null', value: 'model' },
  { column: 'ga_operation', flag: 'o_null', value: 'operation' },
  { column: 'ga_provider', flag: 'p_null', value: 'provider' },
] as const;

/** The rollup's number columns: aggregate states per source column (count of non-null, sum, min, max). */
export const ROLLUP_NUMBERS = [
  { column: 'duration_ns', prefix: 'dur' },
  { column: 'ga_input_tokens', prefix: 'in' },
  { column: 'ga_output_tokens', prefix: 'out' },
] as const;

/** Grouping columns of span_rollup (its ORDER BY: sorting keys cannot be Nullable on 18.16). */
const ROLLUP_KEYS = [
  'service',
  'start_s',
  'name',
  'kind',
  'status',
  ...ROLLUP_NULLABLE.flatMap((n) => [n.flag, n.value]),
];

/**
 * The aggregate states of one span_rollup row, from rows of `spans`: also what the query side
 * computes from raw spans to merge with rollup rows (clickhouse-query.ts), so both are one text.
 * Nullable number columns are folded to plain types (a non-null count, ifNull sums, ±inf bounds).
 */
export const ROLLUP_STATES = [
  'countState() AS spans',
  'minState(start_ns) AS first_ns',
  'maxState(end_us) AS last_end_us',
  ...ROLLUP_NUMBERS.flatMap(({ column: c, prefix: p }) =>
    c === 'duration_ns'
      ? [`sumState(${c}) AS ${p}_sum`, `minState(${c}) AS ${p}_min`, `maxState(${c}) AS ${p}_max`]
      : [
          `sumState(toUInt64(isNotNull(${c}))) AS ${p}_n`,
          `sumState(ifNull(${c}, 0)) AS ${p}_sum`,
          `minState(ifNull(${c}, inf)) AS ${p}_min`,
          `maxState(ifNull(${c}, -inf)) AS ${p}_max`,
        ],
  ),
];

const ROLLUP_TABLE: TableDef = {
  name: 'span_rollup',
  columns: [
    'date Date',
    'start_s Int64',
    'service String',
    'name String',
    'kind String',
    'status String',
    ...ROLLUP_NULLABLE.flatMap((n) => [`${n.flag} UInt8`, `${n.value} String`]),
    'spans AggregateFunction(count)',
    'first_ns AggregateFunction(min, UInt64)',
    'last_end_us AggregateFunction(max, Int64)',
    ...ROLLUP_NUMBERS.flatMap(({ column: c, prefix: p }) =>
      c === 'duration_ns'
        ? [
            `${p}_sum AggregateFunction(sum, Int64)`,
            `${p}_min AggregateFunction(min, Int64)`,
            `${p}_max AggregateFunction(max, Int64)`,
          ]
        : [
            `${p}_n AggregateFunction(sum, UInt64)`,
            `${p}_sum AggregateFunction(sum, Float64)`,
            `${p}_min AggregateFunction(min, Float64)`,
            `${p}_max AggregateFunction(max, Float64)`,
          ],
    ),
  ].join(', '),
  engine: 'AggregatingMergeTree',
  partition: 'date',
  order: `(${ROLLUP_KEYS.join(', ')})`,
  shardKey: 'service',
};

const KEY_SETS_TABLE: TableDef = {
  name: 'attribute_key_sets',
  columns: 'shard UInt8, keys AggregateFunction(groupUniqArrayArray, Array(String))',
  engine: 'AggregatingMergeTree',
  order: 'shard',
  shardKey: 'shard',
};

/** The rollup's SELECT over `spans` rows (the view's, and the v2 migration's backfill). */
function rollupSelect(spans: string): string {
  const keys = [
    'date',
    'intDiv(start_us, 1000000) AS start_s',
    'service',
    'name',
    'kind',
    'status',
    ...ROLLUP_NULLABLE.flatMap((n) => [
      `toUInt8(isNull(${n.column})) AS ${n.flag}`,
      `ifNull(${n.column}, '') AS ${n.value}`,
    ]),
  ];
  return `SELECT ${[...keys, ...ROLLUP_STATES].join(', ')} FROM ${spans} GROUP BY date, ${ROLLUP_KEYS.join(', ')}`;
}

/** CREATE TABLE (and its Distributed table with a cluster) for each table. */
function tableStatements(t: SchemaTarget, tables: readonly TableDef[]): string[] {
  const out: string[] = [];
  for (const def of tables) {
    const local = localName(t, def.name);
    out.push(
      `CREATE TABLE IF NOT EXISTS ${local}${onCluster(t)} (${def.columns}) ENGINE = ${engine(t, `${def.name}_local`, def.engine, def.version)}${def.partition ? ` PARTITION BY ${def.partition}` : ''} ORDER BY ${def.order}${def.granularity ? ` SETTINGS index_granularity = ${def.granularity}` : ''}`,
    );
    if (t.cluster) {
      out.push(
        `CREATE TABLE IF NOT EXISTS ${tableName(t, def.name)}${onCluster(t)} AS ${local} ENGINE = Distributed(${t.cluster}, ${t.database}, ${def.name}_local, cityHash64(${def.shardKey ?? 'trace_id'}))`,
      );
    }
  }
  return out;
}

/** CREATE MATERIALIZED VIEW for each view, on each shard's local spans table. */
function viewStatements(t: SchemaTarget, views: readonly ViewDef[]): string[] {
  return views.map(
    (v) =>
      `CREATE MATERIALIZED VIEW IF NOT EXISTS ${t.database}.${v.name}${onCluster(t)} TO ${localName(t, v.target)} AS ${v.select(localName(t, v.source ?? 'spans'))}`,
  );
}

/** Statements creating schema version 1 (all idempotent: IF NOT EXISTS). */
export function schemaStatements(t: SchemaTarget): string[] {
  return [
    `CREATE DATABASE IF NOT EXISTS ${t.database}${onCluster(t)}`,
    ...tableStatements(t, TABLES),
    ...viewStatements(t, VIEWS),
  ];
}

/**
 * Version 2: span_rollup, filled from the spans already stored, then kept by its view. Spans that
 * another (version 1) collector stores between the backfill and the view's creation are not in the
 * rollup: upgrade with ingest stopped, as the README says.
 */
function rollupStatements(t: SchemaTarget): string[] {
  return [
    ...tableStatements(t, [ROLLUP_TABLE]),
    // On each shard's local tables with a cluster (ON CLUSTER runs an INSERT nowhere): the
    // migration's backfill fills the node it talks to; a Distributed rollup reads every shard.
    `INSERT INTO ${localName(t, 'span_rollup')} ${rollupSelect(localName(t, 'spans'))}`,
    ...viewStatements(t, [{ name: 'span_rollup_mv', target: 'span_rollup', select: rollupSelect }]),
    // attribute_keys' view gives way to attribute_key_sets' (see the header), which starts with the
    // keys already kept.
    `DROP TABLE IF EXISTS ${t.database}.attribute_keys_mv${onCluster(t)}`,
    ...tableStatements(t, [KEY_SETS_TABLE]),
    `INSERT INTO ${localName(t, 'attribute_key_sets')} SELECT toUInt8(0), groupUniqArrayArrayState([key]) FROM ${localName(t, 'attribute_keys')}`,
    ...viewStatements(t, [
      {
        name: 'attribute_key_sets_mv',
        target: 'attribute_key_sets',
        select: (spans) =>
          `SELECT toUInt8(0) AS shard, groupUniqArrayArrayState(${SPAN_KEYS}) AS keys FROM ${spans}`,
      },
    ]),
  ];
}

const METRIC_TABLES: TableDef[] = [
  {
    name: 'metric_series',
    columns: `date Date,
      series_id UInt64,
      name String,
      kind String,
      unit String,
      description String,
      temporality String,
      monotonic UInt8,
      service String,
      attributes String,
      resource String`,
    engine: 'ReplacingMergeTree',
    partition: 'date',
    order: '(name, series_id)',
    granularity: 1024,
    shardKey: 'series_id',
  },
  {
    name: 'metric_points',
    columns: `date Date,
      series_id UInt64,
      time_us Int64,
      value Float64,
      delta Nullable(Float64),
      cnt Nullable(Float64),
      lo Nullable(Float64),
      hi Nullable(Float64),
      blo Array(Float64),
      bhi Array(Float64),
      bc Array(Float64)`,
    engine: 'ReplacingMergeTree',
    partition: 'date',
    order: '(series_id, time_us)',
    shardKey: 'series_id',
  },
  {
    name: 'metric_last',
    columns: `date Date,
      series_id UInt64,
      name String,
      time_us Int64,
      start_us Int64,
      value Float64,
      cnt Float64,
      buckets String`,
    engine: 'ReplacingMergeTree',
    version: 'time_us',
    partition: 'date',
    order: 'series_id',
    granularity: 1024,
    shardKey: 'series_id',
  },
];

/**
 * Per series and window (the widths SQLite rolls up: an hour and five minutes, each dividing a day,
 * which retention drops whole), the totals of the points: a query reads them for its whole windows.
 */
const METRIC_ROLLUP_TABLES: TableDef[] = [
  {
    name: 'metric_rollup',
    columns: `date Date,
      series_id UInt64,
      width_us Int64,
      bucket_us Int64,
      d AggregateFunction(sum, Float64),
      v AggregateFunction(sum, Float64),
      c AggregateFunction(sum, Float64),
      n AggregateFunction(count),
      mn AggregateFunction(min, Float64),
      mx AggregateFunction(max, Float64)`,
    engine: 'AggregatingMergeTree',
    partition: 'date',
    order: '(series_id, width_us, bucket_us)',
    shardKey: 'series_id',
  },
  {
    name: 'metric_bucket_rollup',
    columns: `date Date,
      series_id UInt64,
      width_us Int64,
      bucket_us Int64,
      edge_lo Float64,
      edge_hi Float64,
      c AggregateFunction(sum, Float64)`,
    engine: 'AggregatingMergeTree',
    partition: 'date',
    order: '(series_id, width_us, bucket_us, edge_lo, edge_hi)',
    shardKey: 'series_id',
  },
];

/** Two views per roll-up width: the points' totals, and their buckets added up by edges. */
const METRIC_VIEWS: ViewDef[] = ROLLUP_WIDTHS_US.flatMap((w): ViewDef[] => {
  const window = `toInt64(${w}) AS width_us, intDiv(time_us, ${w}) * ${w} AS bucket_us`;
  return [
    {
      name: `metric_rollup_${w / 1e6}s_mv`,
      target: 'metric_rollup',
      source: 'metric_points',
      select: (points) => `SELECT date, series_id, ${window},
        sumState(ifNull(delta, 0)) AS d, sumState(value) AS v, sumState(ifNull(cnt, 0)) AS c, countState() AS n,
        minState(ifNull(lo, value)) AS mn, maxState(ifNull(hi, value)) AS mx
        FROM ${points} GROUP BY date, series_id, width_us, bucket_us`,
    },
    {
      name: `metric_bucket_rollup_${w / 1e6}s_mv`,
      target: 'metric_bucket_rollup',
      source: 'metric_points',
      select: (points) => `SELECT date, series_id, ${window}, l AS edge_lo, h AS edge_hi, sumState(x) AS c
        FROM ${points} ARRAY JOIN blo AS l, bhi AS h, bc AS x
        GROUP BY date, series_id, width_us, bucket_us, edge_lo, edge_hi`,
    },
  ];
});

/**
 * Version 3: metric points in ClickHouse (they were in each collector's own metrics.sqlite), so
 * every collector answers for the metrics any of them received. Points a version 2 collector
 * stored in its metrics.sqlite stay there.
 */
function metricStatements(t: SchemaTarget): string[] {
  return [
    ...tableStatements(t, [...METRIC_TABLES, ...METRIC_ROLLUP_TABLES]),
    ...viewStatements(t, METRIC_VIEWS),
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

/**
 * The migrations table: one row per applied version, on each node (a collector talking to another
 * node runs the idempotent statements again and records them there).
 */
export function migrationsTable(t: SchemaTarget): string {
  return `CREATE TABLE IF NOT EXISTS ${t.database}.schema_migrations${onCluster(t)} (version UInt32, applied_at DateTime) ENGINE = MergeTree() ORDER BY version`;
}

/** Migrations by target version: what turns version n-1 into n. */
export const MIGRATIONS: Record<number, (t: SchemaTarget) => string[]> = {
  1: schemaStatements,
  2: rollupStatements,
  3: metricStatements,
  4: (t) => tableStatements(t, [ALERT_WINDOWS_TABLE]),
};
