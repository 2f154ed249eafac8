// Shared helpers for the collector's tests (not part of the package's API).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Collector, type CollectorOptions, createCollector } from './http/collector.js';

export function tempDir(prefix = 'agentrt-collector-'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A collector on 127.0.0.1 port 0 over a fresh data dir (or the given one). */
export async function startCollector(
  options: Partial<CollectorOptions> = {},
): Promise<Collector & { dataDir: string; cleanup: () => Promise<void> }> {
  const tmp = options.dataDir ? undefined : tempDir();
  const dataDir = options.dataDir ?? tmp!.dir;
  const collector = await createCollector({ host: '127.0.0.1', port: 0, ...options, dataDir });
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
