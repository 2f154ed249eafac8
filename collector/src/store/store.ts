// The storage boundary: ingest writes batches to a store, the HTTP API reads through it, and each
// store runs query plans (query/plan.ts) its own way. Two stores: SQLite (sqlite-store.ts, the
// embedded default) and ClickHouse (clickhouse/clickhouse-store.ts, for several collectors on one
// database).
import type { ExportPageReader } from './export-page.js';
import type { QueryOptions } from '../query/engine.js';
import type { LogQuery } from '../logs/log-query.js';
import type { MetricRead } from '../metrics/metric-read.js';
import type { MetricStore } from '../metrics/metric-store.js';
import type { LogRecord, SessionResponse, SessionSummary, SpanRecord, TraceSummary } from '../wire-types.js';
import type { RetentionOptions, TraceListFilter } from './read-options.js';

export type { RetentionOptions, TraceListFilter };

/** The spans of a backend: the query language, trace and session views, lists. Reads are async. */
export interface SpanBackend {
  /**
   * Runs a query; resolves with the QueryResponse as JSON bytes. A query the language refuses, or
   * one that runs past its deadline, rejects with QueryFailure (the 400 body).
   */
  queryJson(query: string, range?: Pick<QueryOptions, 'startMs' | 'endMs'>): Promise<Uint8Array>;
  /** GET /api/traces/:traceId's body (TraceResponse) as JSON bytes; undefined: no such trace. */
  traceJson(traceId: string): Promise<Uint8Array | undefined>;
  /** GET /api/sessions/:sessionId's body (SessionResponse) as JSON bytes; undefined: none. */
  sessionJson(sessionId: string): Promise<Uint8Array | undefined>;
  spansOfTrace(traceId: string): Promise<SpanRecord[]>;
  listTraces(filter?: TraceListFilter): Promise<TraceSummary[]>;
  listSessions(limit?: number): Promise<SessionSummary[]>;
  getSession(sessionId: string): Promise<SessionResponse | undefined>;
  services(): Promise<{ name: string; spanCount: number; lastSeenUnixNano: number }[]>;
  attributeKeys(): Promise<string[]>;
  /** Background upkeep of summaries; returns how many were refreshed (0: nothing to do). */
  refreshSummaries(limit: number): Promise<number>;
}

/** The log records of a backend. */
export interface LogBackend {
  /** GET /api/logs on a query thread, under the query deadline: the LogQueryResult as JSON bytes. */
  json(query: LogQuery): Promise<Uint8Array>;
  ofTrace(traceId: string): Promise<LogRecord[]>;
}

/** The metric points of a backend: metrics.sqlite in the data dir, or ClickHouse's metric tables. */
export interface MetricBackend extends MetricStore {
  /**
   * A metric read (names, or a time-series query) on a query thread, with a query's deadline, caps
   * and 429; resolves with its answer as JSON bytes. A bad question rejects with QueryFailure (its
   * status 404 for an unknown metric name).
   */
  json(read: MetricRead): Promise<Uint8Array>;
}

/** One rule and group's saved alert window: its JSON text, or null for a group that is gone. */
export interface SavedAlertWindow {
  rule: string;
  group: string;
  json: string | null;
}

/**
 * The cost alert windows (alerts/alert-state.ts), kept where the spans are: every collector on one
 * store reads the same windows. The store keeps the text; the alerts check it when they read it.
 */
export interface AlertWindowBackend {
  /** Every group's last saved window (none for a group saved as gone), whichever collector saved it. */
  read(): Promise<{ rule: string; group: string; json: string }[]>;
  /** Saves these groups' windows, or forgets a group (json null); every other group keeps its own. */
  write(windows: readonly SavedAlertWindow[]): Promise<void>;
}

/** What /healthz says of the store: `ok` false answers 503 with `detail` beside the counters. */
export interface BackendHealth {
  ok: boolean;
  detail?: Record<string, unknown>;
}

/**
 * One store behind the collector (openBackend), by signal. The HTTP layer reaches the data only
 * through it, whatever the store is.
 */
export interface Backend {
  /** Where the data is (a file path, or the ClickHouse URL without its password). */
  readonly location: string;
  readonly spans: SpanBackend;
  readonly logs: LogBackend;
  readonly metrics: MetricBackend;
  readonly alertWindows: AlertWindowBackend;
  /**
   * Stores one request's spans and logs, all or nothing; resolves once they are durable (committed
   * in SQLite, acknowledged by ClickHouse). Requests arriving together may be written together.
   */
  write(spans: SpanRecord[], logs: LogRecord[]): Promise<void>;
  /**
   * How long ingest holds a request for others to join its write: 0 for a store that batches
   * requests itself.
   */
  readonly ingestLingerMs: number;
  /**
   * Why writes cannot be taken now (writer thread down, ClickHouse unreachable, a corrupt file:
   * StoreUnavailableError or StoreCorruptError), or undefined.
   */
  unwritable(): Error | undefined;
  /**
   * An error a read or write failed with, as clients should see it: SQLite's corruption marks the
   * store corrupt and becomes StoreCorruptError; anything else is returned as it is.
   */
  failure(error: unknown): unknown;
  health(): BackendHealth;
  /**
   * One page of an export (http/export.ts streams them): the records after `after`, oldest first.
   * Pages read what is stored: an export first waits for caughtUp(), once.
   */
  exportPage: ExportPageReader;
  /** Resolves once every record acknowledged before the call can be read (ClickHouse: shipped). */
  caughtUp(): Promise<void>;
  /** Returns the number of records (or, for whole partitions, rows) deleted. */
  applyRetention(options: RetentionOptions): Promise<number>;
  /** The query threads' counters, for /healthz. */
  queryStats(): Record<string, number>;
  /** Closes the store and its metric store. */
  close(): Promise<void>;
}

/**
 * The store cannot answer now (ClickHouse unreachable or too slow). The HTTP layer answers 503 with
 * Retry-After; the store recovers by itself.
 */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}

/**
 * The store's file is damaged: nothing is written to it (503) until the collector restarts on a
 * sound file. The message is the client's: it names no path on the host.
 */
export class StoreCorruptError extends Error {
  override name = 'StoreCorruptError';
}

/** A store setting that cannot work (bad URL, a server too old for a feature). */
export class StoreConfigError extends Error {
  override name = 'StoreConfigError';
}

/** Where ClickHouse is, parsed from `clickhouse://user:pass@host:8123/db?cluster=name&replicated=1`. */
export interface ClickHouseLocation {
  /** http://host:port of the HTTP interface. */
  url: string;
  username: string;
  password: string;
  database: string;
  /** `<remote_servers>` cluster: tables are created ON CLUSTER with Distributed tables over them. */
  cluster?: string;
  /** With a cluster: ReplicatedMergeTree (needs ZooKeeper and `shard`/`replica` macros). */
  replicated: boolean;
  /**
   * An INSERT or read not answered within this is a failure: ingest answers 503 + Retry-After and
   * the store is marked down until a probe answers (`?timeout_ms=`, default 10 000).
   */
  requestTimeoutMs?: number;
}

export type StoreSetting = { kind: 'sqlite' } | ({ kind: 'clickhouse' } & ClickHouseLocation);

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Parses AGENTRT_STORE / --store: `sqlite` (default) or
 * `clickhouse://user:pass@host:8123/db` (`clickhouses://` for HTTPS), with `?cluster=name`,
 * `&replicated=1` and `&timeout_ms=`. Throws StoreConfigError naming what is wrong.
 */
export function parseStoreSetting(value: string | undefined): StoreSetting {
  const v = value?.trim();
  if (!v || v === 'sqlite') return { kind: 'sqlite' };
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new StoreConfigError(
      `store ${JSON.stringify(v)} is not 'sqlite' or a clickhouse://user:pass@host:8123/db URL`,
    );
  }
  if (u.protocol !== 'clickhouse:' && u.protocol !== 'clickhouses:') {
    throw new StoreConfigError(
      `store URL scheme ${JSON.stringify(u.protocol)} is not clickhouse: or clickhouses:`,
    );
  }
  const database = decodeURIComponent(u.pathname.replace(/^\//, '')) || 'agentrt';
  if (!IDENT.test(database)) {
    throw new StoreConfigError(`store database ${JSON.stringify(database)} must be letters, digits and _`);
  }
  const cluster = u.searchParams.get('cluster') || undefined;
  if (cluster !== undefined && !IDENT.test(cluster)) {
    throw new StoreConfigError(`store cluster ${JSON.stringify(cluster)} must be letters, digits and _`);
  }
  const replicated = ['1', 'true', 'yes'].includes(u.searchParams.get('replicated') ?? '');
  if (replicated && !cluster) throw new StoreConfigError('store replicated=1 needs cluster=<name>');
  const location: StoreSetting = {
    kind: 'clickhouse',
    url: `${u.protocol === 'clickhouses:' ? 'https' : 'http'}://${u.hostname.includes(':') ? `[${u.hostname}]` : u.hostname}:${u.port || (u.protocol === 'clickhouses:' ? '8443' : '8123')}`,
    username: decodeURIComponent(u.username) || 'default',
    password: decodeURIComponent(u.password),
    database,
    replicated,
  };
  if (cluster) location.cluster = cluster;
  const timeout = u.searchParams.get('timeout_ms');
  if (timeout !== null) {
    const ms = Number(timeout);
    if (!Number.isInteger(ms) || ms < 100 || ms > 600_000)
      throw new StoreConfigError(
        `store timeout_ms ${JSON.stringify(timeout)} must be a whole number from 100 to 600000`,
      );
    location.requestTimeoutMs = ms;
  }
  return location;
}
