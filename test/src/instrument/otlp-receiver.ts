/**
 * A real OTLP/HTTP receiver for process-level tests: it accepts `application/json` and
 * `application/x-protobuf` bodies on /v1/traces, /v1/logs and /v1/metrics, decodes them with the
 * collector's own OTLP decoders (so the protobuf path is checked field by field, not just by its
 * content type), and answers like a collector does.
 */
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type LogRecord,
  type SpanRecord,
  decodeLogsRequest,
  decodeLogsRequestJson,
  decodeTraceRequest,
  decodeTraceRequestJson,
} from '@agentrt/collector';
import { readBody } from '@agentrt/kit';

export interface OtlpReceiver {
  url: string;
  spans: SpanRecord[];
  logs: LogRecord[];
  /** Content-Type of every request, per path. */
  contentTypes: Map<string, Set<string>>;
  readonly requests: number;
  /** Polls `probe` until it returns something, or throws after `timeoutMs` saying what arrived. */
  waitFor<T>(what: string, probe: () => T | undefined | false, timeoutMs?: number): Promise<T>;
  close(): Promise<void>;
}

/** Far above any export a test makes: a bigger one is a bug the 400 names. */
const MAX_EXPORT_BYTES = 64 * 1024 * 1024;

/** Starts a receiver on 127.0.0.1, port 0. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: SpanRecord[] = [];
  const logs: LogRecord[] = [];
  const contentTypes = new Map<string, Set<string>>();
  let requests = 0;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = req.url ?? '';
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
      requests++;
      if (!contentTypes.has(path)) contentTypes.set(path, new Set());
      contentTypes.get(path)!.add(type);
      try {
        const body = await readBody(req, MAX_EXPORT_BYTES, { decompress: true });
        const json = type === 'application/json';
        if (path === '/v1/traces') {
          spans.push(...(json ? decodeTraceRequestJson(body) : decodeTraceRequest(body)).spans);
        } else if (path === '/v1/logs') {
          logs.push(...(json ? decodeLogsRequestJson(body) : decodeLogsRequest(body)).logs);
        } else if (path !== '/v1/metrics') {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
        res.end(json ? '{}' : Buffer.alloc(0));
      } catch (error) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(String(error));
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    logs,
    contentTypes,
    get requests() {
      return requests;
    },
    async waitFor(what, probe, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const result = probe();
        if (result !== undefined && result !== false) return result;
        if (Date.now() > deadline) {
          throw new Error(
            `timed out waiting for ${what}; got ${spans.length} spans (${spans.map((s) => s.name).join(', ')}) and ${logs.length} logs`,
          );
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
