import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { createSpanExporter, warmUpExporter } from '../exporters.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A collector that answers the first request with 503 (retry at once), and the rest with 200. */
async function startCollector() {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks) });
      if (received.length === 1) {
        res.writeHead(503, { 'retry-after': new Date(0).toUTCString() }).end(); // a past date: at once
      } else {
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1/traces`, received, close: () => server.close() };
}

const savedEnv = { ...process.env };
afterEach(() => {
  process.env = { ...savedEnv };
});

describe('the http/protobuf span exporter', () => {
  it('sends our encoding through upstream transport: env headers, gzip, retries', async () => {
    process.env.OTEL_EXPORTER_OTLP_TRACES_HEADERS = 'x-tenant=t-1';
    process.env.OTEL_EXPORTER_OTLP_TRACES_COMPRESSION = 'gzip';
    const collector = await startCollector();
    const memory = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] }).getTracer(
      'test',
    );
    tracer.startSpan('one', { attributes: { 'http.request.method': 'GET', n: 1 } }).end();
    tracer.startSpan('two ü').end();
    const spans = memory.getFinishedSpans();

    const exporter = createSpanExporter({ exporter: 'otlp', protocol: 'http/protobuf', url: collector.url });
    warmUpExporter(exporter);
    const result = await new Promise<ExportResult>((resolve) => exporter.export(spans, resolve));
    await exporter.shutdown();
    collector.close();

    expect(result.code).toBe(ExportResultCode.SUCCESS);
    expect(collector.received).toHaveLength(2); // the 503, then its retry
    const expected = Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!);
    for (const { headers, body } of collector.received) {
      expect(headers['content-type']).toBe('application/x-protobuf');
      expect(headers['content-encoding']).toBe('gzip');
      expect(headers['x-tenant']).toBe('t-1');
      expect(gunzipSync(body).equals(expected)).toBe(true);
    }
  });
});
