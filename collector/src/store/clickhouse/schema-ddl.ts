// The ClickHouse DDL the schema is written in (schema.ts and its versions): table and view
// definitions turned into CREATE statements, local and Distributed names with a cluster, engines
// (Replicated with one), and the migrations table.

export interface SchemaTarget {
  database: string;
  cluster?: string;
  replicated: boolean;
}

/** The table a statement writes to or reads from: local with a cluster. */
export function localName(t: SchemaTarget, table: string): string {
  return t.cluster ? `${t.database}.${table}_local` : `${t.database}.${table}`;
}

/** The table reads and inserts go through (the Distributed one with a cluster). */
export function tableName(t: SchemaTarget, table: string): string {
  return `${t.database}.${table}`;
}

export const onCluster = (t: SchemaTarget): string => (t.cluster ? ` ON CLUSTER ${t.cluster}` : '');

export function engine(
  t: SchemaTarget,
  table: string,
  kind: 'MergeTree' | 'AggregatingMergeTree' | 'ReplacingMergeTree',
  version?: string,
): string {
  if (!t.replicated) return `${kind}(${version ?? ''})`;
  return `Replicated${kind}('/clickhouse/tables/{shard}/${t.database}.${table}', '{replica}'${version ? `, ${version}` : ''})`;
}

export interface TableDef {
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

/** A materialized view: what `select` makes of each INSERT into `source` (default spans) goes to `target`. */
export interface ViewDef {
  name: string;
  target: string;
  source?: string;
  select: (source: string) => string;
}

/** CREATE TABLE (and its Distributed table with a cluster) for each table. */
export function tableStatements(t: SchemaTarget, tables: readonly TableDef[]): string[] {
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
export function viewStatements(t: SchemaTarget, views: readonly ViewDef[]): string[] {
  return views.map(
    (v) =>
      `CREATE MATERIALIZED VIEW IF NOT EXISTS ${t.database}.${v.name}${onCluster(t)} TO ${localName(t, v.target)} AS ${v.select(localName(t, v.source ?? 'spans'))}`,
  );
}

/**
 * The migrations table: one row per applied version, on each node (a collector talking to another
 * node runs the idempotent statements again and records them there).
 */
export function migrationsTable(t: SchemaTarget): string {
  return `CREATE TABLE IF NOT EXISTS ${t.database}.schema_migrations${onCluster(t)} (version UInt32, applied_at DateTime) ENGINE = MergeTree() ORDER BY version`;
}
