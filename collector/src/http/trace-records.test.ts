// GET /api/traces/{id}/spans and /logs: a trace's stored records streamed one a line in start
// order, a page at a time (the trace view paints its first rows from the first page); on both
// stores (vitest.config.ts CLICKHOUSE_PASS).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeLogsRequestJson, decodeTraceRequestJson } from '../otlp/decode-json.js';
import { hex, jsonRequest, jsonSpan, ndjsonLines, shipped, startCollector } from '../testing.test-util.js';
import type { LogRecord, SpanRecord } from '../wire-types.js';

type Started = Awaited<ReturnType<typeof startCollector>>;
const T0 = Date.UTC(2026, 10, 21, 12);
const TRACE = hex(7, 16);
const SPANS = 2500; // more than two pages (EXPORT_CHUNK_RECORDS)

function logRequest(traceId: string, spanId: string, body: string): string {
  const timeUnixNano = (BigInt(T0 + 5) * 1_000_000n).toString();
  return JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'svc' } }] },
        scopeLogs: [
          {
            scope: { name: 'test' },
            logRecords: [{ timeUnixNano, traceId, spanId, body: { stringValue: body } }],
          },
        ],
      },
    ],
  });
}

describe('GET /api/traces/{id}/spans and /logs', () => {
  let c: Started;
  beforeAll(async () => {
    c = await startCollector();
    // Written children first and shuffled: the stream's order is the store's (start time), not
    // the order of arrival.
    const children = Array.from({ length: SPANS - 1 }, (_, i) =>
      jsonSpan({
        traceId: TRACE,
        spanId: hex(i + 2, 8),
        parentSpanId: hex(1, 8),
        name: `step ${i}`,
        startMs: T0 + 1 + i,
        durationMs: 1,
      }),
    ).reverse();
    const root = jsonSpan({ traceId: TRACE, spanId: hex(1, 8), name: 'root', startMs: T0, durationMs: 5000 });
    const other = jsonSpan({
      traceId: hex(8, 16),
      spanId: hex(99, 8),
      name: 'other',
      startMs: T0,
      durationMs: 1,
    });
    await c.backend.write(decodeTraceRequestJson(JSON.stringify(jsonRequest('svc', children))).spans, []);
    await c.backend.write(decodeTraceRequestJson(JSON.stringify(jsonRequest('svc', [root, other]))).spans, [
      ...decodeLogsRequestJson(logRequest(TRACE, hex(3, 8), 'tool said hello')).logs,
      ...decodeLogsRequestJson(logRequest(hex(8, 16), hex(99, 8), 'not this trace')).logs,
    ]);
    await shipped(c);
  });
  afterAll(async () => c?.cleanup());

  it('streams every span of the trace, one stored record a line, in start order', async () => {
    const spans = await ndjsonLines<SpanRecord>(`${c.url}/api/traces/${TRACE}/spans`);
    expect(spans).toHaveLength(SPANS);
    expect(new Set(spans.map((s) => s.spanId)).size).toBe(SPANS);
    expect(spans.every((s) => s.traceId === TRACE)).toBe(true);
    expect(spans[0]!.name).toBe('root');
    expect(spans.map((s) => s.name).slice(1, 4)).toEqual(['step 0', 'step 1', 'step 2']);
    expect(spans.at(-1)!.name).toBe(`step ${SPANS - 2}`);
    // Upper-case ids are the same trace.
    expect(await ndjsonLines(`${c.url}/api/traces/${TRACE.toUpperCase()}/spans`)).toHaveLength(SPANS);
  });

  it('streams the trace log records, and none for a trace without any', async () => {
    const logs = await ndjsonLines<LogRecord>(`${c.url}/api/traces/${TRACE}/logs`);
    expect(logs.map((l) => [l.spanId, l.body])).toEqual([[hex(3, 8), 'tool said hello']]);
    expect(await ndjsonLines(`${c.url}/api/traces/${hex(9, 16)}/logs`)).toEqual([]);
  });

  it('answers 404 for a trace that does not exist, 400 for a malformed or hostile id', async () => {
    const missing = await fetch(`${c.url}/api/traces/${hex(9, 16)}/spans`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { message: string }).message).toBe(`trace ${hex(9, 16)} not found`);
    for (const id of [
      'not-a-trace',
      `${TRACE}0`,
      '..%2F..%2Fetc',
      `${'a'.repeat(31)}%00`,
      'x'.repeat(5000),
    ]) {
      const res = await fetch(`${c.url}/api/traces/${id}/spans`);
      expect(res.status, id).toBe(400);
      expect(((await res.json()) as { message: string }).message, id).toMatch(/traceId/);
    }
    expect((await fetch(`${c.url}/api/traces/%E0%A4%A/logs`)).status).toBe(400);
    expect((await fetch(`${c.url}/api/traces/${TRACE}/other`)).status).toBe(404);
  });
});
