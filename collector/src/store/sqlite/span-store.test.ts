import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeTraceRequestJson } from '../../otlp/decode-json.js';
import { runQuery } from '../../query/engine.js';
import { hex, jsonRequest, jsonSpan, tempDir } from '../../testing.test-util.js';
import type { SpanRecord } from '../../wire-types.js';
import { SCHEMA_VERSION, SIGNAL_TRACE } from './schema.js';
import { createSpanStore, isTraceIndexed } from './span-store.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const f of cleanups.splice(0).reverse()) f();
});

function open(percent = 100) {
  const tmp = tempDir();
  const store = createSpanStore({ dataDir: tmp.dir, traceIndexPercent: percent });
  cleanups.push(tmp.remove, () => store.close());
  return store;
}

function spans(
  count: number,
  startMs: number,
  opts: { traces?: number; session?: string; bigAttr?: number } = {},
): SpanRecord[] {
  const traces = opts.traces ?? count;
  return decodeTraceRequestJson(
    JSON.stringify(
      jsonRequest(
        'store-test',
        Array.from({ length: count }, (_, i) =>
          jsonSpan({
            traceId: hex(0x1000 + (i % traces) + startMs, 16),
            spanId: hex(i + 1 + startMs, 8),
            name: `op${i}`,
            startMs: startMs + i,
            durationMs: 1,
            attributes: {
              ...(opts.session ? { 'session.id': opts.session } : {}),
              ...(opts.bigAttr ? { payload: 'p'.repeat(opts.bigAttr) } : {}),
            },
          }),
        ),
      ),
    ),
  ).spans;
}

describe('span store', () => {
  it('indexes the chosen share of traces deterministically, while every span stays searchable', () => {
    const ids = Array.from({ length: 2000 }, (_, i) => hex(i * 7919 + 13, 16));
    const indexed = ids.filter((id) => isTraceIndexed(id, 10)).length;
    expect(indexed).toBeGreaterThan(120);
    expect(indexed).toBeLessThan(280);
    expect(ids.filter((id) => isTraceIndexed(id, 10))).toEqual(ids.filter((id) => isTraceIndexed(id, 10)));
    expect(ids.every((id) => isTraceIndexed(id, 100))).toBe(true);
    expect(ids.some((id) => isTraceIndexed(id, 0))).toBe(false);

    const none = open(0);
    none.insertBatch(spans(20, Date.now(), { traces: 4 }));
    expect(none.listTraces()).toEqual([]);
    expect((none.db.prepare('SELECT count(*) AS n FROM spans').get() as { n: number }).n).toBe(20);
    // A trace outside the index still answers by id (computed from its spans).
    expect(none.traceSummary(hex(0x1000 + Date.now() - Date.now(), 16))).toBeUndefined();
    const all = open(100);
    const now = Date.now();
    all.insertBatch(spans(20, now, { traces: 4 }));
    const listed = all.listTraces();
    expect(listed).toHaveLength(4);
    expect(listed.every((t) => t.spanCount === 5)).toBe(true);
  });

  it('walks the default trace list (noise hidden) by a partial index, not every summary', () => {
    const store = open(100);
    store.insertBatch(spans(10, Date.now(), { traces: 2 }));
    store.listTraces(); // summaries built
    const plan = store.db
      .prepare(
        `EXPLAIN QUERY PLAN SELECT summary FROM traces WHERE 1 AND ${SIGNAL_TRACE} ORDER BY start_us DESC LIMIT 100`,
      )
      .all() as { detail: string }[];
    expect(plan.map((p) => p.detail).join('\n')).toContain('traces_signal_start');
  });

  it('builds session summaries and keeps them current as spans arrive', () => {
    const store = open();
    const t = Date.now();
    store.insertBatch(spans(6, t, { traces: 2, session: 'live' }));
    expect(store.listSessions()[0]).toMatchObject({ sessionId: 'live', traceCount: 2, spanCount: 6 });
    store.insertBatch(spans(3, t + 100, { traces: 1, session: 'live' }));
    expect(store.listSessions()[0]).toMatchObject({ sessionId: 'live', traceCount: 3, spanCount: 9 });
    expect(store.getSession('live')!.traces).toHaveLength(3);
    expect(store.getSession('nope')).toBeUndefined();
  });

  it('deletes by age and by size, oldest first, and drops summaries of deleted traces', () => {
    const store = open();
    const now = Date.now();
    const dayMs = 86_400_000;
    // More than two of retention's 5000-row chunks.
    store.insertBatch(spans(12_010, now - 10 * dayMs, { traces: 1, session: 'old' }));
    store.insertBatch(spans(10, now, { traces: 1, session: 'new' }));
    expect(store.listSessions()).toHaveLength(2);
    expect(store.applyRetention({ maxAgeMs: 7 * dayMs }, now)).toBe(12_010);
    expect(store.listSessions().map((s) => s.sessionId)).toEqual(['new']);
    expect(store.listTraces()).toHaveLength(1);

    // ~5 MB of spans, then a 1 MB cap: the newest survive.
    for (let b = 0; b < 10; b++) store.insertBatch(spans(50, now + 1000 + b * 100, { bigAttr: 10_000 }));
    const before = (store.db.prepare('SELECT count(*) AS n FROM spans').get() as { n: number }).n;
    const deleted = store.applyRetention({ maxBytes: 1024 * 1024 }, now);
    const after = store.db.prepare('SELECT count(*) AS n, min(start_us) AS oldest FROM spans').get() as {
      n: number;
      oldest: number;
    };
    expect(deleted).toBeGreaterThan(0);
    expect(after.n).toBe(before - deleted);
    expect(after.n).toBeLessThan(150);
    expect(after.oldest).toBeGreaterThan((now + 1000) * 1000);
    expect(store.services()).toEqual([expect.objectContaining({ name: 'store-test', spanCount: after.n })]);
  });

  it('stores each record as a JSON document that reads back as the record', () => {
    const store = open();
    const [plain, full] = spans(2, Date.now(), { traces: 1 });
    Object.assign(full!, {
      parentSpanId: plain!.spanId,
      traceState: 'k="v"',
      flags: 257,
      name: 'chat "quoted" \\ \u2028 ünïcode',
      status: { code: 'ERROR', message: 'line\nbreak' },
      events: [{ name: 'e', timeUnixNano: 1, attributes: { a: [1, 'x', { b: null }] } }],
      links: [{ traceId: plain!.traceId, spanId: plain!.spanId, traceState: 't', attributes: {} }],
    });
    store.insertBatch([plain!, full!]);
    const back = store.spansOfTrace(plain!.traceId);
    expect(back).toEqual(JSON.parse(JSON.stringify([plain, full])));
  });

  it('keeps a span sent twice (exporter retry) once', () => {
    const store = open();
    const batch = spans(5, Date.now());
    store.insertBatch(batch);
    store.insertBatch(batch);
    expect((store.db.prepare('SELECT count(*) AS n FROM spans').get() as { n: number }).n).toBe(5);
    // Retries inside full multi-row chunks: the chunk falls back to rows, the new spans all land.
    const t = Date.now() + 10_000;
    const many = spans(100, t, { traces: 10, session: 'retry' });
    store.insertBatch(many.slice(0, 40));
    store.insertBatch([...many.slice(30, 100), ...many.slice(0, 10)]);
    const count = (sql: string): number => (store.db.prepare(sql).get() as { n: number }).n;
    expect(count('SELECT count(*) AS n FROM spans')).toBe(105);
    expect(count("SELECT count(*) AS n FROM spans WHERE session_id = 'retry'")).toBe(100);
    expect(store.services()).toEqual([expect.objectContaining({ name: 'store-test', spanCount: 105 })]);
    expect(store.getSession('retry')!.session.spanCount).toBe(100);
  });

  it('migrates a data dir written by schema version 1 (no GenAI columns) and answers from it', () => {
    const tmp = tempDir();
    cleanups.push(tmp.remove);
    // The spans table and meta row exactly as version 1 created them.
    mkdirSync(tmp.dir, { recursive: true });
    const v1 = new DatabaseSync(join(tmp.dir, 'collector.sqlite'));
    v1.exec(`PRAGMA journal_mode = WAL;
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      INSERT INTO meta VALUES ('schema', '1');
      CREATE TABLE spans (id INTEGER PRIMARY KEY, trace_id TEXT NOT NULL, span_id TEXT NOT NULL,
        parent_span_id TEXT, start_us INTEGER NOT NULL, end_us INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
        service TEXT, session_id TEXT, name TEXT NOT NULL, status TEXT NOT NULL, kind TEXT NOT NULL, doc TEXT NOT NULL);
      CREATE UNIQUE INDEX spans_trace ON spans(trace_id, span_id);
      CREATE INDEX spans_session ON spans(session_id, start_us) WHERE session_id IS NOT NULL;
      CREATE INDEX spans_start ON spans(start_us);`);
    const old = spans(6, Date.now(), { traces: 2, session: 'before-upgrade' });
    old.forEach((s, i) => {
      if (i % 3) {
        s.attributes['gen_ai.request.model'] = i % 2 ? 'claude' : 'nova';
        s.attributes['gen_ai.usage.input_tokens'] = 10 * i;
      }
    });
    const insert = v1.prepare(`INSERT INTO spans (trace_id, span_id, parent_span_id, start_us, end_us,
      duration_ns, service, session_id, name, status, kind, doc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    for (const s of old) {
      const startUs = Math.floor(s.startTimeUnixNano / 1000);
      insert.run(
        s.traceId,
        s.spanId,
        null,
        startUs,
        startUs + 1000,
        s.durationNano,
        'store-test',
        'before-upgrade',
        s.name,
        s.status.code,
        s.kind,
        JSON.stringify(s),
      );
    }
    v1.close();

    const store = createSpanStore({ dataDir: tmp.dir });
    cleanups.push(() => store.close());
    const columns = (store.db.prepare('PRAGMA table_info(spans)').all() as { name: string }[]).map(
      (c) => c.name,
    );
    expect(columns).toEqual(expect.arrayContaining(['ga_model', 'ga_input_tokens', 'hot_odd']));
    expect(store.db.prepare("SELECT value FROM meta WHERE key = 'schema'").get()).toEqual({
      value: String(SCHEMA_VERSION),
    });
    expect(store.db.prepare('SELECT count(ga_model) AS n FROM spans').get()).toEqual({ n: 4 });
    const byModel =
      'filter ispresent(attributes.gen_ai.request.model) | stats count(*) as n, sum(attributes.gen_ai.usage.input_tokens) as t by attributes.gen_ai.request.model as m | sort m';
    expect(runQuery(store.db, byModel).rows).toEqual([
      { m: 'claude', n: 2, t: 10 + 50 },
      { m: 'nova', n: 2, t: 20 + 40 },
    ]);
    // The old spans keep answering everywhere, and new ones land next to them.
    expect(store.spansOfTrace(old[0]!.traceId)).toHaveLength(3);
    store.insertBatch(spans(2, Date.now() + 1000, { session: 'before-upgrade' }));
    expect(store.getSession('before-upgrade')!.session.spanCount).toBe(8);
    store.close();
    // Opening again is a no-op.
    const again = createSpanStore({ dataDir: tmp.dir });
    cleanups.push(() => again.close());
    expect(runQuery(again.db, byModel).rows).toHaveLength(2);
  });

  it('migrates a version-2 data dir to the GenAI index ordered by time', () => {
    const tmp = tempDir();
    cleanups.push(tmp.remove);
    const first = createSpanStore({ dataDir: tmp.dir });
    const batch = spans(4, Date.now());
    batch.forEach((s, i) => (s.attributes['gen_ai.request.model'] = i % 2 ? 'claude' : 'nova'));
    first.insertBatch(batch);
    // Back to what version 2 left: the index ordered by duration.
    first.db.exec(`DROP INDEX spans_genai_time;
      CREATE INDEX spans_genai ON spans(ga_model, duration_ns, ga_input_tokens, ga_output_tokens) WHERE ga_model IS NOT NULL;
      UPDATE meta SET value = '2' WHERE key = 'schema';`);
    first.close();
    const store = createSpanStore({ dataDir: tmp.dir });
    cleanups.push(() => store.close());
    const indexes = (
      store.db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'spans'")
        .all() as {
        name: string;
      }[]
    ).map((r) => r.name);
    expect(indexes).toContain('spans_genai_time');
    expect(indexes).not.toContain('spans_genai');
    expect(store.db.prepare("SELECT value FROM meta WHERE key = 'schema'").get()).toEqual({
      value: String(SCHEMA_VERSION),
    });
    expect(
      runQuery(store.db, 'stats count(*) as n by attributes.gen_ai.request.model as m | sort m').rows,
    ).toEqual([
      { m: 'claude', n: 2 },
      { m: 'nova', n: 2 },
    ]);
  });

  it('migrates a version-3 data dir: spans(trace_id, start_us) is dropped, the spans stay', () => {
    const tmp = tempDir();
    cleanups.push(tmp.remove);
    const first = createSpanStore({ dataDir: tmp.dir });
    first.insertBatch(spans(3, Date.now(), { traces: 1 }));
    // Back to what version 3 left: the index a trace's pages walked (it cost ingest its CPU).
    first.db.exec(`CREATE INDEX spans_trace_start ON spans(trace_id, start_us);
      UPDATE meta SET value = '3' WHERE key = 'schema';`);
    first.close();
    const store = createSpanStore({ dataDir: tmp.dir });
    cleanups.push(() => store.close());
    const indexes = store.db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'spans'")
      .all()
      .map((r) => (r as { name: string }).name);
    expect(indexes).not.toContain('spans_trace_start');
    expect(indexes).toContain('spans_trace');
    expect(store.db.prepare("SELECT value FROM meta WHERE key = 'schema'").get()).toEqual({ value: '4' });
    expect(runQuery(store.db, 'stats count(*) as n').rows).toEqual([{ n: 3 }]);
  });
});
