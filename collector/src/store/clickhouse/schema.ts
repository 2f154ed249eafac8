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
//   attribute_keys distinct attribute keys for autocompletion, a view.
//   logs           log records, by trace.
// All but attribute_keys are partitioned by day; retention drops whole partitions.

/** The schema version this collector writes; older ones are migrated at start. */
export const CLICKHOUSE_SCHEMA_VERSION = 1;

/** The oldest ClickHouse release the schema and queries are tested with. */
export const MIN_CLICKHOUSE_VERSION = [18, 16] as const;

export interface SchemaTarget {
  database: string;
  cluster?: string;
  replicated: boolean;
}

/** Tables partitioned by day, dropped partition by partition by retention. */
export const DAILY_TABLES = ['spans', 'trace_spans', 'traces', 'session_traces', 'logs'] as const;

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
): string {
  if (!t.replicated) return `${kind}()`;
  return `Replicated${kind}('/clickhouse/tables/{shard}/${t.database}.${table}', '{replica}')`;
}

interface TableDef {
  name: string;
  columns: string;
  engine: 'MergeTree' | 'AggregatingMergeTree' | 'ReplacingMergeTree';
  partition?: string;
  order: string;
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
  },
  {
    name: 'attribute_keys',
    columns: 'key String',
    engine: 'ReplacingMergeTree',
    order: 'key',
  },
  {
    name: 'logs',
    columns: `date Date, time_ns UInt64, time_us Int64, trace_id String, span_id String, severity Int32, doc String`,
    engine: 'MergeTree',
    partition: 'date',
    order: '(trace_id, time_ns)',
  },
];

const VIEWS: { name: string; target: string; select: (spans: string) => string }[] = [
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
    select: (spans) => `SELECT DISTINCT arrayJoin(arrayConcat(
      arrayMap(k -> concat('attributes.', k), attr_keys),
      arrayMap(k -> concat('resource.attributes.', k), res_keys))) AS key FROM ${spans}`,
  },
];

/** Statements creating schema version 1 (all idempotent: IF NOT EXISTS). */
export function schemaStatements(t: SchemaTarget): string[] {
  const out = [`CREATE DATABASE IF NOT EXISTS ${t.database}${onCluster(t)}`];
  for (const def of TABLES) {
    const local = localName(t, def.name);
    out.push(
      `CREATE TABLE IF NOT EXISTS ${local}${onCluster(t)} (${def.columns}) ENGINE = ${engine(t, `${def.name}_local`, def.engine)}${def.partition ? ` PARTITION BY ${def.partition}` : ''} ORDER BY ${def.order}`,
    );
    if (t.cluster) {
      out.push(
        `CREATE TABLE IF NOT EXISTS ${tableName(t, def.name)}${onCluster(t)} AS ${local} ENGINE = Distributed(${t.cluster}, ${t.database}, ${def.name}_local, cityHash64(${def.name === 'attribute_keys' ? 'key' : 'trace_id'}))`,
      );
    }
  }
  for (const v of VIEWS) {
    out.push(
      `CREATE MATERIALIZED VIEW IF NOT EXISTS ${t.database}.${v.name}${onCluster(t)} TO ${localName(t, v.target)} AS ${v.select(localName(t, 'spans'))}`,
    );
  }
  return out;
}

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
};
