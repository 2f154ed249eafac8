// The ClickHouse store's connections: the store's own (writes, reads) and each query thread's
// (clickhouse-query-worker.ts) are made here alike, and fail alike.
import { type ClickHouseClient, ClickHouseError, ClickHouseLogLevel, createClient } from '@clickhouse/client';

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
