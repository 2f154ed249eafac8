/**
 * POST /v1/import against a real collector: a `.otlp.jsonl` file written with the official OTel
 * SDK's OTLP/JSON serializer (what `agentcore dev`'s local collector appends per export) is stored
 * whole; a truncated, malformed, oversized or hostile file is refused naming the line, and nothing
 * of it is stored.
 */
import { ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Collector, createCollector } from './collector.js';

let dir: string;
let collector: Collector;

/** `batches` exports of `perBatch` spans each (one trace per batch), one OTLP/JSON line each. */
function otlpJsonl(batches: number, perBatch: number): { text: string; traceIds: string[] } {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'imported-agent' }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('import-test');
  const lines: string[] = [];
  const traceIds: string[] = [];
  for (let b = 0; b < batches; b++) {
    const root = tracer.startSpan(`invoke_agent batch-${b}`);
    const parent = trace.setSpan(ROOT_CONTEXT, root);
    for (let i = 1; i < perBatch; i++) {
      const child = tracer.startSpan(`execute_tool step-${i}`, {}, parent);
      if (i === 1) child.setStatus({ code: SpanStatusCode.ERROR, message: 'tool failed' });
      child.end();
    }
    traceIds.push(root.spanContext().traceId);
    root.end();
    lines.push(new TextDecoder().decode(JsonTraceSerializer.serializeRequest(exporter.getFinishedSpans())));
    exporter.reset();
  }
  return { text: `${lines.join('\n')}\n`, traceIds };
}

const post = (body: string | Buffer, headers: Record<string, string> = {}) =>
  fetch(`${collector.url}/v1/import`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson', ...headers },
    body,
  });

const spanCount = async (traceId: string): Promise<number> => {
  const res = await fetch(`${collector.url}/api/traces/${traceId}`);
  return res.status === 404
    ? 0
    : ((await res.json()) as { summary: { spanCount: number } }).summary.spanCount;
};

/** The 400's message, and a check that none of the file's traces got stored. */
async function refused(body: string | Buffer, traceIds: string[], status = 400): Promise<string> {
  const res = await post(body);
  expect(res.status).toBe(status);
  const message = ((await res.json()) as { message: string }).message;
  for (const id of traceIds) expect(await spanCount(id)).toBe(0);
  return message;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentrt-import-'));
  collector = await createCollector({ dataDir: dir, host: '127.0.0.1', port: 0, maxBodyBytes: 256 * 1024 });
});
afterAll(async () => {
  await collector?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('POST /v1/import', () => {
  it('stores every line of an OTel SDK .otlp.jsonl file (gzip too)', async () => {
    const file = otlpJsonl(3, 4);
    const res = await post(file.text);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ lines: 3, spans: 12, logs: 0, metricDataPoints: 0 });
    for (const id of file.traceIds) expect(await spanCount(id)).toBe(4);
    const zipped = otlpJsonl(1, 2);
    const gz = await post(gzipSync(zipped.text), { 'content-encoding': 'gzip' });
    expect(gz.status).toBe(200);
    expect(await spanCount(zipped.traceIds[0]!)).toBe(2);
  });

  it('refuses a truncated file naming its last line, and stores none of it', async () => {
    const file = otlpJsonl(3, 3);
    const cut = file.text.slice(0, file.text.length - 40);
    expect(await refused(cut, file.traceIds)).toMatch(/^line 3: not JSON/);
  });

  it('names the line and the field of a malformed record, storing nothing', async () => {
    const file = otlpJsonl(2, 2);
    const [first, second] = file.text.trim().split('\n') as [string, string];
    const badId = second.replace(/"spanId":"[0-9a-f]{16}"/, '"spanId":"xyz"');
    expect(await refused(`${first}\n\n${badId}\n`, file.traceIds)).toBe(
      'line 3: resourceSpans[0].scopeSpans[0].spans[0].spanId must be 8 bytes as hex or base64',
    );
    const message = await refused(`${first}\n{"hello": 1}\n`, file.traceIds);
    expect(message).toBe(
      'line 2: is not an OTLP/JSON request: want an object with resourceSpans, resourceLogs or resourceMetrics',
    );
    expect(await refused(`${first}\n[1,2]\n`, file.traceIds)).toMatch(/^line 2: is not an OTLP/);
    expect(await refused(`${first}\n{"resourceSpans": {}}\n`, file.traceIds)).toMatch(
      /^line 2: resourceSpans must be an array/,
    );
    // A start time of 0 (an unset clock) would be deleted by retention at once: refused, not dropped.
    const epoch = first.replace(/"startTimeUnixNano":"\d+"/, '"startTimeUnixNano":"0"');
    expect(await refused(epoch, file.traceIds)).toMatch(/^line 1: .*startTimeUnixNano before 2000/);
    expect(await refused('\n\n', [])).toBe('the file holds no OTLP/JSON lines');
  });

  it('refuses oversized and hostile input without storing any of it', async () => {
    const file = otlpJsonl(1, 2);
    // Past the body limit (256 KiB here), also when it only gets that big once inflated.
    const big = `${file.text}${' '.repeat(300 * 1024)}\n`;
    expect(await refused(big, file.traceIds, 413)).toMatch(/exceeds 262144 bytes/);
    const bomb = await post(gzipSync(Buffer.alloc(50 * 1024 * 1024, 0x20)), { 'content-encoding': 'gzip' });
    expect(bomb.status).toBe(413);
    // Nesting deep enough to overflow a recursive parser, __proto__ keys, NUL and lone surrogates.
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    expect(await refused(`${file.text}${deep}\n`, file.traceIds)).toMatch(/^line 2: /);
    const proto = '{"__proto__": {"resourceSpans": []}, "constructor": {"prototype": {"polluted": 1}}}';
    expect(await refused(`${file.text}${proto}\n`, file.traceIds)).toMatch(/^line 2: is not an OTLP/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const odd = file.text.replace('imported-agent', 'a\\u0000\\ud800b');
    expect((await post(odd)).status).toBe(200);
    expect(await spanCount(file.traceIds[0]!)).toBe(2);
    // Wrong method and media type.
    expect((await fetch(`${collector.url}/v1/import`)).status).toBe(405);
    expect((await post(file.text, { 'content-type': 'text/plain' })).status).toBe(415);
  });
});
