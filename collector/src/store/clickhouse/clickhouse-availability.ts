// Whether ClickHouse answers, as the store last found: a failed statement marks it down (reads
// fail fast meanwhile, ingest is spooled), and a probe finds it back. The store's INSERTs (metric
// points, alert windows) are here too: one that finds ClickHouse gone is what marks it down.
import { Readable } from 'node:stream';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from '../../logger.js';
import { StoreUnavailableError } from '../store.js';
import type { ClickHouseStatements } from './clickhouse-client.js';

export interface AvailabilityOptions {
  client: ClickHouseClient;
  logger: Logger;
  url: string;
  probeIntervalMs: number;
  /** Called once ClickHouse answers again. */
  onBack(): void;
}

export function createAvailability({ client, logger, url, probeIntervalMs, onBack }: AvailabilityOptions) {
  /** Why reads fail now (ClickHouse not answering), until the probe finds it back. */
  let down: StoreUnavailableError | undefined;
  let probe: NodeJS.Timeout | undefined;
  let closed = false;

  const probeOnce = () =>
    client.ping().then(
      (r) => {
        if (!r.success || !down) return;
        logger.info('clickhouse is back', { url });
        down = undefined;
        onBack();
        clearInterval(probe);
        probe = undefined;
      },
      () => undefined,
    );

  return {
    down: () => down,
    markDown(error: StoreUnavailableError): void {
      if (!down)
        logger.warn('clickhouse unavailable; ingest is spooled until it is back', { error: error.message });
      down = error;
      if (probe || closed) return;
      probe = setInterval(probeOnce, probeIntervalMs);
      probe.unref();
    },
    close(): void {
      closed = true;
      clearInterval(probe);
    },
  };
}

export type Availability = ReturnType<typeof createAvailability>;

/**
 * INSERTs of TabSeparated lines, at most `maxBatch` lines a statement. A ClickHouse that is not
 * there marks the store down and rejects with StoreUnavailableError.
 */
export function createInserter(options: {
  client: ClickHouseClient;
  table: (name: string) => string;
  insertSettings: Record<string, 0 | 1>;
  maxBatch: number;
  sql: ClickHouseStatements;
  availability: Availability;
}) {
  const { client, table, insertSettings, maxBatch, sql, availability } = options;
  return async (name: string, columns: readonly string[], lines: string[]): Promise<void> => {
    try {
      for (let i = 0; i < lines.length; i += maxBatch)
        await client.insert({
          table: table(name),
          columns: columns as [string, ...string[]],
          // One buffer as the body (raw formats take a byte stream, not objects).
          values: Readable.from([Buffer.from(lines.slice(i, i + maxBatch).join(''))], { objectMode: false }),
          format: 'TabSeparated',
          clickhouse_settings: insertSettings,
        });
    } catch (error) {
      const e = sql.unavailableOr(error);
      if (e instanceof StoreUnavailableError) availability.markDown(e);
      throw e;
    }
  };
}
