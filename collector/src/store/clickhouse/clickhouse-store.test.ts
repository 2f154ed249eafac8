// The collector on ClickHouse: a real clickhouse-server (Debian's 18.16) on a free port, the
// collector's own HTTP API and the official OpenTelemetry exporter as clients, and the SQLite
// collector beside it answering the same queries over the same spans.
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Collector } from '../../http/collector.js';
import { decodeTraceRequestJson } from '../../otlp/decode-json.js';
import {
  hex,
  jsonRequest,
  jsonSpan,
  postJson,
  shipped,
  startCollector,
  tempDir,
} from '../../testing.test-util.js';
import type {
  QueryResponse,
  SessionListResponse,
  SessionResponse,
  TraceListResponse,
  TraceResponse,
} from '../../wire-types.js';
import { type ClickHouseLocation, parseStoreSetting } from '../store.js';
import {
  type ClickHouseHarness,
  clickHouseSkipReason,
  clickHouseSql,
  startClickHouse,
} from './clickhouse-harness.test-util.js';
import { createClickHouseStore, versionAtLeast } from './clickhouse-store.js';
import { literal } from './rows.js';
import { CLICKHOUSE_SCHEMA_VERSION } from './schema.js';
import { silentLogger } from '../../logger.js';

const DAY_MS = 86_400_000;
// Not a whole millisecond in µs once through doubles (ms × 1e6 past 2^53): @timestamp then has a
// fraction, which both stores must keep alike.
const NOW = Date.now() - (Date.now() % 1000) + 834;

/** A fixed set of spans: services, models, sessions, errors, tokens, a nested kvlist value. */
function dataset(): Record<string, unknown>[] {
  const requests: Record<string, unknown>[] = [];
  const models = ['claude', 'gpt', 'llama'];
  for (let t = 0; t < 30; t++) {
    const traceId = hex(0xabc000 + t, 16);
    const start = NOW - 3 * 3_600_000 + t * 300_000;
    const session = `s-${t % 4}`;
    const spans = [
      jsonSpan({
        traceId,
        spanId: hex(t * 10 + 1, 8),
        name: 'invoke_agent',
        kind: 2,
        startMs: start,
        durationMs: 2000 + t * 10,
        attributes: { 'session.id': session, 'gen_ai.operation.name': 'invoke_agent' },
      }),
    ];
    for (let k = 0; k < 3; k++) {
      spans.push(
        jsonSpan({
          traceId,
          spanId: hex(t * 10 + 2 + k, 8),
          parentSpanId: hex(t * 10 + 1, 8),
          name: k === 2 ? 'execute_tool search' : `chat ${models[(t + k) % 3]}`,
          kind: 3,
          startMs: start + 100 + k * 400,
          durationMs: 300 + ((t * 7 + k * 13) % 50),
          status: k === 2 && t % 5 === 0 ? 2 : 0,
          attributes:
            k === 2
              ? { 'session.id': session, 'gen_ai.operation.name': 'execute_tool', 'tool.name': 'search' }
              : {
                  'session.id': session,
                  'gen_ai.operation.name': 'chat',
                  'gen_ai.request.model': models[(t + k) % 3]!,
                  'gen_ai.usage.input_tokens': 100 + t,
                  'gen_ai.usage.output_tokens': 10 + k,
                },
        }),
      );
    }
    requests.push(jsonRequest(t % 3 === 0 ? 'billing' : 'weather', spans));
  }
  // A nested kvlist value: `attributes.http.route` falls back to attributes.http → route.
  const nested = jsonSpan({
    traceId: hex(0xdef, 16),
    spanId: hex(0xdef, 8),
    name: 'GET /x',
    // Between two traces (a tie in start time would leave their order to each store).
    startMs: NOW - 3_600_000 + 7_000,
    durationMs: 5,
  });
  (nested['attributes'] as unknown[]).push({
    key: 'http',
    value: { kvlistValue: { values: [{ key: 'route', value: { stringValue: '/x/:id' } }] } },
  });
  requests.push(jsonRequest('web', [nested]));
  return requests;
}

/** Queries every store must answer alike (no ties in their order). */
const SHARED_QUERIES = [
  'filter attributes.session.id = "s-1" | sort startTimeUnixNano asc, spanId asc | fields spanId, name, durationNano',
  'filter name like /^chat/ | stats count(*) as n, sum(attributes.gen_ai.usage.input_tokens) as input by attributes.gen_ai.request.model | sort n desc, input desc',
  'stats count(*) as n, avg(durationNano) as avg, min(durationNano) as lo, max(durationNano) as hi, pct(durationNano, 95) as p95 by resource.attributes.service.name | sort n desc',
  'filter attributes.gen_ai.request.model in ["claude", "gpt"] | stats pct(durationNano, 50) as p50, count_distinct(traceId) as traces by attributes.gen_ai.request.model | sort p50 asc',
  'stats count(*) as n by bin(1h) | sort n desc | limit 3',
  'filter status.code = 2 | fields traceId, spanId, name | sort spanId asc',
  'filter durationNano > 2.1e9 | sort durationNano desc | limit 5 | fields spanId, durationNano',
  'filter attributes.tool.name = "search" and not ispresent(attributes.gen_ai.request.model) | stats count(*) as n',
  'filter attributes.http.route = "/x/:id" | fields name, attributes.http.route as route',
  'filter resource.attributes.service.name != "weather" | stats count(*) as n by name | sort n desc, name asc',
  'filter kind = "SERVER" | stats sum(durationNano) as total, count(*) as n',
  'filter ispresent(parentSpanId) and name = "execute_tool search" | stats count(*) as n by status.code | sort n desc',
  'filter @message like /search/ | stats count(*) as n',
  'fields spanId, @timestamp | sort @timestamp desc, spanId asc | limit 4',
  'filter attributes.gen_ai.usage.input_tokens >= 125 | stats sum(attributes.gen_ai.usage.output_tokens) as out by attributes.gen_ai.request.model | sort out desc',
];

/** `stats` span_rollup answers (rollupPlan): time bounds cut inside seconds, so the edges count. */
const ROLLUP_QUERIES = [
  'stats count(*) as n, sum(durationNano) as d, avg(durationNano) as a, min(durationNano) as lo, max(durationNano) as hi by resource.attributes.service.name',
  'stats count(*) as n, count(attributes.gen_ai.usage.input_tokens) as c, sum(attributes.gen_ai.usage.input_tokens) as i, avg(attributes.gen_ai.usage.output_tokens) as o, min(attributes.gen_ai.usage.input_tokens) as lo, max(attributes.gen_ai.usage.output_tokens) as hi by name',
  'filter attributes.gen_ai.operation.name = "chat" | stats sum(attributes.gen_ai.usage.input_tokens) as input, sum(attributes.gen_ai.usage.output_tokens) as output, count(*) as calls by resource.attributes.service.name as service, attributes.gen_ai.request.model as model',
  'filter attributes.gen_ai.operation.name = "chat" | stats sum(attributes.gen_ai.usage.input_tokens) as tokens_in by bin(300s), attributes.gen_ai.request.model as model',
  'filter kind = "CLIENT" and status.code != "ERROR" and resource.attributes.service.name in ["weather", "billing"] | stats count(*) as n by bin(1h), status.code',
  'filter not ispresent(attributes.gen_ai.request.model) | stats count(*) as n, max(durationNano) as hi',
];

async function query(
  c: Collector,
  q: string,
  range: { startMs?: number; endMs?: number } = {},
): Promise<QueryResponse> {
  const res = await postJson(`${c.url}/api/query`, { query: q, ...range });
  const body = (await res.json()) as QueryResponse;
  if (res.status !== 200) throw new Error(`${q}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

async function send(c: Collector, requests: Record<string, unknown>[]): Promise<void> {
  for (const r of requests) {
    const res = await postJson(`${c.url}/v1/traces`, r);
    expect(res.status).toBe(200);
  }
  // In ClickHouse, for other collectors and SQL too (a collector's own reads wait for it anyway).
  await shipped(c);
}

/**
 * OTLP/JSON logs: `count` records from `first` on, a second apart (after `offsetMs`), over two
 * services; every third tagged with session s-1, every fourth in trace 1 of dataset() (session s-1).
 */
function logsRequest(first: number, count: number, offsetMs = 0): Record<string, unknown> {
  // One resource per record, in time order: SQLite lists by arrival, ClickHouse by record time.
  return {
    resourceLogs: Array.from({ length: count }, (_, k) => first + k).map((i) => ({
      resource: {
        attributes: [{ key: 'service.name', value: { stringValue: i % 2 ? 'logs-b' : 'logs-a' } }],
      },
      scopeLogs: [
        {
          scope: { name: 'test' },
          logRecords: [
            {
              timeUnixNano: String(BigInt(NOW - 3_600_000 + offsetMs + i * 1000) * 1_000_000n),
              severityNumber: [9, 13, 17, 5][i % 4],
              severityText: ['INFO', 'WARN', 'ERROR', 'DEBUG'][i % 4],
              body: { stringValue: `log ${i} ${i % 2 ? 'TIMEOUT' : 'retry'}` },
              attributes: i % 3 === 0 ? [{ key: 'session.id', value: { stringValue: 's-1' } }] : [],
              ...(i % 4 === 0 ? { traceId: hex(0xabc000 + 1, 16), spanId: hex(12, 8) } : {}),
            },
          ],
        },
      ],
    })),
  };
}

/** A request of one span named `<prefix>-<i>` in trace `base + i`. */
function numbered(service: string, base: number, prefix: string, i: number): Record<string, unknown> {
  return jsonRequest(service, [
    jsonSpan({
      traceId: hex(base + i, 16),
      spanId: hex(i + 1, 8),
      name: `${prefix}-${i}`,
      startMs: NOW,
      durationMs: 1,
    }),
  ]);
}

/** Sends a request every 100 ms until one is taken (the store came back) or 10 s passed; its status. */
async function sendUntilTaken(c: Collector, request: Record<string, unknown>): Promise<number> {
  let status = 0;
  for (let i = 0; i < 100 && status !== 200; i++) {
    await new Promise((r) => setTimeout(r, 100));
    status = (await postJson(`${c.url}/v1/traces`, request)).status;
  }
  return status;
}

let ch: ClickHouseHarness;
const collectors: Collector[] = [];
const cleanups: (() => Promise<void>)[] = [];

async function clickHouseCollector(database: string, extra: string = ''): Promise<Collector> {
  const c = await startCollector({
    store: `clickhouse://default:@127.0.0.1:${ch.nodes[0]!.httpPort}/${database}${extra}`,
    summaryRefreshIntervalMs: 0,
  });
  cleanups.push(c.cleanup);
  collectors.push(c);
  return c;
}

describe.skipIf(clickHouseSkipReason)(
  `collector on ClickHouse ${clickHouseSkipReason ?? ''}`,
  { timeout: 60_000 },
  () => {
    let sqlite: Collector;
    let clickhouse: Collector;

    beforeAll(async () => {
      ch = await startClickHouse();
      const sq = await startCollector({ summaryRefreshIntervalMs: 0 });
      cleanups.push(sq.cleanup);
      sqlite = sq;
      clickhouse = await clickHouseCollector('agentrt_shared');
      const data = dataset();
      await send(sqlite, data);
      await send(clickhouse, data);
    });

    afterAll(async () => {
      for (const f of cleanups.splice(0)) await f().catch(() => undefined);
      await ch?.stop();
    });

    it('parses AGENTRT_STORE settings and names what is wrong', () => {
      expect(parseStoreSetting(undefined)).toEqual({ kind: 'sqlite' });
      expect(
        parseStoreSetting('clickhouse://u:p%40ss@ch.internal:9123/tele?cluster=c1&replicated=1'),
      ).toEqual({
        kind: 'clickhouse',
        url: 'http://ch.internal:9123',
        username: 'u',
        password: 'p@ss',
        database: 'tele',
        cluster: 'c1',
        replicated: true,
      });
      expect(parseStoreSetting('clickhouse://h/db?timeout_ms=2500')).toMatchObject({
        requestTimeoutMs: 2500,
      });
      expect(() => parseStoreSetting('clickhouse://h/db?timeout_ms=5')).toThrow(/timeout_ms "5" must be/);
      expect(() => parseStoreSetting('postgres://x')).toThrow(/scheme "postgres:"/);
      expect(() => parseStoreSetting('clickhouse://h/bad-name')).toThrow(/database "bad-name"/);
      expect(versionAtLeast('18.16.1', [18, 16])).toBe(true);
      expect(versionAtLeast('24.3.1.2672', [18, 16])).toBe(true);
      expect(versionAtLeast('18.14.9', [18, 16])).toBe(false);
      expect(literal("it's a \\ \n")).toBe("'it\\'s a \\\\ \\x0a'");
    });

    it('answers every shared query exactly as the SQLite store does', async () => {
      for (const q of SHARED_QUERIES) {
        const [a, b] = await Promise.all([query(sqlite, q), query(clickhouse, q)]);
        expect({ q, kind: b.kind, columns: b.columns, rows: b.rows }).toEqual({
          q,
          kind: a.kind,
          columns: a.columns,
          rows: a.rows,
        });
        expect(a.rows.length, q).toBeGreaterThan(0);
      }
    });

    it('answers stats from its rollup exactly as from the spans, with time bounds inside seconds', async () => {
      const base = NOW - 3 * 3_600_000;
      // Spans of trace t start at base + t·300 s + 0, 100, 500 and 900 ms, and base ends in .834 s.
      const ranges = [
        {},
        { startMs: base + 5 * 300_000 + 50, endMs: base + 20 * 300_000 + 700 },
        { startMs: base + 3 * 300_000 + 166 },
        { endMs: base + 11 * 300_000 + 400.5 },
        { startMs: base + 7 * 300_000 + 10, endMs: base + 7 * 300_000 + 1_100 },
      ];
      for (const q of ROLLUP_QUERIES) {
        for (const range of ranges) {
          const [a, b] = await Promise.all([query(sqlite, q, range), query(clickhouse, q, range)]);
          expect({ q, range, columns: b.columns, rows: b.rows }).toEqual({
            q,
            range,
            columns: a.columns,
            rows: a.rows,
          });
        }
      }
      // The rollup is what answers: a group put only there shows in a rollup-shaped query and not
      // in one it cannot answer (a percentile reads the spans).
      const db = 'agentrt_rollup_probe';
      const c = await clickHouseCollector(db);
      await send(c, dataset());
      await clickHouseSql(
        ch.url,
        `INSERT INTO ${db}.span_rollup SELECT today(), 1, 'rollup-probe', 'probe', 'INTERNAL', 'UNSET', 1, '', 1, '', 1, '',
          countState(), minState(toUInt64(1)), maxState(toInt64(1)), sumState(toInt64(5)), minState(toInt64(5)), maxState(toInt64(5)),
          sumState(toUInt64(0)), sumState(0.), minState(inf), maxState(-inf),
          sumState(toUInt64(0)), sumState(0.), minState(inf), maxState(-inf) FROM system.one`,
      );
      const services = (r: QueryResponse): unknown[] =>
        r.rows.map((row) => (row as Record<string, unknown>)['service']);
      expect(
        services(await query(c, 'stats count(*) as n by resource.attributes.service.name as service')),
      ).toContain('rollup-probe');
      expect(
        services(
          await query(c, 'stats pct(durationNano, 50) as p by resource.attributes.service.name as service'),
        ),
      ).not.toContain('rollup-probe');
    });

    it('lists the newest traces and sessions from a recent window exactly as the SQLite store, ones begun before it included', async () => {
      const sq = await startCollector({ summaryRefreshIntervalMs: 0 });
      cleanups.push(sq.cleanup);
      const c = await clickHouseCollector('agentrt_trace_window');
      // One begun 500 s before its last span, which is the newest span of all: the 60 s and 480 s
      // windows hold only that span of it, and it began before dataset()'s newest trace (NOW - 35
      // min, 400 s before that span), so that one is first.
      const long = hex(0x10e9, 16);
      const end = NOW - 1_700_000;
      const data = [
        ...dataset(),
        jsonRequest('weather', [
          jsonSpan({
            traceId: long,
            spanId: hex(0x10e9, 8),
            name: 'invoke_agent',
            kind: 2,
            startMs: end - 500_000,
            // It ends last of all: its session is the newest, though no span of it starts late.
            durationMs: 600_000,
            attributes: { 'session.id': 's-long' },
          }),
          jsonSpan({
            traceId: long,
            spanId: hex(0x10ea, 8),
            parentSpanId: hex(0x10e9, 8),
            name: 'chat late',
            kind: 3,
            startMs: end,
            durationMs: 400,
          }),
        ]),
      ];
      await send(sq, data);
      await send(c, data);
      for (const path of [
        '/api/traces?limit=1',
        '/api/traces?limit=2',
        '/api/traces?limit=5&status=ok',
        '/api/traces?limit=3&service=billing',
        `/api/traces?limit=4&endMs=${NOW - 2 * 3_600_000}`,
        `/api/traces?limit=100&startMs=${NOW - 2 * 3_600_000}`,
        '/api/sessions?limit=1',
        '/api/sessions?limit=3',
        '/api/sessions',
      ]) {
        const [a, b] = await Promise.all([
          fetch(`${sq.url}${path}`).then((r) => r.json()),
          fetch(`${c.url}${path}`).then((r) => r.json()),
        ]);
        expect(b, path).toEqual(a);
        expect(JSON.stringify(a), path).toMatch(/"(traceId|sessionId)"/);
      }
      const first = (await (await fetch(`${c.url}/api/traces?limit=1`)).json()) as {
        traces: { traceId: string; startTimeUnixNano: number }[];
      };
      expect(first.traces[0]!.traceId).toBe(hex(0xabc000 + 29, 16));
      const sessions = (await (await fetch(`${c.url}/api/sessions?limit=1`)).json()) as SessionListResponse;
      expect(sessions.sessions.map((x) => x.sessionId)).toEqual(['s-long']);
    });

    it('acknowledges a writer that writes again the moment its last write was acknowledged', async () => {
      const c = await clickHouseCollector('agentrt_back_to_back');
      // Each write starts while the INSERT that acknowledged the previous one is still finishing.
      for (let i = 0; i < 3; i++) {
        const spans = decodeTraceRequestJson(JSON.stringify(numbered('svc', 0xb2b000, 'back', i))).spans;
        const done = c.backend.write(spans, []).then(() => 'stored');
        const late = new Promise((r) => setTimeout(() => r('still waiting after 5 s'), 5000));
        expect(await Promise.race([done, late])).toBe('stored');
      }
      expect((await query(c, 'filter name like /^back-/ | stats count(*) as n')).rows).toEqual([{ n: 3 }]);
    });

    it('takes a span with 20,000 attributes (the attribute key view copies nothing per key)', async () => {
      const c = await clickHouseCollector('agentrt_wide_span');
      const wide = jsonSpan({
        traceId: hex(0x31de, 16),
        spanId: hex(1, 8),
        name: 'wide',
        startMs: NOW,
        durationMs: 1,
      });
      wide['attributes'] = Array.from({ length: 20_000 }, (_, i) => ({
        key: `k${i}`,
        value: { intValue: String(i) },
      }));
      expect((await postJson(`${c.url}/v1/traces`, jsonRequest('svc', [wide]))).status).toBe(200);
      const keys = (await (await fetch(`${c.url}/api/keys`)).json()) as { keys: string[] };
      expect(keys.keys).toEqual(expect.arrayContaining(['attributes.k0', 'attributes.k10000']));
    });

    it('migrates a version 1 database to the current version, filling the rollup from the spans already stored', async () => {
      const db = 'agentrt_v1_upgrade';
      const old = await clickHouseCollector(db);
      await send(old, dataset());
      // Back to version 1: no rollup table or view, version 1 recorded.
      for (const sql of [
        `DROP TABLE ${db}.span_rollup_mv`,
        `DROP TABLE ${db}.span_rollup`,
        ...['3600s', '300s'].flatMap((w) => [
          `DROP TABLE ${db}.metric_rollup_${w}_mv`,
          `DROP TABLE ${db}.metric_bucket_rollup_${w}_mv`,
        ]),
        ...['series', 'points', 'last', 'rollup', 'bucket_rollup'].map((t) => `DROP TABLE ${db}.metric_${t}`),
        `DROP TABLE ${db}.schema_migrations`,
        `CREATE TABLE ${db}.schema_migrations (version UInt32, applied_at DateTime) ENGINE = MergeTree() ORDER BY version`,
        `INSERT INTO ${db}.schema_migrations VALUES (1, now())`,
      ])
        await clickHouseSql(ch.url, sql);
      const upgraded = await clickHouseCollector(db);
      expect((await clickHouseSql(ch.url, `SELECT max(version) FROM ${db}.schema_migrations`)).trim()).toBe(
        String(CLICKHOUSE_SCHEMA_VERSION),
      );
      for (const q of ROLLUP_QUERIES) {
        const [a, b] = await Promise.all([query(sqlite, q), query(upgraded, q)]);
        expect({ q, rows: b.rows }).toEqual({ q, rows: a.rows });
      }
    });

    it('serves trace by id, sessions, trace list, services and keys like the SQLite store', async () => {
      const traceId = hex(0xabc000 + 5, 16);
      const get = async (c: Collector, path: string): Promise<unknown> => {
        const res = await fetch(`${c.url}${path}`);
        expect(res.status, path).toBe(200);
        return res.json();
      };
      for (const path of [
        `/api/traces/${traceId}`,
        '/api/sessions/s-2',
        '/api/sessions?limit=10',
        '/api/traces?limit=7',
        '/api/traces?status=error&limit=50',
        '/api/traces?service=billing&minDurationMs=2100',
        `/api/traces?sessionId=s-3&limit=100`,
        '/api/traces?q=execute_tool&limit=3',
        '/api/services',
      ]) {
        expect(await get(clickhouse, path), path).toEqual(await get(sqlite, path));
      }
      const trace = (await get(clickhouse, `/api/traces/${traceId}`)) as TraceResponse;
      expect(trace.summary.spanCount).toBe(4);
      expect(trace.roots[0]!.children).toHaveLength(3);
      const sessions = (await get(clickhouse, '/api/sessions')) as SessionListResponse;
      expect(sessions.sessions.map((s) => s.sessionId).sort()).toEqual(['s-0', 's-1', 's-2', 's-3']);
      const keys = (await get(clickhouse, '/api/keys')) as { keys: string[] };
      expect(keys.keys).toEqual(
        expect.arrayContaining(['attributes.gen_ai.request.model', 'attributes.tool.name']),
      );
      expect((await fetch(`${clickhouse.url}/api/traces/${hex(1, 16)}`)).status).toBe(404);
      const exported = await (await fetch(`${clickhouse.url}/api/export?traceId=${traceId}`)).text();
      const first = JSON.parse(exported.split('\n')[0]!) as {
        resourceSpans: { scopeSpans: { spans: { spanId: string }[] }[] }[];
      };
      expect(first.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((x) => x.spans))).toHaveLength(4);
    });

    it('answers /api/logs with the same records as the SQLite store, and tails with `after`', async () => {
      const c = await clickHouseCollector('agentrt_logs');
      const sq = await startCollector({ summaryRefreshIntervalMs: 0 });
      cleanups.push(sq.cleanup);
      // The traces give s-1 its trace (logs of it belong to the session without a session.id).
      const data = dataset();
      await send(c, data);
      await send(sq, data);
      const sent = logsRequest(0, 8);
      for (const target of [c, sq]) {
        const res = await postJson(`${target.url}/v1/logs`, sent);
        expect(res.status).toBe(200);
      }
      const withoutCursor = (body: { logs: Record<string, unknown>[] }) =>
        body.logs.map(({ cursor: _cursor, ...rest }) => rest);
      const queries = [
        '',
        '?limit=3',
        '?severity=warn',
        '?sessionId=s-1',
        '?service=logs-b',
        '?q=TIMEOUT',
        `?traceId=${hex(0xabc000 + 1, 16)}`,
        '?since=6h&severity=info',
        '?sessionId=s-1&q=retry',
      ];
      for (const q of queries) {
        const [a, b] = await Promise.all([
          fetch(`${sq.url}/api/logs${q}`).then((r) => r.json()),
          fetch(`${c.url}/api/logs${q}`).then((r) => r.json()),
        ]);
        expect((a as { logs: unknown[] }).logs.length, q).toBeGreaterThan(0);
        expect(withoutCursor(b as { logs: Record<string, unknown>[] }), q).toEqual(
          withoutCursor(a as { logs: Record<string, unknown>[] }),
        );
      }
      const all = (await (await fetch(`${c.url}/api/logs`)).json()) as { logs: unknown[]; cursor: number };
      expect(all.logs).toHaveLength(8);
      const session = (await (await fetch(`${c.url}/api/logs?sessionId=s-1`)).json()) as { logs: unknown[] };
      expect(session.logs.length).toBeGreaterThan(1);
      // Live tail: only what came after the cursor, oldest first.
      expect((await postJson(`${c.url}/v1/logs`, logsRequest(8, 2, 60_000))).status).toBe(200);
      const tail = (await (await fetch(`${c.url}/api/logs?after=${all.cursor}`)).json()) as {
        logs: { body: string }[];
        cursor: number;
      };
      expect(tail.logs.map((l) => l.body)).toEqual(['log 8 retry', 'log 9 TIMEOUT']);
      expect(tail.cursor).toBeGreaterThan(all.cursor);
      const none = (await (await fetch(`${c.url}/api/logs?after=${tail.cursor}`)).json()) as {
        logs: unknown[];
      };
      expect(none.logs).toEqual([]);
    });

    it('exports spans and logs page by page as the SQLite store does, records of the same µs included', async () => {
      const c = await clickHouseCollector('agentrt_export');
      const sq = await startCollector({ summaryRefreshIntervalMs: 0 });
      cleanups.push(sq.cleanup);
      // 2500 spans and 2500 log records, ten to a µs: three pages of each, ties across page ends
      const at = (i: number) => String(BigInt(NOW - 3_600_000 + Math.floor(i / 10)) * 1_000_000n);
      const spans = Array.from({ length: 2500 }, (_, i) =>
        jsonSpan({
          traceId: hex(0xe000 + (i % 50), 16),
          spanId: hex(0xe0000 + i, 8),
          name: `x${i}`,
          startMs: 0,
          durationMs: 1,
        }),
      ).map((span, i) => ({ ...span, startTimeUnixNano: at(i), endTimeUnixNano: at(i) }));
      const logs = {
        resourceLogs: [
          {
            resource: { attributes: [{ key: 'service.name', value: { stringValue: 'export' } }] },
            scopeLogs: [
              {
                scope: { name: 'test' },
                logRecords: Array.from({ length: 2500 }, (_, i) => ({
                  timeUnixNano: at(i),
                  body: { stringValue: `record ${i}` },
                })),
              },
            ],
          },
        ],
      };
      for (const target of [c, sq]) {
        expect((await postJson(`${target.url}/v1/traces`, jsonRequest('export', spans))).status).toBe(200);
        expect((await postJson(`${target.url}/v1/logs`, logs)).status).toBe(200);
      }
      const exported = async (target: Collector) => {
        const from = NOW - 3_600_000 - 1;
        const res = await fetch(`${target.url}/api/export?startMs=${from}&endMs=${from + 1000}`);
        expect(res.status).toBe(200);
        type Line = {
          resourceSpans?: { scopeSpans: { spans: { spanId: string }[] }[] }[];
          resourceLogs?: { scopeLogs: { logRecords: { body: { stringValue: string } }[] }[] }[];
        };
        const lines = (await res.text())
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Line);
        const spanLines = lines.filter((l) => l.resourceSpans);
        const logLines = lines.filter((l) => l.resourceLogs);
        return {
          pages: [spanLines.length, logLines.length],
          spanIds: spanLines.flatMap((l) =>
            l.resourceSpans!.flatMap((r) => r.scopeSpans.flatMap((sc) => sc.spans.map((x) => x.spanId))),
          ),
          bodies: logLines.flatMap((l) =>
            l.resourceLogs!.flatMap((r) =>
              r.scopeLogs.flatMap((sc) => sc.logRecords.map((x) => x.body.stringValue)),
            ),
          ),
        };
      };
      const [a, b] = await Promise.all([exported(sq), exported(c)]);
      expect(b.pages).toEqual([3, 3]);
      expect(new Set(b.spanIds).size).toBe(2500);
      expect(b.spanIds).toHaveLength(2500);
      expect(new Set(b.bodies).size).toBe(2500);
      expect(b.bodies).toHaveLength(2500);
      expect([...b.spanIds].sort()).toEqual([...a.spanIds].sort());
      expect([...b.bodies].sort()).toEqual([...a.bodies].sort());
    });

    it('ships the spool for an export once, at its first page: later pages leave what arrived since waiting', async () => {
      const c = await startCollector({
        store: `clickhouse://default:@127.0.0.1:${ch.nodes[0]!.httpPort}/agentrt_export_ship`,
        spoolShipMs: 60_000,
      });
      cleanups.push(c.cleanup);
      const batch = (base: number, n: number) =>
        jsonRequest(
          'export-ship',
          Array.from({ length: n }, (_, i) =>
            jsonSpan({
              traceId: hex(base + i, 16),
              spanId: hex(base + i, 8),
              name: 'op',
              startMs: NOW - 1000,
              durationMs: 1,
            }),
          ),
        );
      expect((await postJson(`${c.url}/v1/traces`, batch(0xf0000, 6000))).status).toBe(200);
      const res = await fetch(`${c.url}/api/export?startMs=${NOW - 3_600_000}&endMs=${NOW + 60_000}`);
      const reader = res.body!.getReader();
      await reader.read(); // the first of six pages: the spans shipped for it, the rest held back
      expect((await postJson(`${c.url}/v1/traces`, batch(0xf8000, 10))).status).toBe(200);
      while (!(await reader.read()).done);
      const health = (await (await fetch(`${c.url}/healthz`)).json()) as {
        spool: { pendingRecords: number };
      };
      expect(health.spool.pendingRecords).toBe(10);
    });

    it('takes spans from the official OpenTelemetry exporter, acknowledges them once spooled and ships them', async () => {
      const exporter = new OTLPTraceExporter({ url: `${clickhouse.url}/v1/traces` });
      const provider = new BasicTracerProvider({
        resource: resourceFromAttributes({ 'service.name': 'otel-sdk' }),
        spanProcessors: [new SimpleSpanProcessor(exporter)],
      });
      const tracer = provider.getTracer('t');
      const parent = tracer.startSpan('parent', { attributes: { 'session.id': 'sdk-session' } });
      const traceId = parent.spanContext().traceId;
      parent.end();
      await provider.forceFlush();
      await provider.shutdown();
      // Acknowledged means on the spool's disk; in ClickHouse within the shipper's delay.
      await shipped(clickhouse);
      const rows = await clickHouseSql(
        ch.url,
        `SELECT count() FROM agentrt_shared.spans WHERE trace_id = ${literal(traceId)}`,
      );
      expect(rows.trim()).toBe('1');
      const res = await fetch(`${clickhouse.url}/api/sessions/sdk-session`);
      expect(res.status).toBe(200);
    });

    it('two collectors on one ClickHouse: spans sent to either are found through both', async () => {
      const a = await clickHouseCollector('agentrt_two');
      const b = await clickHouseCollector('agentrt_two');
      const exporters = [a, b].map((c) => {
        const exporter = new OTLPTraceExporter({ url: `${c.url}/v1/traces` });
        return new BasicTracerProvider({
          resource: resourceFromAttributes({ 'service.name': 'two' }),
          spanProcessors: [new SimpleSpanProcessor(exporter)],
        });
      });
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const span = exporters[i % 2]!.getTracer('t').startSpan(`op-${i}`, {
          attributes: { 'session.id': 'shared' },
        });
        ids.push(span.spanContext().traceId);
        span.end();
      }
      await Promise.all(exporters.map((p) => p.shutdown()));
      // Each collector reads its own spans at once; the other's once shipped (within ~1 s).
      await Promise.all([a, b].map((c) => shipped(c)));
      for (const c of [a, b]) {
        const r = await query(c, 'filter attributes.session.id = "shared" | stats count(*) as n');
        expect(r.rows).toEqual([{ n: 20 }]);
        const s = (await (await fetch(`${c.url}/api/sessions/shared`)).json()) as { traces: unknown[] };
        expect(s.traces).toHaveLength(20);
      }
      // One stops; the other keeps serving everything either acknowledged.
      await a.close();
      const r = await query(b, 'filter attributes.session.id = "shared" | stats count(*) as n');
      expect(r.rows).toEqual([{ n: 20 }]);
      expect((await fetch(`${b.url}/api/traces/${ids[0]}`)).status).toBe(200);
    });

    it('stores a retried request once, as the SQLite store does, whichever collector the retry reaches', async () => {
      const a = await clickHouseCollector('agentrt_retried');
      const b = await clickHouseCollector('agentrt_retried');
      const spans = Array.from({ length: 5 }, (_, i) =>
        jsonSpan({
          traceId: hex(0x7e000 + (i % 2), 16),
          spanId: hex(i + 1, 8),
          name: `retried-${i}`,
          startMs: NOW + i,
          durationMs: 1,
        }),
      );
      // The first attempt, its retries (the answer was lost), and one request holding a span twice.
      const requests = [
        jsonRequest('retried', spans),
        jsonRequest('retried', spans),
        jsonRequest('retried', [spans[0]!, spans[0]!]),
      ];
      await send(a, requests);
      await send(b, [requests[0]!]);
      await send(sqlite, requests);
      const n = 'filter resource.attributes.service.name = "retried" | stats count(*) as n';
      expect((await query(sqlite, n)).rows).toEqual([{ n: 5 }]);
      for (const c of [a, b]) expect((await query(c, n)).rows).toEqual([{ n: 5 }]);
    });

    it('stores once, and whole, the spans a ClickHouse stopped between an INSERT and its views holds', async () => {
      const db = 'agentrt_partial';
      const sql = (q: string) => clickHouseSql(ch.url, q);
      const [first, second] = [tempDir(), tempDir()];
      cleanups.push(async () => [first, second].forEach((d) => d.remove()));
      const store = `clickhouse://default:@127.0.0.1:${ch.nodes[0]!.httpPort}/${db}`;
      // Nothing ships on its own: the spool holds the three requests until a read asks for them.
      const a = await startCollector({
        store,
        dataDir: first.dir,
        spoolShipMs: 60_000,
        summaryRefreshIntervalMs: 0,
      });
      cleanups.push(a.cleanup);
      const traces = [0, 1, 2].map((i) => hex(0x9a000 + i, 16));
      for (const [i, traceId] of traces.entries()) {
        const spans = [1, 2].map((k) =>
          jsonSpan({
            traceId,
            spanId: hex(i * 10 + k, 8),
            name: `partial-${i}-${k}`,
            startMs: NOW + k,
            durationMs: 1,
          }),
        );
        expect((await postJson(`${a.url}/v1/traces`, jsonRequest('partial', spans))).status).toBe(200);
      }
      // The spool as a collector killed while ClickHouse wrote its batch leaves it.
      cpSync(join(first.dir, 'clickhouse-spool'), join(second.dir, 'clickhouse-spool'), { recursive: true });
      // ClickHouse writes the spans part, then stops before the views (views run in name order:
      // trace_spans_mv, then traces_mv); here they are detached while a ships.
      await sql(`DETACH TABLE ${db}.trace_spans_mv`);
      await sql(`DETACH TABLE ${db}.traces_mv`);
      await fetch(`${a.url}/api/traces/${traces[0]}`);
      await a.cleanup();
      await sql(`ATTACH TABLE ${db}.trace_spans_mv`);
      await sql(`ATTACH TABLE ${db}.traces_mv`);
      expect((await sql(`SELECT count() FROM ${db}.trace_spans`)).trim()).toBe('0');
      // The restart ships the spool again: found in spans, left out, and its views completed.
      const b = await startCollector({ store, dataDir: second.dir, summaryRefreshIntervalMs: 0 });
      cleanups.push(b.cleanup);
      await shipped(b);
      const counts = await sql(
        `SELECT (SELECT count() FROM ${db}.spans), (SELECT count() FROM ${db}.trace_spans), (SELECT countMerge(spans) FROM ${db}.traces)`,
      );
      expect(counts.trim().split('\t').map(Number)).toEqual([6, 6, 6]);
      const trace = (await (await fetch(`${b.url}/api/traces/${traces[2]}`)).json()) as TraceResponse;
      expect(trace.summary.spanCount).toBe(2);
      expect(trace.roots.map((n) => n.span.name).sort()).toEqual(['partial-2-1', 'partial-2-2']);
    });

    it('reuses a trace summary only while its trace has not grown, whichever collector stored the new spans', async () => {
      const traceId = hex(0x6b000, 16);
      const span = (id: number, input: number) =>
        jsonSpan({
          traceId,
          spanId: hex(id, 8),
          ...(id > 1 ? { parentSpanId: hex(1, 8) } : {}),
          name: id > 1 ? 'chat m' : 'invoke_agent a',
          startMs: NOW + id,
          durationMs: 5,
          attributes: { 'session.id': 'known-1', ...(id > 1 ? { 'gen_ai.usage.input_tokens': input } : {}) },
        });
      const a = await clickHouseCollector('agentrt_known');
      const b = await clickHouseCollector('agentrt_known');
      const read = async (c: Collector) => {
        const { session, traces } = (await (
          await fetch(`${c.url}/api/sessions/known-1`)
        ).json()) as SessionResponse;
        const listed = (await (await fetch(`${c.url}/api/sessions`)).json()) as SessionListResponse;
        const { traces: list } = (await (
          await fetch(`${c.url}/api/traces?limit=5`)
        ).json()) as TraceListResponse;
        return {
          spans: session.spanCount,
          input: session.tokens.input,
          trace: traces.map((t) => t.spanCount),
          listed: listed.sessions.find((x) => x.sessionId === 'known-1')?.spanCount,
          list: list.find((t) => t.traceId === traceId)?.spanCount,
        };
      };
      await send(a, [jsonRequest('known', [span(1, 0), span(2, 100)])]);
      expect(await read(a)).toEqual({ spans: 2, input: 100, trace: [2], listed: 2, list: 2 });
      // The same again: summaries that a made are reused.
      expect(await read(a)).toEqual({ spans: 2, input: 100, trace: [2], listed: 2, list: 2 });
      // b stores a new span of the trace and a retried copy of one a stored.
      await send(b, [jsonRequest('known', [span(3, 50), span(2, 100)])]);
      const grown = { spans: 3, input: 150, trace: [3], listed: 3, list: 3 };
      expect(await read(a)).toEqual(grown);
      expect(await read(b)).toEqual(grown);
      const c = await clickHouseCollector('agentrt_known');
      expect(await read(c)).toEqual(grown);
    });

    it('spools what it acknowledges while ClickHouse is down, answers reads 503, and ships it all once ClickHouse is back', async () => {
      const c = await clickHouseCollector('agentrt_faults');
      const span = (i: number) => numbered('faults', 0xfa000, 'f', i);
      expect((await postJson(`${c.url}/v1/traces`, span(0))).status).toBe(200);
      await shipped(c);
      await ch.nodes[0]!.kill();
      // Acknowledged from the spool while ClickHouse is away; the reads need ClickHouse.
      for (const i of [1, 2]) expect((await postJson(`${c.url}/v1/traces`, span(i))).status).toBe(200);
      const read = await fetch(`${c.url}/api/traces/${hex(0xfa000, 16)}`);
      expect(read.status).toBe(503);
      expect(read.headers.get('retry-after')).toBe('5');
      expect(((await read.json()) as { message: string }).message).toMatch(
        /ClickHouse at http:\/\/127\.0\.0\.1:\d+ is not answering/,
      );
      await ch.nodes[0]!.start();
      expect((await postJson(`${c.url}/v1/traces`, span(3))).status).toBe(200);
      await shipped(c);
      const r = await query(c, 'stats count(*) as n by name | sort name asc');
      expect(r.rows).toEqual([0, 1, 2, 3].map((i) => ({ name: `f-${i}`, n: 1 })));
    });

    it('answers 503 with Retry-After once its spool is full while ClickHouse is frozen, and ships it all after', async () => {
      const c = await startCollector({
        store: `clickhouse://default:@127.0.0.1:${ch.nodes[0]!.httpPort}/agentrt_frozen?timeout_ms=1500`,
        summaryRefreshIntervalMs: 0,
        spoolMb: 1,
      });
      cleanups.push(c.cleanup);
      const node = ch.nodes[0]!;
      const span = (i: number) => numbered('frozen', 0xf0000, 'z', i);
      const big = 'x'.repeat(100_000);
      const heavy = (i: number) =>
        jsonRequest('frozen', [
          jsonSpan({
            traceId: hex(0xf1000 + i, 16),
            spanId: hex(1, 8),
            name: `big-${i}`,
            startMs: NOW,
            durationMs: 1,
            attributes: { big },
          }),
        ]);
      node.freeze();
      let taken = 0;
      try {
        const started = performance.now();
        let refused: Response | undefined;
        for (let i = 0; i < 40 && !refused; i++) {
          const res = await postJson(`${c.url}/v1/traces`, heavy(i));
          if (res.status === 200) taken++;
          else refused = res;
        }
        // About 1 MiB taken (100 KB records), then refused without waiting on ClickHouse.
        expect(taken).toBeGreaterThanOrEqual(5);
        expect(refused?.status).toBe(503);
        expect(refused?.headers.get('retry-after')).toBe('5');
        expect(((await refused!.json()) as { message: string }).message).toMatch(/spool/);
        expect(performance.now() - started).toBeLessThan(5000);
      } finally {
        node.thaw();
      }
      expect(await sendUntilTaken(c, span(3))).toBe(200);
      await shipped(c);
      const r = await query(c, 'filter name like /^big-/ | stats count(*) as n');
      expect(r.rows).toEqual([{ n: taken }]);
    });

    it('stores tabs, newlines, backslashes, quotes and NULs in names and attributes as sent', async () => {
      const traceId = hex(0x5a000, 16);
      const odd = 'tab\there\nnew line\\ back\'slash "quote" nul\u0000 é 🚀';
      const data = [
        jsonRequest(`svc ${odd}`, [
          jsonSpan({
            traceId,
            spanId: hex(1, 8),
            name: `name ${odd}`,
            startMs: NOW,
            durationMs: 5,
            attributes: { [`key ${odd}`]: `value ${odd}`, 'session.id': `session ${odd}` },
          }),
        ]),
      ];
      const c = await clickHouseCollector('agentrt_odd');
      const sq = await startCollector({ summaryRefreshIntervalMs: 0 });
      cleanups.push(sq.cleanup);
      await send(c, data);
      await send(sq, data);
      const path = `/api/traces/${traceId}`;
      const [a, b] = await Promise.all([fetch(`${sq.url}${path}`), fetch(`${c.url}${path}`)]);
      const trace = (await b.json()) as TraceResponse;
      expect(trace).toEqual(await a.json());
      expect(trace.roots[0]!.span.name).toBe(`name ${odd}`);
      expect(trace.roots[0]!.span.attributes[`key ${odd}`]).toBe(`value ${odd}`);
      const q = `filter traceId = "${traceId}" | fields name, resource.attributes.service.name as svc, attributes.session.id as s`;
      const expected = [{ name: `name ${odd}`, svc: `svc ${odd}`, s: `session ${odd}` }];
      expect((await query(sq, q)).rows).toEqual(expected);
      expect((await query(c, q)).rows).toEqual(expected);
      expect((await fetch(`${c.url}/api/sessions/${encodeURIComponent(`session ${odd}`)}`)).status).toBe(200);
    });

    it('retention drops whole daily partitions older than the cutoff', async () => {
      const c = await clickHouseCollector('agentrt_retention');
      const at = (daysAgo: number, i: number) =>
        jsonRequest('old', [
          jsonSpan({
            traceId: hex(0x7e000 + i, 16),
            spanId: hex(i + 1, 8),
            name: `d-${daysAgo}`,
            startMs: NOW - daysAgo * DAY_MS,
            durationMs: 1,
            attributes: { 'session.id': `r-${daysAgo}` },
          }),
        ]);
      await send(c, [at(10, 0), at(9, 1), at(0, 2)]);
      const dropped = await c.backend.applyRetention({ maxAgeMs: 8 * DAY_MS });
      expect(dropped).toBe(2);
      const r = await query(c, 'stats count(*) as n by name');
      expect(r.rows).toEqual([{ name: 'd-0', n: 1 }]);
      expect((await fetch(`${c.url}/api/sessions/r-10`)).status).toBe(404);
      const parts = await clickHouseSql(
        ch.url,
        "SELECT count() FROM system.parts WHERE active AND database = 'agentrt_retention' AND table = 'spans'",
      );
      expect(Number(parts)).toBe(1);
    });

    it('starts with a data dir that does not exist yet (only metrics.sqlite goes there)', async () => {
      const parent = tempDir();
      cleanups.push(async () => parent.remove());
      const c = await startCollector({
        dataDir: join(parent.dir, 'not', 'yet'),
        store: `clickhouse://default:@127.0.0.1:${ch.nodes[0]!.httpPort}/agentrt_fresh_dir`,
      });
      cleanups.push(c.cleanup);
      expect((await fetch(`${c.url}/healthz`)).status).toBe(200);
    });

    it('refuses a cluster the server does not have, naming the server version', async () => {
      await expect(
        createClickHouseStore({
          ...(parseStoreSetting(
            `clickhouse://default:@127.0.0.1:${ch.nodes[0]!.httpPort}/agentrt_nocluster?cluster=nowhere`,
          ) as ClickHouseLocation),
          logger: silentLogger,
          connectTimeoutMs: 2000,
          spoolDir: join(tempDir().dir, 'spool'),
        }),
      ).rejects.toThrow(
        /ClickHouse \d+\.\d+[\d.]* could not run "CREATE DATABASE IF NOT EXISTS agentrt_nocluster ON CLUSTER nowhere"/,
      );
    });
  },
);
