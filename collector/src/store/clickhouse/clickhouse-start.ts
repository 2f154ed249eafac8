// A ClickHouse store's start-up: wait for the server, check that it is a release this collector
// runs on, then create or migrate the schema.
import type { Logger } from '../../logger.js';
import { StoreConfigError, StoreUnavailableError } from '../store.js';
import type { ClickHouseStatements } from './clickhouse-client.js';
import { type SchemaTarget, migrationsTable } from './schema-ddl.js';
import { CLICKHOUSE_SCHEMA_VERSION, MIGRATIONS, MIN_CLICKHOUSE_VERSION } from './schema.js';

/** Compares a version string like 18.16.1 with [major, minor]. */
export function versionAtLeast(version: string, min: readonly [number, number]): boolean {
  const [major = 0, minor = 0] = version.split('.').map((p) => Number.parseInt(p, 10));
  return major > min[0] || (major === min[0] && minor >= min[1]);
}

/** `SELECT version()` once the server answers (within `connectTimeoutMs`), checked against the oldest supported. */
export async function serverVersionOf(
  { select }: ClickHouseStatements,
  url: string,
  connectTimeoutMs: number,
): Promise<string> {
  const deadline = Date.now() + connectTimeoutMs;
  let version: string;
  for (;;) {
    try {
      version = (await select<{ v: string }>('SELECT version() AS v'))[0]!.v;
      break;
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) || Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  if (!versionAtLeast(version, MIN_CLICKHOUSE_VERSION))
    throw new StoreConfigError(
      `ClickHouse ${version} at ${url} is older than ${MIN_CLICKHOUSE_VERSION.join('.')}, the oldest release this collector runs on`,
    );
  return version;
}

/** Creates the database and runs the migrations it has not had; a newer schema than ours is refused. */
export async function migrate(
  sql: ClickHouseStatements,
  target: SchemaTarget,
  serverVersion: string,
  logger: Logger,
): Promise<void> {
  const ddl = async (statement: string): Promise<void> => {
    try {
      await sql.command(statement);
    } catch (error) {
      if (error instanceof StoreUnavailableError) throw error;
      throw new StoreConfigError(
        `ClickHouse ${serverVersion} could not run ${JSON.stringify(statement.replace(/\s+/g, ' ').slice(0, 120))}: ${(error as Error).message}`,
        { cause: error },
      );
    }
  };
  await ddl(
    `CREATE DATABASE IF NOT EXISTS ${target.database}${target.cluster ? ` ON CLUSTER ${target.cluster}` : ''}`,
  );
  await ddl(migrationsTable(target));
  const [row] = await sql.select<{ v: number }>(
    `SELECT max(version) AS v FROM ${target.database}.schema_migrations`,
  );
  const have = Number(row?.v ?? 0);
  if (have > CLICKHOUSE_SCHEMA_VERSION) {
    throw new StoreConfigError(
      `the ClickHouse schema in ${target.database} is version ${have}, newer than this collector's ${CLICKHOUSE_SCHEMA_VERSION}; upgrade the collector`,
    );
  }
  for (let v = have + 1; v <= CLICKHOUSE_SCHEMA_VERSION; v++) {
    for (const statement of MIGRATIONS[v]!(target)) await ddl(statement);
    await sql.command(`INSERT INTO ${target.database}.schema_migrations VALUES (${v}, now())`);
    logger.info('clickhouse schema migrated', { version: v, database: target.database });
  }
}
