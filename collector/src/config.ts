import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';

/** Everything the collector process can be configured with. */
export interface CollectorConfig {
  /** Listen port; 0 picks a free one. Env AGENTRT_COLLECTOR_PORT, default 4318. */
  port: number;
  /** Bind address; 0.0.0.0 in containers. Env AGENTRT_COLLECTOR_HOST, default 127.0.0.1. */
  host: string;
  /** Directory of the SQLite store. Env AGENTRT_DATA_DIR, default `<cwd>/.data/collector`. */
  dataDir: string;
  /** Share of traces given a trace summary (0–100). Env AGENTRT_TRACE_INDEX_PERCENT, default 100. */
  traceIndexPercent: number;
  /** Cap on a request body after decompression. Env AGENTRT_MAX_BODY_BYTES, default 20 MiB. */
  maxBodyBytes: number;
  /** Records not yet committed before 429. Env AGENTRT_MAX_PENDING_RECORDS, default 100000. */
  maxPendingRecords: number;
  /**
   * How long a request is held for others to join its transaction. Env AGENTRT_INGEST_LINGER_MS,
   * default 0: the writer thread already commits together whatever arrived while it was busy, so a
   * wait only adds latency.
   */
  ingestLingerMs: number;
  /** ClickHouse store: unshipped spool MiB past which ingest answers 503 (AGENTRT_SPOOL_MB). */
  spoolMb: number;
  /** ClickHouse store: how long a spooled request waits for others before it is shipped (AGENTRT_SPOOL_SHIP_MS). */
  spoolShipMs: number;
  /** Retention by age. Env AGENTRT_RETENTION_HOURS, default 168 (7 days); 0 keeps forever. */
  retentionHours: number;
  /** Retention by size. Env AGENTRT_MAX_DB_MB, default 2048; 0 means no cap. */
  maxDbMb: number;
  /** Upstream OTLP/HTTP endpoints everything received is forwarded to. Env AGENTRT_FORWARD_ENDPOINTS (comma-separated). */
  forwardEndpoints: string[];
  /** Directory of the built web UI. Env AGENTRT_UI_DIR, default collector/ui/dist. */
  uiDir?: string;
  /**
   * Where spans are stored: `sqlite` (the data dir, default) or
   * `clickhouse://user:pass@host:8123/db[?cluster=name&replicated=1]`. Env AGENTRT_STORE; a bad value
   * stops the collector at start (falling back to SQLite would split the data of several collectors).
   */
  store?: string;
  /**
   * Names accepted in the Host header besides localhost, *.localhost and IP literals (DNS-rebinding
   * guard); `*` accepts any. Env AGENTRT_COLLECTOR_ALLOWED_HOSTS (comma-separated).
   */
  allowedHosts: string[];
  /** Origins allowed to POST to the API from another site. Env AGENTRT_COLLECTOR_ALLOWED_ORIGINS. */
  allowedOrigins: string[];
  /** Threads that run queries (each with its own read connection). Env AGENTRT_QUERY_WORKERS, default CPU cores − 1 (1 to 4). */
  queryWorkers: number;
  /** A query's deadline; its thread is replaced if it runs past. Env AGENTRT_QUERY_TIMEOUT_MS, default 30000. */
  queryTimeoutMs: number;
  /** Minutes between integrity checks (PRAGMA quick_check) after the one at start; 0: only at start. Env AGENTRT_INTEGRITY_CHECK_MINUTES, default 60. */
  integrityCheckMinutes: number;
  /** JSON price table over the default model prices (cost columns). Env AGENTRT_PRICES_FILE. */
  pricesFile?: string;
  /** Cost alert rules `{"rules": [...]}` (else the API's, kept in the data dir). Env AGENTRT_ALERT_RULES_FILE. */
  alertRulesFile?: string;
  /** Bearer token required on /v1/* (OTLP ingest) when set. Env AGENTRT_INGEST_TOKEN. */
  ingestToken?: string;
  /** Bearer token required on /api/* when set (the UI takes it once via /?token=). Env AGENTRT_QUERY_TOKEN. */
  queryToken?: string;
}

export const DEFAULTS: Omit<CollectorConfig, 'dataDir'> = {
  port: 4318,
  host: '127.0.0.1',
  traceIndexPercent: 100,
  maxBodyBytes: 20 * 1024 * 1024,
  maxPendingRecords: 100_000,
  ingestLingerMs: 0,
  spoolMb: 1024,
  spoolShipMs: 1000,
  retentionHours: 168,
  maxDbMb: 2048,
  forwardEndpoints: [],
  allowedHosts: [],
  allowedOrigins: [],
  // One core stays for HTTP, decoding and the writer thread.
  queryWorkers: Math.max(1, Math.min(4, availableParallelism() - 1)),
  queryTimeoutMs: 30_000,
  integrityCheckMinutes: 60,
};

type Env = Record<string, string | undefined>;

/**
 * Reads the collector's configuration: explicit overrides beat the environment, which beats the
 * defaults. Blank variables count as unset; a bad value is reported in `warnings` and the default
 * is used. The only reader of AGENTRT_* collector variables.
 */
export function loadConfig(
  env: Env = process.env,
  overrides: Partial<CollectorConfig> = {},
  cwd = process.cwd(),
): { config: Readonly<CollectorConfig>; warnings: string[] } {
  const warnings: string[] = [];
  const raw = (name: string): string | undefined => {
    const v = env[name]?.trim();
    return v ? v : undefined;
  };
  const num = (name: string, fallback: number, min: number, max: number, integer = true): number => {
    const v = raw(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
      warnings.push(
        `${name}=${JSON.stringify(v)} is not ${integer ? 'an integer' : 'a number'} from ${min} to ${max}; using ${fallback}`,
      );
      return fallback;
    }
    return n;
  };
  const config: CollectorConfig = {
    allowedHosts: [],
    allowedOrigins: [],
    port: num('AGENTRT_COLLECTOR_PORT', DEFAULTS.port, 0, 65535),
    host: raw('AGENTRT_COLLECTOR_HOST') ?? DEFAULTS.host,
    dataDir: resolve(cwd, raw('AGENTRT_DATA_DIR') ?? '.data/collector'),
    traceIndexPercent: num('AGENTRT_TRACE_INDEX_PERCENT', DEFAULTS.traceIndexPercent, 0, 100, false),
    maxBodyBytes: num('AGENTRT_MAX_BODY_BYTES', DEFAULTS.maxBodyBytes, 1024, 2 ** 31),
    maxPendingRecords: num('AGENTRT_MAX_PENDING_RECORDS', DEFAULTS.maxPendingRecords, 1, 1e8),
    ingestLingerMs: num('AGENTRT_INGEST_LINGER_MS', DEFAULTS.ingestLingerMs, 0, 1000),
    spoolMb: num('AGENTRT_SPOOL_MB', DEFAULTS.spoolMb, 1, 1e7),
    spoolShipMs: num('AGENTRT_SPOOL_SHIP_MS', DEFAULTS.spoolShipMs, 0, 60_000),
    retentionHours: num('AGENTRT_RETENTION_HOURS', DEFAULTS.retentionHours, 0, 1e6, false),
    maxDbMb: num('AGENTRT_MAX_DB_MB', DEFAULTS.maxDbMb, 0, 1e7, false),
    queryWorkers: num('AGENTRT_QUERY_WORKERS', DEFAULTS.queryWorkers, 1, 64),
    queryTimeoutMs: num('AGENTRT_QUERY_TIMEOUT_MS', DEFAULTS.queryTimeoutMs, 100, 3_600_000),
    integrityCheckMinutes: num(
      'AGENTRT_INTEGRITY_CHECK_MINUTES',
      DEFAULTS.integrityCheckMinutes,
      0,
      1e6,
      false,
    ),
    forwardEndpoints: (raw('AGENTRT_FORWARD_ENDPOINTS') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => {
        if (!s) return false;
        if (/^https?:\/\//.test(s)) return true;
        warnings.push(`AGENTRT_FORWARD_ENDPOINTS entry ${JSON.stringify(s)} is not an http(s) URL; ignored`);
        return false;
      }),
  };
  const list = (name: string): string[] =>
    (raw(name) ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  config.allowedHosts = list('AGENTRT_COLLECTOR_ALLOWED_HOSTS');
  config.allowedOrigins = list('AGENTRT_COLLECTOR_ALLOWED_ORIGINS');
  const ingestToken = raw('AGENTRT_INGEST_TOKEN');
  if (ingestToken) config.ingestToken = ingestToken;
  const queryToken = raw('AGENTRT_QUERY_TOKEN');
  if (queryToken) config.queryToken = queryToken;
  const store = raw('AGENTRT_STORE');
  if (store) config.store = store;
  const pricesFile = raw('AGENTRT_PRICES_FILE');
  if (pricesFile) config.pricesFile = resolve(cwd, pricesFile);
  const alertRulesFile = raw('AGENTRT_ALERT_RULES_FILE');
  if (alertRulesFile) config.alertRulesFile = resolve(cwd, alertRulesFile);
  const uiDir = raw('AGENTRT_UI_DIR');
  if (uiDir) config.uiDir = resolve(cwd, uiDir);
  for (const [k, v] of Object.entries(overrides)) {
    if (v !== undefined) (config as unknown as Record<string, unknown>)[k] = v;
  }
  if (overrides.dataDir) config.dataDir = resolve(cwd, overrides.dataDir);
  return { config: Object.freeze(config), warnings };
}
