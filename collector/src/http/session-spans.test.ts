import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeTraceRequestJson } from '../otlp/decode-json.js';
import {
  hex,
  jsonRequest,
  jsonSpan,
  memoryOf,
  ndjsonLines,
  startCollector,
  startCollectorProcess,
  testStoreEnv,
} from '../testing.test-util.js';
import type { SpanRecord } from '../wire-types.js';

type Started = Awaited<ReturnType<typeof startCollector>>;
const T0 = Date.UTC(2026, 10, 21, 12);
const SESSION = 'sess-whole-1';

async function write(c: Started, spans: Record<string, unknown>[]): Promise<void> {
  await c.backend.write(decodeTraceRequestJson(JSON.stringify(jsonRequest('svc', spans))).spans, []);
}

const lines = (url: string): Promise<SpanRecord[]> => ndjsonLines<SpanRecord>(url);

describe('GET /api/sessions/{id}/spans', () => {
  let c: Started;
  beforeAll(async () => {
    c = await startCollector();
    // Two traces of the session: only their roots carry session.id (a child from another service
    // often does not), and a third trace of another session.
    const trace = (t: number, session: string, children: number) => [
      jsonSpan({
        traceId: hex(t, 16),
        spanId: hex(t * 100_000, 8),
        name: `turn ${t}`,
        startMs: T0 + t * 10_000,
        durationMs: 500,
        attributes: { 'session.id': session },
      }),
      ...Array.from({ length: children }, (_, i) =>
        jsonSpan({
          traceId: hex(t, 16),
          spanId: hex(t * 100_000 + i + 1, 8),
          parentSpanId: hex(t * 100_000, 8),
          name: `step ${i}`,
          startMs: T0 + t * 10_000 + i + 1,
          durationMs: 1,
        }),
      ),
    ];
    await write(c, [...trace(1, SESSION, 1500), ...trace(2, SESSION, 3), ...trace(3, 'other', 5)]);
  });
  afterAll(async () => c?.cleanup());

  it('streams every span of every trace of the session, one record a line, each trace in start order', async () => {
    const spans = await lines(`${c.url}/api/sessions/${SESSION}/spans`);
    expect(spans).toHaveLength(1501 + 4);
    expect(new Set(spans.map((s) => s.spanId)).size).toBe(1505);
    expect(spans.map((s) => s.traceId).filter((t, i, all) => t !== all[i - 1])).toEqual([
      hex(1, 16),
      hex(2, 16),
    ]);
    expect(spans[0]).toMatchObject({ name: 'turn 1', traceId: hex(1, 16) });
    expect(spans[1]!.name).toBe('step 0');
    expect(spans.at(-1)!.name).toBe('step 2');
  });

  it('answers 404 naming a session that does not exist, 400 for a malformed id', async () => {
    const missing = await fetch(`${c.url}/api/sessions/no-such-session/spans`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { message: string }).message).toBe(
      'session "no-such-session" not found',
    );
    expect((await fetch(`${c.url}/api/sessions/%E0%A4%A/spans`)).status).toBe(400);
  });
});

/** Streams a response to its end, sampling the process's anonymous memory (its heap) meanwhile. */
async function streamed(pid: number, url: string) {
  const before = memoryOf(pid).anon;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, memoryOf(pid).anon)), 10);
  try {
    const res = await fetch(url);
    let bytes = 0;
    let lines = 0;
    for await (const part of res.body!) {
      const chunk = part as Uint8Array;
      bytes += chunk.length;
      for (const b of chunk) if (b === 10) lines++;
    }
    return { status: res.status, bytes, lines, growth: peak - before };
  } finally {
    clearInterval(sampler);
  }
}

describe('a session of 100,000 spans', () => {
  let c: Started;
  const SPANS = 100_000;
  beforeAll(async () => {
    c = await startCollector();
    const note = 'n'.repeat(1024);
    for (let done = 0; done < SPANS; done += 5000)
      await write(
        c,
        Array.from({ length: 5000 }, (_, i) =>
          jsonSpan({
            traceId: hex(1 + Math.floor((done + i) / 50_000), 16),
            spanId: hex(done + i + 1, 8),
            name: 'step',
            startMs: T0 + done + i,
            durationMs: 1,
            attributes: { 'session.id': 'big-session', note },
          }),
        ),
      );
    await c.close();
  }, 180_000);
  afterAll(async () => c?.cleanup());

  it('streams whole while the collector process stays within its memory bound', async () => {
    const p = startCollectorProcess(c.dataDir, await testStoreEnv(c.dataDir));
    try {
      const url = await p.url;
      // The session's summary is built first (as the UI's session view would): not part of the stream.
      expect((await fetch(`${url}/api/sessions/big-session`)).status).toBe(200);
      // The collector's usual bound: what the export of the same spans (OTLP lines) takes.
      const exported = await streamed(p.child.pid!, `${url}/api/export?startMs=0`);
      const session = await streamed(p.child.pid!, `${url}/api/sessions/big-session/spans`);
      expect(session.status).toBe(200);
      expect(session.lines).toBe(SPANS);
      console.log(
        `session spans: ${(session.bytes / 1e6).toFixed(0)} MB streamed, anonymous memory +${(session.growth / 1e6).toFixed(0)} MB; the export of the same spans: ${(exported.bytes / 1e6).toFixed(0)} MB, +${(exported.growth / 1e6).toFixed(0)} MB`,
      );
      // Holding the session whole would take more than its bytes, one of its 50,000-span traces half
      // of them (71 MB) on top of the usual: what the export of the same spans takes, at least 50 MB
      // (ClickHouse streams its export in +18 MB, the session in +30 to +48 MB). Anonymous memory
      // swings by ±10 MB between runs (SQLite, quiet machine: session +55 to +77 MB, export +77 to
      // +86 MB; CI read +90 against +85), so half the bytes alone is no bound to hold a run to.
      expect(session.growth).toBeLessThan(session.bytes);
      expect(session.growth).toBeLessThan(Math.max(exported.growth, 50e6) * 1.5);
    } finally {
      p.child.kill('SIGKILL');
      await p.exited;
    }
  }, 120_000);
});
