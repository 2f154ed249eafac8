// What every store promises behind the Backend boundary (store/store.ts), run by each store's own
// test file (sqlite/sqlite-backend.test.ts, clickhouse/clickhouse-backend.test.ts) with the same
// spans and the same expectations: a store that passes is one the HTTP API can stand on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogQueryResult } from '../logs/log-query.js';
import type { MetricPoint } from '../metrics/metric-point.js';
import type { MetricQueryResult } from '../metrics/metric-query.js';
import { decodeLogsRequestJson, decodeTraceRequestJson } from '../otlp/decode-json.js';
import { silentLogger } from '../logger.js';
import { hex, jsonRequest, jsonSpan, tempDir } from '../testing.test-util.js';
import type { LogRecord, QueryResponse, SessionResponse, SpanRecord, TraceResponse } from '../wire-types.js';
import type { ExportKey } from './export-page.js';
import { openBackend } from './backend.js';
import { type Backend, parseStoreSetting } from './store.js';

/** A backend of the store under test, empty, and how to drop it after the suite. */
export interface OpenedBackend {
  backend: Backend;
  close(): Promise<void>;
  /** Another collector's backend on the same store, where collectors share one (ClickHouse). */
  another?: () => Promise<OpenedBackend>;
}

/** Opens the backend `store` names (AGENTRT_STORE's syntax) over a fresh data dir, as the collector does. */
export async function openTestBackend(store: string, stop?: () => Promise<void>): Promise<OpenedBackend> {
  const dir = tempDir();
  const backend = await openBackend(parseStoreSetting(store), {
    dataDir: dir.dir,
    logger: silentLogger,
    traceIndexPercent: 100,
    queryWorkers: 1,
    queryTimeoutMs: 10_000,
    integrityCheckMinutes: 0,
    ingestLingerMs: 0,
    spoolMb: 64,
    spoolShipMs: 1000,
  });
  return {
    backend,
    close: async () => {
      await backend.close();
      await stop?.();
      dir.remove();
    },
    ...(store.startsWith('clickhouse') ? { another: () => openTestBackend(store) } : {}),
  };
}

const NOW = Date.now() - (Date.now() % 1000);
const TRACES = 6;
const SESSION = 'contract-session';
const decoder = new TextDecoder();
const parse = <T>(bytes: Uint8Array | undefined): T => JSON.parse(decoder.decode(bytes!)) as T;
const traceId = (t: number): string => hex(0xc0de00 + t, 16);

/** Six traces of three spans (two services, a session over three of them, one error, one probe). */
function spans(): SpanRecord[] {
  const out: SpanRecord[] = [];
  for (let t = 0; t < TRACES; t++) {
    const start = NOW - 3_600_000 + t * 60_000;
    const session: Record<string, string> = t < 3 ? { 'session.id': SESSION } : {};
    const probe = t === 5;
    const request = jsonRequest(t % 2 ? 'billing' : 'weather', [
      jsonSpan({
        traceId: traceId(t),
        spanId: hex(t * 10 + 1, 8),
        name: probe ? 'GET /healthz' : 'invoke_agent',
        kind: 2,
        startMs: start,
        durationMs: 1000 + t * 100,
        attributes: { ...session, 'contract.key': t },
      }),
      ...[2, 3].map((k) =>
        jsonSpan({
          traceId: traceId(t),
          spanId: hex(t * 10 + k, 8),
          parentSpanId: hex(t * 10 + 1, 8),
          name: `chat ${k}`,
          kind: 3,
          startMs: start + k * 100,
          durationMs: 50,
          status: t === 1 && k === 3 ? 2 : 0,
          attributes: { ...session, 'gen_ai.request.model': 'm1', 'gen_ai.usage.input_tokens': 10 * k },
        }),
      ),
    ]);
    out.push(...decodeTraceRequestJson(JSON.stringify(request)).spans);
  }
  return out;
}

/** One log record under trace 0's root span and one without a trace. */
function logs(): LogRecord[] {
  const record = (body: string, trace?: { traceId: string; spanId: string }) => ({
    timeUnixNano: String((NOW - 3_600_000 + 500) * 1e6),
    severityNumber: 9,
    severityText: 'INFO',
    body: { stringValue: body },
    attributes: [{ key: 'session.id', value: { stringValue: SESSION } }],
    ...trace,
  });
  return decodeLogsRequestJson(
    JSON.stringify({
      resourceLogs: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'weather' } }] },
          scopeLogs: [
            {
              scope: { name: 'test' },
              logRecords: [
                record('contract log in a span', { traceId: traceId(0), spanId: hex(1, 8) }),
                record('contract log alone'),
              ],
            },
          ],
        },
      ],
    }),
  ).logs;
}

function gauge(value: number, minutesAgo: number): MetricPoint {
  const t = (NOW - minutesAgo * 60_000) * 1e6;
  return {
    name: 'contract.gauge',
    description: '',
    unit: '1',
    kind: 'gauge',
    temporality: 'unspecified',
    monotonic: false,
    resource: { 'service.name': 'weather' },
    scope: 'test',
    attributes: { Name: 'a' },
    startTimeUnixNano: t,
    timeUnixNano: t,
    value,
  };
}

/** Every record of an export of `sel` page by page, as the HTTP streamer reads them. */
async function exported(backend: Backend, table: 'spans' | 'logs', trace: string): Promise<number> {
  let n = 0;
  for (let after: ExportKey = [-Infinity, 0]; ;) {
    const page = await backend.exportPage(table, { traceId: trace }, after);
    if (!page) return n;
    const body = JSON.parse(decoder.decode(page.line)) as Record<string, unknown>;
    n += JSON.stringify(body).split(table === 'spans' ? '"spanId"' : '"timeUnixNano"').length - 1;
    after = page.last;
  }
}

/** Runs the Backend contract on the store `open` gives (a fresh, empty one). */
export function runBackendContract(name: string, open: () => Promise<OpenedBackend>, skip?: string): void {
  describe.skipIf(skip !== undefined)(`backend contract: ${name}`, () => {
    let opened: OpenedBackend;
    let b: Backend;
    beforeAll(async () => {
      opened = await open();
      b = opened.backend;
      // Written twice: an exporter's retry of a request already stored is stored once.
      await b.write(spans(), logs());
      await b.write(spans().slice(0, 3), []);
      await b.metrics.ingest([gauge(1, 30), gauge(2, 20), gauge(3, 10)]);
    }, 120_000);
    afterAll(async () => {
      await opened?.close();
    });

    it('is writable and healthy, and passes on errors it does not own as they are', () => {
      expect(b.unwritable()).toBeUndefined();
      expect(b.health().ok).toBe(true);
      const plain = new Error('not the store');
      expect(b.failure(plain)).toBe(plain);
      expect(b.location).toBeTruthy();
    });

    it('answers a trace as its tree with its logs, each span once; undefined for an unknown trace', async () => {
      const trace = parse<TraceResponse>(await b.spans.traceJson(traceId(0)));
      expect(trace.summary).toMatchObject({ traceId: traceId(0), spanCount: 3, rootName: 'invoke_agent' });
      expect(trace.roots).toHaveLength(1);
      expect(trace.roots[0]!.children.map((c) => c.span.name)).toEqual(['chat 2', 'chat 3']);
      expect(trace.roots[0]!.logs.map((l) => l.body)).toEqual(['contract log in a span']);
      expect(await b.spans.traceJson(hex(0xdead, 16))).toBeUndefined();
      expect((await b.spans.spansOfTrace(traceId(1))).map((s) => s.spanId)).toEqual(
        [11, 12, 13].map((n) => hex(n, 8)),
      );
      expect((await b.logs.ofTrace(traceId(0))).map((l) => l.body)).toEqual(['contract log in a span']);
    });

    it('lists traces newest first, filtered as asked, probes hidden unless asked for', async () => {
      const ids = async (filter: Parameters<Backend['spans']['listTraces']>[0]) =>
        (await b.spans.listTraces(filter)).map((t) => t.traceId);
      expect(await ids({})).toEqual([4, 3, 2, 1, 0].map(traceId));
      expect(await ids({ noise: 'only' })).toEqual([traceId(5)]);
      expect(await ids({ service: 'billing' })).toEqual([3, 1].map(traceId));
      expect(await ids({ status: 'error' })).toEqual([traceId(1)]);
      expect(await ids({ sessionId: SESSION })).toEqual([2, 1, 0].map(traceId));
      expect(await ids({ minDurationMs: 1350 })).toEqual([traceId(4)]);
      expect(await ids({ q: traceId(2).toUpperCase() })).toEqual([traceId(2)]);
      expect(await ids({ limit: 2 })).toEqual([4, 3].map(traceId));
      const [newest] = await b.spans.listTraces({ limit: 1 });
      expect(newest).toMatchObject({ spanCount: 3, serviceName: 'weather', errorCount: 0 });
    });

    it('answers sessions: the list, one session as values and as JSON bytes alike', async () => {
      const sessions = await b.spans.listSessions(10);
      expect(sessions.map((s) => [s.sessionId, s.traceCount])).toEqual([[SESSION, 3]]);
      const session = await b.spans.getSession(SESSION);
      // A session's traces oldest first: the order its turns were taken.
      expect(session!.traces.map((t) => t.traceId)).toEqual([0, 1, 2].map(traceId));
      expect(parse<SessionResponse>(await b.spans.sessionJson(SESSION))).toEqual(session);
      expect(await b.spans.sessionJson('no-such-session')).toBeUndefined();
    });

    it('names services with their span counts, and the attribute keys seen', async () => {
      const services = await b.spans.services();
      expect(Object.fromEntries(services.map((s) => [s.name, s.spanCount]))).toEqual({
        weather: 9,
        billing: 9,
      });
      expect(await b.spans.attributeKeys()).toEqual(
        expect.arrayContaining(['traceId', 'attributes.contract.key', 'attributes.gen_ai.request.model']),
      );
    });

    it('runs the query language alike', async () => {
      const answer = parse<QueryResponse>(
        await b.spans.queryJson(
          'stats count(*) as n, sum(attributes.gen_ai.usage.input_tokens) as tokens by resource.attributes.service.name | sort n desc, tokens desc',
        ),
      );
      expect(answer.rows).toEqual([
        { 'resource.attributes.service.name': 'weather', n: 9, tokens: 150 },
        { 'resource.attributes.service.name': 'billing', n: 9, tokens: 150 },
      ]);
    });

    it('searches log records and pages exports of spans and logs, each record once', async () => {
      const found = parse<LogQueryResult>(await b.logs.json({ limit: 10, text: 'contract log' }));
      expect(found.logs.map((r) => r.body).sort()).toEqual(['contract log alone', 'contract log in a span']);
      expect(await exported(b, 'spans', traceId(0))).toBe(3);
      expect(await exported(b, 'logs', traceId(0))).toBe(1);
    });

    it('stores metric points and reads them back on the query threads', async () => {
      const names = parse<{ metrics: { name: string }[] }>(await b.metrics.json({ type: 'names' }));
      expect(names.metrics.map((m) => m.name)).toContain('contract.gauge');
      const startMs = NOW - 3_600_000;
      const series = parse<MetricQueryResult>(
        await b.metrics.json({
          type: 'series',
          query: {
            name: 'contract.gauge',
            fn: 'max',
            by: [],
            where: [],
            startMs,
            endMs: NOW,
            stepMs: 3_600_000,
          },
        }),
      );
      expect(series).toMatchObject({ kind: 'gauge', series: [{ points: [[startMs, 3]] }] });
    });

    it('keeps the last alert window saved per rule and group, none of a group saved as gone', async () => {
      const w = (n: number): string => JSON.stringify({ points: [[NOW, n]], sum: n, firing: n > 2 });
      const hostile = "it's\t\n\\ a 'group' 🎯 \u0000 \\N";
      await b.alertWindows.write([
        { rule: 'r1', group: 'a', json: w(1) },
        { rule: 'r1', group: hostile, json: w(2) },
        { rule: 'r2', group: 'a', json: w(3) },
      ]);
      await b.alertWindows.write([
        { rule: 'r1', group: 'a', json: w(4) },
        { rule: 'r2', group: 'a', json: null },
      ]);
      await b.alertWindows.write([]);
      const expected = [
        { rule: 'r1', group: 'a', json: w(4) },
        { rule: 'r1', group: hostile, json: w(2) },
      ];
      const sorted = <T extends { group: string }>(rows: T[]): T[] =>
        rows.sort((x, y) => (x.group < y.group ? -1 : 1));
      expect(sorted(await b.alertWindows.read())).toEqual(expected);
      if (!opened.another) return;
      // Collectors sharing the store share the windows: each reads, and builds on, the other's.
      const other = await opened.another();
      try {
        expect(sorted(await other.backend.alertWindows.read())).toEqual(expected);
        await other.backend.alertWindows.write([{ rule: 'r1', group: 'a', json: null }]);
        expect(await b.alertWindows.read()).toEqual([expected[1]]);
      } finally {
        await other.close();
      }
    });

    it('keeps what retention does not reach', async () => {
      expect(await b.applyRetention({ maxAgeMs: 30 * 86_400_000 })).toBe(0);
      expect(await b.spans.listTraces({})).toHaveLength(5);
    });
  });
}
