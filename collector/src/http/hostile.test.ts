// Issue #14's must-show: hostile queries against the collector process (dist/main.js) while it
// takes ingest — through /api/query and every read route (the trace list's free-text search, trace
// and session lookups, exports). Every hostile request is answered 4xx or stopped at its deadline
// (never 5xx), ingest and /healthz stay fast throughout (p99 < 100 ms), and every acknowledged span
// is stored. The stored traces' summaries start stale: the first trace list rebuilds thousands of
// them (on the writer thread) while all this goes on.
import { appendFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeTraceRequestJson } from '../otlp/decode-json.js';
import { createSpanStore } from '../store/sqlite/span-store.js';
import {
  TEST_STORE,
  hex,
  jsonRequest,
  jsonSpan,
  startCollector,
  startCollectorProcess,
  tempDir,
  testStoreEnv,
} from '../testing.test-util.js';

const T0 = Date.UTC(2026, 10, 21, 12);
const STORED = 60_000;
const DEADLINE_MS = 1500;

const HOSTILE: { name: string; query: string }[] = [
  {
    name: 'UNION injection via back-quoted field',
    query: "fields `attributes.x' ) UNION ALL SELECT name FROM sqlite_master --`",
  },
  {
    name: 'subquery injection',
    query: "filter `attributes.a'||(SELECT group_concat(doc) FROM spans)||'` = 1",
  },
  {
    name: 'recursive CTE',
    query:
      "filter `attributes.x'); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c; --` = 1",
  },
  { name: 'regex bomb', query: 'filter attributes.blob like /^(a+)+$/' },
  { name: 'regex bomb on every record', query: 'filter @message like /(.*a){12}x/ | stats count(*)' },
  { name: 'backreference', query: 'filter name like /(a+)\\1/' },
  {
    name: 'huge IN list',
    query: `filter name in [${Array.from({ length: 40_000 }, (_, i) => i).join(',')}]`,
  },
  { name: 'deep nesting', query: `filter ${'('.repeat(10_000)}name = "a"${')'.repeat(10_000)}` },
  { name: 'deep not', query: `filter ${'not '.repeat(20_000)}name = "a"` },
  {
    name: 'many conditions',
    query: `filter ${Array.from({ length: 3000 }, () => 'name = "a"').join(' or ')}`,
  },
  { name: 'heaviest full scan', query: 'filter @message like "no such text" | stats count(*)' },
  { name: 'sort of everything', query: 'filter attributes.blob like "a" | sort attributes.blob desc' },
  { name: 'group by every span', query: 'stats count(*) by spanId, attributes.blob' },
];

/** Heavy or hostile requests to the read routes (each runs on a query thread, under the deadline). */
const HOSTILE_READS: { name: string; path: string }[] = [
  { name: 'trace list, summaries stale', path: '/api/traces?limit=1000' },
  { name: 'free-text search over every record', path: '/api/traces?q=no%20such%20text&limit=1000' },
  { name: 'free-text search of LIKE wildcards', path: `/api/traces?q=${encodeURIComponent('%_\\%_')}` },
  { name: 'free-text search matching every record', path: '/api/traces?q=aaaa&limit=1000' },
  { name: 'trace list of a session', path: '/api/traces?sessionId=s1&limit=1000' },
  { name: 'session list', path: '/api/sessions?limit=1000' },
  { name: 'session of ~600 traces', path: '/api/sessions/s1' },
  { name: 'unknown session', path: `/api/sessions/${encodeURIComponent("s1' OR 1=1 --")}` },
  { name: 'trace lookup', path: `/api/traces/${hex(7, 16)}` },
  { name: 'unknown trace', path: `/api/traces/${'f'.repeat(32)}` },
  { name: 'services', path: '/api/services' },
  { name: 'attribute keys', path: '/api/keys' },
  { name: 'one trace exported', path: `/api/export?traceId=${hex(9, 16)}` },
];

/** Requests that are malformed at the HTTP level. */
const BAD_REQUESTS: { name: string; path: string; init?: RequestInit }[] = [
  { name: 'bad %-encoding in a trace id', path: '/api/traces/%E0%A4%A' },
  { name: 'bad %-encoding in a session id', path: '/api/sessions/%' },
  {
    name: 'query not JSON',
    path: '/api/query',
    init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":' },
  },
  {
    name: 'query not a string',
    path: '/api/query',
    init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":[1]}' },
  },
  {
    name: 'cross-site text/plain POST',
    path: '/api/query',
    init: { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"query":"stats count(*)"}' },
  },
  { name: 'bad limit', path: '/api/traces?limit=1e9' },
  { name: 'bad export range', path: '/api/export?startMs=abc' },
];

const p99 = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(0.99 * s.length) - 1)] ?? 0;
};

describe('hostile queries under ingest load (collector process)', () => {
  let tmp: ReturnType<typeof tempDir>;
  let proc: ReturnType<typeof startCollectorProcess>;
  let url: string;

  beforeAll(async () => {
    tmp = tempDir();
    // On SQLite the spans go straight into the file, their summaries left stale (as after a burst):
    // the collector rebuilds them off its main thread. On ClickHouse, through a collector's store.
    const sqlite = TEST_STORE === 'sqlite' ? createSpanStore({ dataDir: tmp.dir }) : undefined;
    const other = sqlite ? undefined : await startCollector({ dataDir: tmp.dir });
    const blob = 'a'.repeat(2000);
    for (let done = 0; done < STORED; done += 5000) {
      const spans = Array.from({ length: 5000 }, (_, i) =>
        jsonSpan({
          traceId: hex(1 + Math.floor((done + i) / 20), 16),
          spanId: hex(done + i + 1, 8),
          name: `op ${(done + i) % 11}`,
          startMs: T0 + done + i,
          durationMs: 1 + ((done + i) % 100),
          attributes: {
            'session.id': `s${(done + i) % 97}`,
            blob: blob.slice(0, 1000 + ((done + i) % 1000)),
          },
        }),
      );
      const records = decodeTraceRequestJson(JSON.stringify(jsonRequest('stored', spans))).spans;
      if (sqlite) sqlite.insertBatch(records);
      else await other!.backend.write(records, []);
    }
    sqlite?.close();
    await other?.close();
    proc = startCollectorProcess(tmp.dir, {
      AGENTRT_QUERY_TIMEOUT_MS: String(DEADLINE_MS),
      ...(await testStoreEnv(tmp.dir)),
    });
    url = await proc.url;
  }, 120_000);
  afterAll(async () => {
    proc?.child.kill('SIGKILL');
    await proc?.exited;
    tmp?.remove();
  });

  it('answers every hostile query 4xx or stops it at its deadline, while ingest and /healthz stay fast', async () => {
    // Ingest load: 20-span OTLP/JSON requests, built up front, two in flight at a time.
    const bodies = Array.from({ length: 2000 }, (_, r) =>
      JSON.stringify(
        jsonRequest(
          'load',
          Array.from({ length: 20 }, (_, i) =>
            jsonSpan({
              traceId: hex(500_000 + r, 16),
              spanId: hex(500_000 + r * 20 + i, 8),
              name: 'load',
              startMs: T0 + r,
              durationMs: 1,
            }),
          ),
        ),
      ),
    );
    let stop = false;
    let hostilePhase = false;
    const baseIngestMs: number[] = [];
    const baseHealthMs: number[] = [];
    let acknowledged = 0;
    const ingestMs: number[] = [];
    const healthMs: number[] = [];
    const ingestStatuses = new Map<number, number>();
    let next = 0;
    const ingester = async (): Promise<void> => {
      while (!stop && next < bodies.length) {
        const body = bodies[next++]!;
        const t = performance.now();
        const res = await fetch(`${url}/v1/traces`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        await res.arrayBuffer();
        (hostilePhase ? ingestMs : baseIngestMs).push(performance.now() - t);
        ingestStatuses.set(res.status, (ingestStatuses.get(res.status) ?? 0) + 1);
        if (res.status === 200) acknowledged += 20;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const prober = async (): Promise<void> => {
      while (!stop) {
        const t = performance.now();
        const res = await fetch(`${url}/healthz`);
        await res.arrayBuffer();
        expect(res.status).toBe(200);
        (hostilePhase ? healthMs : baseHealthMs).push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const load = Promise.all([ingester(), ingester(), prober()]);
    // The same load without queries first: the machine's own latency (other processes share it).
    await new Promise((r) => setTimeout(r, 2500));
    hostilePhase = true;

    const outcomes: string[] = [];
    for (const h of HOSTILE) {
      const t = performance.now();
      const res = await fetch(`${url}/api/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: h.query }),
      });
      const took = performance.now() - t;
      const body = (await res.json()) as { message?: string };
      outcomes.push(
        `${h.name}: ${res.status} in ${took.toFixed(0)} ms${res.status === 200 ? '' : ` (${body.message?.slice(0, 70)})`}`,
      );
      if (process.env.HOSTILE_DEBUG) appendFileSync(process.env.HOSTILE_DEBUG, `${outcomes.at(-1)}\n`);
      expect(res.status, `${h.name}: ${body.message}`).toBeLessThan(500);
      expect(took, h.name).toBeLessThan(DEADLINE_MS + 2000);
      if (res.status !== 200) expect(res.status, h.name).toBeGreaterThanOrEqual(400);
    }
    // Exports of everything, three at once: two stream (read slowly, as a slow client would: the
    // export waits for it), the third gets 429.
    const exportStarted = performance.now();
    const exportResponses = await Promise.all([0, 1, 2].map(() => fetch(`${url}/api/export?startMs=0`)));
    const exports = exportResponses.map(async (res, i) => {
      let bytes = 0;
      if (res.status === 200) {
        const reader = res.body!.getReader();
        // The first 8 MB at most, slowly; then the client goes away (the export stops with it).
        for (let r = await reader.read(); !r.done && bytes < 8e6; r = await reader.read()) {
          bytes += r.value.length;
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        await reader.cancel();
      } else await res.arrayBuffer();
      return `export ${i}: ${res.status}, ${(bytes / 1e6).toFixed(1)} MB in ${(performance.now() - exportStarted).toFixed(0)} ms`;
    });
    for (const h of HOSTILE_READS) {
      const t = performance.now();
      const res = await fetch(`${url}${h.path}`);
      const took = performance.now() - t;
      const body = Buffer.from(await res.arrayBuffer()).toString();
      outcomes.push(
        `${h.name}: ${res.status} in ${took.toFixed(0)} ms, ${body.length} bytes${res.status === 200 ? '' : ` (${body.slice(0, 90)})`}`,
      );
      if (process.env.HOSTILE_DEBUG) appendFileSync(process.env.HOSTILE_DEBUG, `${outcomes.at(-1)}\n`);
      expect(res.status, `${h.name}: ${body.slice(0, 200)}`).toBeLessThan(500);
      expect(res.status, h.name).not.toBe(429);
      // A read waits up to a second for stale summaries to be rebuilt, then its deadline at most.
      expect(took, h.name).toBeLessThan(DEADLINE_MS + 4000);
    }
    const exported = await Promise.all(exports);
    outcomes.push(...exported);
    expect(exported.filter((e) => / 200, /.test(e))).toHaveLength(2);
    expect(exported.filter((e) => / 429, /.test(e))).toHaveLength(1);
    for (const b of BAD_REQUESTS) {
      const res = await fetch(`${url}${b.path}`, b.init);
      outcomes.push(`${b.name}: ${res.status}`);
      expect(res.status, b.name).toBeGreaterThanOrEqual(400);
      expect(res.status, b.name).toBeLessThan(500);
    }
    stop = true;
    await load;
    console.log(
      [
        ...outcomes,
        `without queries: ingest p99 ${p99(baseIngestMs).toFixed(1)} ms, /healthz p99 ${p99(baseHealthMs).toFixed(1)} ms`,
        `during hostile queries: ingest ${ingestMs.length} requests ${JSON.stringify(Object.fromEntries(ingestStatuses))}, p99 ${p99(ingestMs).toFixed(1)} ms, max ${Math.max(...ingestMs).toFixed(1)} ms`,
        `during hostile queries: /healthz ${healthMs.length} probes, p99 ${p99(healthMs).toFixed(1)} ms, max ${Math.max(...healthMs).toFixed(1)} ms`,
      ].join('\n'),
    );
    expect(ingestMs.length).toBeGreaterThan(20);
    expect(healthMs.length).toBeGreaterThan(20);
    // Queries run on their own threads: they do not hold up the main thread. Measured alone on 2
    // shared cores: /healthz p99 55 ms, ingest p99 118 ms (it waits for its commit). The bound is
    // 100 ms or, on a machine busier than that without any query, 3x its own latency then — a
    // query on the main thread (issue #14: 8.5 s to 150 s stalls) fails either way.
    // On ClickHouse the floor is 250 ms, for the reason given for ingest below (CI on ClickHouse
    // once read /healthz p99 134 ms during the reads).
    const floor = TEST_STORE === 'clickhouse' ? 250 : 100;
    const bound = (base: number[]): number => Math.max(floor, 3 * p99(base));
    expect(p99(healthMs)).toBeLessThan(bound(baseHealthMs));
    // On ClickHouse a request is acknowledged once in the spool, and the trace and session lists
    // decode their records on the query threads as SQLite's do (on the main thread they held ingest
    // up: p99 198 ms during these reads, with a 1 s floor here). The collector's main thread is 90%
    // idle during them (a CPU profile of this test); what is left is the 2 cores shared with
    // clickhouse-server, which runs each hostile scan on every core (max_threads = cores), where
    // SQLite's scans run on the pool's one query thread. Five runs on this machine: ingest p99 39,
    // 46, 94, 110 and 148 ms during the reads (11–92 ms without), so the floor there is 250 ms:
    // still well under what a main-thread stall costs.
    expect(p99(ingestMs)).toBeLessThan(bound(baseIngestMs));

    // Nothing acknowledged is lost.
    const count = await fetch(`${url}/api/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query: 'filter resource.attributes.service.name = "load" | stats count(*) as n',
      }),
    });
    expect(((await count.json()) as { rows: { n: number }[] }).rows[0]!.n).toBe(acknowledged);
  }, 180_000);
});
