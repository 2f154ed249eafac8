// Shared helpers for the collector's tests (not part of the package's API).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Collector, type CollectorOptions, createCollector } from './http/collector.js';

export function tempDir(prefix = 'agentrt-collector-'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The store the collector tests run on: `AGENTRT_TEST_STORE=clickhouse` runs them on ClickHouse (the
 * collector suite's second pass in CI: `npm run test:clickhouse`), the default on SQLite.
 */
export const TEST_STORE: 'sqlite' | 'clickhouse' =
  process.env['AGENTRT_TEST_STORE'] === 'clickhouse' ? 'clickhouse' : 'sqlite';

/** Why a test about the SQLite store's own machinery does not run in the ClickHouse pass. */
export const SQLITE_ONLY =
  TEST_STORE === 'clickhouse' ? 'SQLite store internals (this pass runs on ClickHouse)' : undefined;

let clickHouse: Promise<{ httpPort: number }> | undefined;

/**
 * The ClickHouse database of a data dir (a collector started again on the same dir finds what it
 * stored), on one clickhouse-server per test process, started on first use and killed when the
 * process exits (its temp dir goes with it).
 */
async function testDatabaseUrl(dataDir: string): Promise<string> {
  clickHouse ??= import('./store/clickhouse/clickhouse-harness.test-util.js').then(async (h) => {
    if (h.clickHouseSkipReason) throw new Error(`AGENTRT_TEST_STORE=clickhouse: ${h.clickHouseSkipReason}`);
    const ch = await h.startClickHouse();
    process.once('exit', () => {
      for (const n of ch.nodes) {
        const pid = n.pid();
        if (pid) process.kill(pid, 'SIGKILL');
      }
      rmSync(ch.dir, { recursive: true, force: true });
    });
    return { httpPort: ch.nodes[0]!.httpPort };
  });
  const { httpPort } = await clickHouse;
  const db = createHash('sha256').update(dataDir).digest('hex').slice(0, 16);
  return `clickhouse://default:@127.0.0.1:${httpPort}/agentrt_test_${db}`;
}

/** The environment that puts a collector process over `dataDir` on TEST_STORE (AGENTRT_STORE). */
export async function testStoreEnv(dataDir: string): Promise<Record<string, string>> {
  return TEST_STORE === 'clickhouse' ? { AGENTRT_STORE: await testDatabaseUrl(dataDir) } : {};
}

/**
 * A collector on 127.0.0.1 port 0 over a fresh data dir (or the given one), on TEST_STORE unless
 * the options name a store.
 */
export async function startCollector(
  options: Partial<CollectorOptions> = {},
): Promise<Collector & { dataDir: string; cleanup: () => Promise<void> }> {
  const tmp = options.dataDir ? undefined : tempDir();
  const dataDir = options.dataDir ?? tmp!.dir;
  const store = options.store ?? (TEST_STORE === 'clickhouse' ? await testDatabaseUrl(dataDir) : undefined);
  const collector = await createCollector({
    host: '127.0.0.1',
    port: 0,
    ...options,
    dataDir,
    ...(store ? { store } : {}),
  });
  return Object.assign(collector, {
    dataDir,
    cleanup: async () => {
      await collector.close();
      tmp?.remove();
    },
  });
}

export const hex = (n: number, bytes: number): string => n.toString(16).padStart(bytes * 2, '0');

/** One OTLP/JSON span object (curl-style body part). */
export function jsonSpan(fields: {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startMs: number;
  durationMs: number;
  attributes?: Record<string, string | number | boolean>;
  status?: number | string;
  kind?: number | string;
}): Record<string, unknown> {
  const start = BigInt(Math.round(fields.startMs)) * 1_000_000n;
  const end = start + BigInt(Math.round(fields.durationMs * 1e6));
  return {
    traceId: fields.traceId,
    spanId: fields.spanId,
    ...(fields.parentSpanId ? { parentSpanId: fields.parentSpanId } : {}),
    name: fields.name,
    kind: fields.kind ?? 1,
    startTimeUnixNano: start.toString(),
    endTimeUnixNano: end.toString(),
    attributes: Object.entries(fields.attributes ?? {}).map(([key, v]) => ({
      key,
      value:
        typeof v === 'string'
          ? { stringValue: v }
          : typeof v === 'boolean'
            ? { boolValue: v }
            : Number.isInteger(v)
              ? { intValue: String(v) }
              : { doubleValue: v },
    })),
    status: { code: fields.status ?? 0 },
  };
}

/** An ExportTraceServiceRequest in OTLP/JSON around spans of one service. */
export function jsonRequest(service: string, spans: Record<string, unknown>[]): Record<string, unknown> {
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
        scopeSpans: [{ scope: { name: 'test', version: '1.0.0' }, spans }],
      },
    ],
  };
}

export async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** The collector's runnable entry in dist/ (`tsc -b` builds it before the suite). */
export const COLLECTOR_MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));

/**
 * The collector as `node` runs it (dist/main.js) on port 0 over `dataDir`: its JSON log lines as
 * they come, its URL once it logged `listening`, and its exit. The caller kills the child.
 */
export function startCollectorProcess(
  dataDir: string,
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
) {
  const child = spawn(process.execPath, [...nodeArgs, COLLECTOR_MAIN], {
    env: { ...process.env, AGENTRT_COLLECTOR_PORT: '0', AGENTRT_DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  let buffer = '';
  child.stdout.on('data', (d: Buffer) => {
    buffer += d.toString();
    const parts = buffer.split('\n');
    buffer = parts.pop()!;
    for (const p of parts) lines.push(JSON.parse(p) as Record<string, unknown>);
  });
  const url = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('collector did not log its URL within 20 s')), 20_000);
    const poll = setInterval(() => {
      const l = lines.find((x) => x.msg === 'listening');
      if (l) {
        clearTimeout(timer);
        clearInterval(poll);
        resolve(l.url as string);
      }
    }, 20);
    child.once('exit', (code) => {
      clearTimeout(timer);
      clearInterval(poll);
      reject(new Error(`collector exited with ${code}`));
    });
  });
  // The exit code, or the signal that ended it (a failure then names it, not null).
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal)),
  );
  return { child, lines, url, exited };
}

/** Resident memory of a process (bytes, from /proc): all, its peak, and anonymous (heap, not mapped files). */
export function memoryOf(pid: number): { rss: number; peak: number; anon: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string): number =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM'), anon: kb('RssAnon') };
}

/**
 * Waits until a collector's spool (ClickHouse store) holds nothing ClickHouse lacks, so another
 * collector or a SQL statement sees what it acknowledged; at once on SQLite (no spool).
 */
export async function shipped(c: { url: string }, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const health = (await (await fetch(`${c.url}/healthz`)).json()) as { spool?: { pendingRecords: number } };
    if (!health.spool?.pendingRecords) return;
    if (Date.now() > until)
      throw new Error(`${c.url}: the spool still holds ${health.spool.pendingRecords} records`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The records of an NDJSON answer (200, application/x-ndjson), one a line; anything else throws. */
export async function ndjsonLines<T>(url: string): Promise<T[]> {
  const res = await fetch(url);
  const type = res.headers.get('content-type');
  if (res.status !== 200 || type !== 'application/x-ndjson')
    throw new Error(`${url}: ${res.status} ${type}: ${await res.text()}`);
  return (await res.text())
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as T);
}
