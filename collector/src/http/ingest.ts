// OTLP/HTTP ingest (/v1/traces, /v1/logs, /v1/metrics): decode in the request's encoding, hand the
// records to the backend through the ingest queue (acknowledged once durable), forward upstream,
// answer with the OTLP response in the same encoding.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { decodeMetricPoints, decodeMetricPointsJson } from '../metrics/decode-metrics.js';
import { decodeLogsRequestJson, decodeTraceRequestJson } from '../otlp/decode-json.js';
import { decodeLogsRequest, decodeTraceRequest } from '../otlp/decode-protobuf.js';
import { type Signal, exportResponseJson, exportResponseProtobuf } from '../otlp/encode-response.js';
import { spansInTimeWindow } from '../otlp/span-time.js';
import type { Backend } from '../store/store.js';
import type { createForwarder } from './forwarder.js';
import { HttpError, readBody } from '@agentrt/kit';
import type { createIngestQueue } from './ingest-queue.js';
import { mediaType, send } from './respond.js';

export type Encoding = 'protobuf' | 'json';

/** What ingest counts for /healthz. */
export interface IngestCounters {
  spans: number;
  logs: number;
  metricDataPoints: number;
  rejected: number;
  requests: number;
}

export interface IngestOptions {
  backend: Backend;
  queue: ReturnType<typeof createIngestQueue>;
  forwarder: ReturnType<typeof createForwarder>;
  counters: IngestCounters;
  maxBodyBytes: number;
}

/** The encoding of an OTLP request by its Content-Type; 415 names the two it takes. */
export function ingestEncoding(req: IncomingMessage): Encoding {
  const type = mediaType(req);
  if (type === 'application/x-protobuf' || type === 'application/protobuf') return 'protobuf';
  if (type === 'application/json') return 'json';
  throw new HttpError(
    415,
    `Content-Type '${type || '(none)'}' is not supported; use application/x-protobuf or application/json`,
    { code: 'unsupported_media_type' },
  );
}

/** What one request stored and refused. */
interface Stored {
  rejected: number;
  message: string | undefined;
}

/** Returns the handler of one OTLP request (the method and encoding checked already). */
export function createIngest(options: IngestOptions) {
  const { backend, queue, forwarder, counters } = options;

  async function store(signal: Signal, body: Buffer, encoding: Encoding): Promise<Stored> {
    const protobuf = encoding === 'protobuf';
    if (signal === 'traces') {
      const d = spansInTimeWindow(
        protobuf ? decodeTraceRequest(body) : decodeTraceRequestJson(body),
        Date.now(),
      );
      await queue.enqueue(d.spans, []);
      counters.spans += d.spans.length;
      return { rejected: d.rejected, message: d.rejectReason };
    }
    if (signal === 'logs') {
      const d = protobuf ? decodeLogsRequest(body) : decodeLogsRequestJson(body);
      await queue.enqueue([], d.logs);
      counters.logs += d.logs.length;
      return { rejected: 0, message: undefined };
    }
    const d = protobuf ? decodeMetricPoints(body) : decodeMetricPointsJson(body);
    const stored = await backend.metrics.ingest(d.points);
    counters.metricDataPoints += stored.stored;
    return { rejected: d.rejected + stored.rejected, message: d.rejectReason ?? stored.rejectReason };
  }

  return async function ingest(
    signal: Signal,
    req: IncomingMessage,
    res: ServerResponse,
    encoding: Encoding,
  ): Promise<void> {
    // Refuse early when full, closing or unwritable: no point inflating a body we will not take.
    queue.checkAccepting(1);
    const body = await readBody(req, options.maxBodyBytes, { decompress: true });
    const { rejected, message } = await store(signal, body, encoding);
    counters.rejected += rejected;
    if (forwarder.enabled) {
      forwarder.forward(
        signal,
        body,
        encoding === 'protobuf' ? 'application/x-protobuf' : 'application/json',
      );
    }
    if (encoding === 'protobuf') {
      send(res, 200, 'application/x-protobuf', Buffer.from(exportResponseProtobuf(rejected, message)));
    } else {
      send(res, 200, 'application/json', exportResponseJson(signal, rejected, message));
    }
  };
}
