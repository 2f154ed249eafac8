// The ClickHouse store's span and log writes: a request's records are encoded as RowBinary rows
// (row-binary.ts), appended to the local spool and fsynced — then acknowledged — and the shipper
// sends them to ClickHouse in large batches. While ClickHouse is down the spool absorbs ingest up to
// its limit; past it, writes are refused (503 + Retry-After). Reads on this collector first ship
// what it acknowledged (read your writes); other collectors see it within the shipper's delay.
import { Readable } from 'node:stream';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from '../../logger.js';
import type { LogRecord, SpanRecord } from '../../wire-types.js';
import { StoreUnavailableError } from '../store.js';
import { type Shipper, startShipper } from './clickhouse-shipper.js';
import { createLogRowEncoder, createSpanRowEncoder } from './row-binary.js';
import { LOG_COLUMNS, SPAN_COLUMNS, literal } from './rows.js';
import { encodeFrame, frameRows } from './spool-frame.js';
import { openSpool } from './spool.js';
import { viewsAfterTraceSpans } from './schema.js';

/** Trace ids per lookup of stored spans: each is ~36 bytes of a statement (max_query_size 256 KiB). */
const TRACES_PER_LOOKUP = 4000;

export interface ClickHouseWriterOptions {
  client: ClickHouseClient;
  logger: Logger;
  /** A table's name in the store's database. */
  table(name: string): string;
  select<T>(sql: string): Promise<T[]>;
  /** Settings of every INSERT (a cluster's insert_distributed_sync). */
  insertSettings: Record<string, 0 | 1>;
  /** The spool's folder (the collector's data dir) and its limit. */
  spoolDir: string;
  spoolMaxBytes: number;
  /** How long the oldest spooled request waits for others before it is shipped (default 1000 ms). */
  shipDelayMs?: number;
  /** A batch failed because ClickHouse is not there: the store marks itself down. */
  onUnreachable(error: unknown): StoreUnavailableError | undefined;
}

/** Opens the spool (what a previous run left is shipped first) and starts its shipper. */
export function createClickHouseWriter(options: ClickHouseWriterOptions) {
  const { client, table } = options;
  const spool = openSpool(
    { dir: options.spoolDir, maxBytes: options.spoolMaxBytes, logger: options.logger },
    frameRows,
  );
  const encodeSpans = createSpanRowEncoder();
  const encodeLogs = createLogRowEncoder();
  const columns = { spans: SPAN_COLUMNS.join(', '), logs: LOG_COLUMNS.join(', ') };

  /** One INSERT of RowBinary rows: the body is sent as it is, ClickHouse's answer read to its end. */
  async function insert(name: 'spans' | 'logs', body: Buffer): Promise<void> {
    try {
      const result = await client.exec({
        query: `INSERT INTO ${table(name)} (${columns[name]}) FORMAT RowBinary`,
        values: Readable.from([body], { objectMode: false }),
        clickhouse_settings: options.insertSettings,
      });
      for await (const _ of result.stream) {
        // The answer of an INSERT is empty; reading it frees the connection.
      }
    } catch (error) {
      throw options.onUnreachable(error) ?? error;
    }
  }

  /** `trace/span` keys of `table`'s rows of these traces (in these partitions), TRACES_PER_LOOKUP at a time. */
  async function keysIn(table: string, traceIds: string[], inDays?: string): Promise<Set<string>> {
    const where = inDays ? `${inDays} AND ` : '';
    const keys = new Set<string>();
    for (let i = 0; i < traceIds.length; i += TRACES_PER_LOOKUP) {
      const ids = traceIds.slice(i, i + TRACES_PER_LOOKUP).map(literal);
      const rows = await options.select<{ t: string; s: string }>(
        `SELECT trace_id AS t, span_id AS s FROM ${options.table(table)} PREWHERE ${where}trace_id IN (${ids.join(', ')})`,
      );
      for (const r of rows) keys.add(`${r.t}/${r.s}`);
    }
    return keys;
  }

  /**
   * Spans in `spans` that a ClickHouse stopped mid-INSERT left out of trace_spans and traces: those
   * views get their rows from `spans` now (viewsAfterTraceSpans), so the span is stored once, whole.
   */
  async function repair(keys: string[], inDays: string): Promise<void> {
    const tuples = keys.map((k) => {
      const slash = k.indexOf('/');
      return `(${literal(k.slice(0, slash))}, ${literal(k.slice(slash + 1))})`;
    });
    const source = `(SELECT * FROM ${options.table('spans')} WHERE ${inDays} AND (trace_id, span_id) IN (${tuples.join(', ')}))`;
    for (const v of viewsAfterTraceSpans(source))
      await client.command({
        query: `INSERT INTO ${options.table(v.target)} ${v.select}`,
        clickhouse_settings: options.insertSettings,
      });
    options.logger.warn('spool: ClickHouse stopped in the middle of an INSERT; its views were completed', {
      spans: keys.length,
    });
  }

  /**
   * The `trace/span` keys ClickHouse holds of these traces. An exporter retries a request whose
   * answer it did not get (the collector died after the spool took it, or the answer was lost), at
   * this collector or another: its spans are found by (trace id, span id) in trace_spans — ordered
   * by trace id, so only the batch's traces' granules are read — and left out, as SQLite's unique
   * (trace, span) key leaves them out. A frame shipped but not yet marked shipped when the collector
   * was killed is shipped again after the restart and found the same way.
   *
   * `days` (the batch's partition days, YYYY-MM-DD) asks for the thorough lookup, after a failed batch or a
   * restart: ClickHouse stopped between an INSERT's spans part and its views holds spans that only
   * `spans` has (read by the days' partitions); they count as stored, and their views are repaired.
   */
  async function stored(traceIds: string[], days?: string[]): Promise<Set<string>> {
    try {
      const keys = await keysIn('trace_spans', traceIds);
      if (!days?.length) return keys;
      const inDays = `date IN (${days.map((d) => `toDate(${literal(d)})`).join(', ')})`;
      const partial = [...(await keysIn('spans', traceIds, inDays))].filter((k) => !keys.has(k));
      if (partial.length) await repair(partial, inDays);
      for (const k of partial) keys.add(k);
      return keys;
    } catch (error) {
      throw options.onUnreachable(error) ?? error;
    }
  }

  const shipper: Shipper = startShipper({
    spool,
    logger: options.logger,
    insert,
    stored,
    ...(options.shipDelayMs !== undefined ? { maxDelayMs: options.shipDelayMs } : {}),
  });

  return {
    /** Spools one request's records; resolves once they are on disk. */
    async write(spans: SpanRecord[], logs: LogRecord[]): Promise<void> {
      if (!spans.length && !logs.length) return;
      const s = encodeSpans(spans);
      const frame = encodeFrame({ ...s, keys: s.keys! }, encodeLogs(logs));
      try {
        await spool.append(frame, spans.length + logs.length);
      } catch (error) {
        throw new StoreUnavailableError(`cannot spool the records: ${(error as Error).message}`, {
          cause: error,
        });
      }
      shipper.appended();
    },
    /** Why writes are refused now (the spool is full or its disk failed), or undefined. */
    unwritable(): StoreUnavailableError | undefined {
      const refused = spool.refusal();
      return refused ? new StoreUnavailableError(`${refused}; ClickHouse is behind or down`) : undefined;
    },
    /** Ships what this collector acknowledged; resolves once ClickHouse has it or the try failed. */
    caughtUp: (): Promise<void> => shipper.flush().catch(() => undefined),
    /** ClickHouse answers again (the store's probe): ship without waiting out the back-off. */
    retryNow: (): void => shipper.retryNow(),
    /** Spooled records not in ClickHouse yet, and their bytes (for /healthz). */
    stats: (): Record<string, number> => ({ pendingRecords: shipper.pendingRows, bytes: spool.bytes }),
    /** Ships what it can for a few seconds, then closes the spool (the rest waits for the next start). */
    async close(): Promise<void> {
      await shipper.close();
      await spool.close();
    },
  };
}
