// Opens the store a setting names as one Backend (store.ts): the only place that knows which
// stores exist. The HTTP layer and the background jobs see the Backend, never a store kind.
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import type { MetricLimits } from '../metrics/metric-store.js';
import { createClickHouseStore } from './clickhouse/clickhouse-store.js';
import { createSqliteStore } from './sqlite/sqlite-store.js';
import type { Backend, StoreSetting } from './store.js';

export interface BackendOptions {
  /** The data dir: SQLite's files (ClickHouse keeps none there). */
  dataDir: string;
  logger: Logger;
  traceIndexPercent: number;
  queryWorkers: number;
  queryTimeoutMs: number;
  integrityCheckMinutes: number;
  /** How long a request waits for others to be written with it (AGENTRT_INGEST_LINGER_MS). */
  ingestLingerMs: number;
  metricLimits?: Partial<MetricLimits>;
  /** ClickHouse: the spool's limit (MiB) and how long a spooled request waits to be shipped. */
  spoolMb: number;
  spoolShipMs: number;
}

/** Opens (creates, migrates) the store of `setting`; throws StoreConfigError naming what is wrong. */
export async function openBackend(setting: StoreSetting, options: BackendOptions): Promise<Backend> {
  const limits = options.metricLimits ? { metricLimits: options.metricLimits } : {};
  if (setting.kind === 'clickhouse') {
    return createClickHouseStore({
      ...setting,
      logger: options.logger,
      queryTimeoutMs: options.queryTimeoutMs,
      queryWorkers: options.queryWorkers,
      spoolDir: join(options.dataDir, 'clickhouse-spool'),
      spoolMaxBytes: options.spoolMb * 1024 * 1024,
      shipDelayMs: options.spoolShipMs,
      ...limits,
    });
  }
  return createSqliteStore({
    dataDir: options.dataDir,
    traceIndexPercent: options.traceIndexPercent,
    logger: options.logger,
    queryWorkers: options.queryWorkers,
    queryTimeoutMs: options.queryTimeoutMs,
    integrityCheckMinutes: options.integrityCheckMinutes,
    ingestLingerMs: options.ingestLingerMs,
    ...limits,
  });
}
