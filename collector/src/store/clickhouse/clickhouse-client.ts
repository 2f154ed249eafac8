// The ClickHouse store's connections: the store's own (writes, reads) and each query thread's
// (clickhouse-query-worker.ts) are made here alike, and fail alike.
import { type ClickHouseClient, ClickHouseError, ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { StoreUnavailableError } from '../store.js';

/** Where and how to connect (a ClickHouseLocation's connection part). */
export interface ClickHouseConnection {
  url: string;
  username: string;
  password: string;
  requestTimeoutMs: number;
}

/** An HTTP client to ClickHouse; `settings` go on every statement besides the store's own. */
export function connectClickHouse(
  c: ClickHouseConnection,
  settings: Record<string, number> = {},
): ClickHouseClient {
  return createClient({
    url: c.url,
    username: c.username,
    password: c.password,
    request_timeout: c.requestTimeoutMs,
    log: { level: ClickHouseLogLevel.OFF },
    clickhouse_settings: {
      // Numbers as JSON numbers (ids are strings anyway; ns times lose nothing JS did not already).
      output_format_json_quote_64bit_integers: 0,
      ...settings,
    },
  });
}

/** Network-level failures: ClickHouse is not there or did not answer in time. */
export function isUnreachable(error: unknown): boolean {
  const e = error as { code?: string; message?: string; name?: string } | undefined;
  if (!e || error instanceof ClickHouseError) return false;
  return (
    /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN|socket hang up|Timeout error|timed out|other side closed/i.test(
      `${e.code ?? ''} ${e.message ?? ''}`,
    ) || e.name === 'AbortError'
  );
}

/** A read decoding rows gives the event loop a turn this often (ms). */
const BREATHE_EVERY_MS = 5;

/** The statements a store runs on `client`; a ClickHouse not answering fails with StoreUnavailableError. */
export function clickHouseStatements(client: ClickHouseClient, url: string, cluster: string | undefined) {
  function unavailableOr(error: unknown): Error {
    if (!isUnreachable(error)) return error as Error;
    return new StoreUnavailableError(`ClickHouse at ${url} is not answering (${(error as Error).message})`, {
      cause: error,
    });
  }

  /**
   * Runs a SELECT and hands each row to `each` as it is decoded. Every few milliseconds of that work
   * it gives the event loop a turn: a read of thousands of whole records (a session list parses
   * every span of its traces) would otherwise hold up ingest and /healthz for as long as a second.
   */
  async function eachRow<T>(sql: string, each: (row: T) => void): Promise<void> {
    try {
      const rs = await client.query({ query: sql, format: 'JSONEachRow' });
      let turn = performance.now();
      for await (const rows of rs.stream<T>()) {
        for (const row of rows) each(row.json());
        if (performance.now() - turn > BREATHE_EVERY_MS) {
          await new Promise((resolve) => setImmediate(resolve));
          turn = performance.now();
        }
      }
    } catch (error) {
      throw unavailableOr(error);
    }
  }

  async function select<T>(sql: string): Promise<T[]> {
    const out: T[] = [];
    await eachRow<T>(sql, (row) => out.push(row));
    return out;
  }

  async function command(sql: string): Promise<void> {
    try {
      await client.command({
        query: sql,
        clickhouse_settings: cluster ? { distributed_ddl_task_timeout: '60' } : {},
      });
    } catch (error) {
      throw unavailableOr(error);
    }
  }

  return { eachRow, select, command, unavailableOr };
}

export type ClickHouseStatements = ReturnType<typeof clickHouseStatements>;
