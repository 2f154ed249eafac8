import { type IncomingMessage, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeTraceRequestJson } from '../otlp/decode-json.js';
import {
  hex,
  jsonRequest,
  jsonSpan,
  memoryOf,
  postJson,
  shipped,
  startCollector,
  startCollectorProcess,
  testStoreEnv,
} from '../testing.test-util.js';

type Started = Awaited<ReturnType<typeof startCollector>>;

const SPANS = 8000;
const T0 = Date.UTC(2026, 10, 21, 12);

describe('export', () => {
  let a: Started;
  let b: Started;

  beforeAll(async () => {
    a = await startCollector({ maxConcurrentExports: 8 });
    b = await startCollector();
    // 8000 spans with a 4 KiB prompt each: ~35 MB of records.
    const prompt = 'p'.repeat(4096);
    for (let done = 0; done < SPANS; done += 2000) {
      const spans = Array.from({ length: 2000 }, (_, i) =>
        jsonSpan({
          traceId: hex(1 + Math.floor((done + i) / 100), 16),
          spanId: hex(done + i + 1, 8),
          name: 'chat',
          startMs: T0 + done + i,
          durationMs: 1,
          attributes: { 'gen_ai.prompt': prompt },
        }),
      );
      await a.backend.write(decodeTraceRequestJson(JSON.stringify(jsonRequest('svc', spans))).spans, []);
    }
    // On ClickHouse: out of the spool before the exports are timed (at once on SQLite).
    await shipped(a, 110_000);
  }, 120_000);
  afterAll(async () => {
    await a?.cleanup();
    await b?.cleanup();
  });

  it('streams everything as OTLP lines of about 1 MiB that import into another collector', async () => {
    const res = await fetch(`${a.url}/api/export?startMs=0`);
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    expect(res.headers.get('content-length')).toBeNull();
    const lines = (await res.text()).trim().split('\n');
    // ~4.3 KB records: about 240 spans a line (1000 for small ones), each line about 1 MB.
    expect(lines.length).toBeGreaterThan(SPANS / 300);
    expect(lines.length).toBeLessThan(SPANS / 200);
    for (const line of lines) expect(line.length).toBeLessThan(1.5e6);
    for (const line of lines.slice(0, 3))
      expect((await postJson(`${b.url}/v1/traces`, line)).status).toBe(200);
    const count = await postJson(`${b.url}/api/query`, { query: 'stats count(*) as n' });
    const imported = lines.slice(0, 3).reduce((n, l) => n + decodeTraceRequestJson(l).spans.length, 0);
    expect(((await count.json()) as { rows: { n: number }[] }).rows[0]!.n).toBe(imported);
    // Keyset paging: every span once, in time order.
    const ids = lines.flatMap((l) => decodeTraceRequestJson(l).spans.map((s) => s.spanId));
    expect(new Set(ids).size).toBe(SPANS);
    expect(ids[0]).toBe(hex(1, 8));
    expect(ids.at(-1)).toBe(hex(SPANS, 8));
  });

  it('keeps the collector process memory-bounded through eight parallel exports of everything', async () => {
    // The collector as it runs (dist/main.js, its own process), over a's data.
    await a.close();
    const p = startCollectorProcess(a.dataDir, await testStoreEnv(a.dataDir));
    try {
      const url = await p.url;
      const before = memoryOf(p.child.pid!);
      // Anonymous memory (the heap; SQLite's mmap of the database file is file-backed and shared).
      let peakAnon = before.anon;
      const sampler = setInterval(() => (peakAnon = Math.max(peakAnon, memoryOf(p.child.pid!).anon)), 10);
      const answers = await Promise.all(
        Array.from({ length: 8 }, async () => {
          const res = await fetch(`${url}/api/export?startMs=0`);
          let bytes = 0;
          for await (const part of res.body!) bytes += (part as Uint8Array).length;
          return { status: res.status, bytes };
        }),
      );
      clearInterval(sampler);
      // At most two stream at once (each ~35 MB of JSON); the rest are refused with 429 at once.
      const full = answers.filter((x) => x.status === 200);
      expect(full.length).toBeGreaterThanOrEqual(2);
      for (const x of full) expect(x.bytes).toBeGreaterThan(30e6);
      for (const x of answers) expect([200, 429]).toContain(x.status);
      // Issue #14: 0.5 → 2.3 GB for eight parallel exports of 428k spans.
      console.log(
        `export memory: anonymous ${(before.anon / 1e6).toFixed(0)} MB → peak ${(peakAnon / 1e6).toFixed(0)} MB; ${full.length} of 8 streamed ${(full.length * 35).toFixed(0)} MB`,
      );
      expect(peakAnon - before.anon).toBeLessThan(300e6);
    } finally {
      p.child.kill('SIGKILL');
      await p.exited;
    }
  }, 120_000);

  it('answers 429 past its concurrent exports (a slow reader holds its slot) but not to one trace, 404/400 for bad traces', async () => {
    const c = await startCollector({ maxConcurrentExports: 1 });
    try {
      const prompt = 'p'.repeat(4096);
      const spans = Array.from({ length: 3000 }, (_, i) =>
        jsonSpan({
          traceId: hex(7, 16),
          spanId: hex(i + 1, 8),
          name: 'x',
          startMs: T0 + i,
          durationMs: 1,
          attributes: { prompt },
        }),
      );
      await c.backend.write(decodeTraceRequestJson(JSON.stringify(jsonRequest('svc', spans))).spans, []);
      expect((await fetch(`${c.url}/api/export?traceId=${hex(8, 16)}`)).status).toBe(404);
      expect((await fetch(`${c.url}/api/export?traceId=xyz`)).status).toBe(400);
      // A client that reads nothing: the export waits on back-pressure and keeps its slot.
      const u = new URL(c.url);
      const stalled = request({ host: u.hostname, port: u.port, path: '/api/export?startMs=0' });
      const head = new Promise<IncomingMessage>((resolve) => stalled.on('response', resolve));
      stalled.end();
      const paused = await head;
      paused.pause();
      await new Promise((r) => setTimeout(r, 200));
      const refused = await fetch(`${c.url}/api/export?startMs=0`);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('2');
      // one trace has slots of its own: it is not held up by the export of a whole range
      const trace = await fetch(`${c.url}/api/export?traceId=${hex(7, 16)}`);
      expect(trace.status).toBe(200);
      await trace.arrayBuffer();
      stalled.destroy();
      await new Promise((r) => setTimeout(r, 200));
      const again = await fetch(`${c.url}/api/export?traceId=${hex(7, 16)}`);
      expect(again.status).toBe(200);
      expect((await again.text()).trim().split('\n').length).toBeGreaterThan(10);
    } finally {
      await c.cleanup();
    }
  });

  it('exports a span its exporter sent twice (a retry) once, in a trace and in a range', async () => {
    const c = await startCollector();
    try {
      const spans = [1, 2, 3].map((i) =>
        jsonSpan({ traceId: hex(9, 16), spanId: hex(i, 8), name: `r${i}`, startMs: T0 + i, durationMs: 1 }),
      );
      const body = jsonRequest('svc', spans);
      for (let i = 0; i < 2; i++) expect((await postJson(`${c.url}/v1/traces`, body)).status).toBe(200);
      for (const path of [`traceId=${hex(9, 16)}`, 'startMs=0']) {
        const lines = (await (await fetch(`${c.url}/api/export?${path}`)).text()).trim().split('\n');
        const ids = lines.flatMap((l) => decodeTraceRequestJson(l).spans.map((s) => s.spanId));
        expect({ path, ids }).toEqual({ path, ids: [hex(1, 8), hex(2, 8), hex(3, 8)] });
      }
    } finally {
      await c.cleanup();
    }
  });
});
