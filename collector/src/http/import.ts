// POST /v1/import: a file of OTLP/JSON lines (`agentrt traces import`; `agentcore dev` writes its
// traces as `.otlp.jsonl`), stored all or nothing. Every line is decoded before anything is
// stored: a line that is not JSON, not an OTLP request, or holds a record the collector would not
// store (a bad id, a start time outside the kept window) refuses the whole file with a 400 naming
// the line and the field. The traces and logs of a file are then committed as one write; its
// metric points (rare in such files) are stored right after.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MetricPoint } from '../metrics/metric-point.js';
import { decodeMetricPointsJson } from '../metrics/decode-metrics.js';
import { decodeLogsRequestJson, decodeTraceRequestJson } from '../otlp/decode-json.js';
import { spansInTimeWindow } from '../otlp/span-time.js';
import type { LogRecord, SpanRecord } from '../wire-types.js';
import { HttpError, readBody } from '@agentrt/kit';
import type { IngestOptions } from './ingest.js';
import { mediaType, sendJson } from './respond.js';

export const IMPORT_PATH = '/v1/import';
const MEDIA_TYPES = ['application/x-ndjson', 'application/jsonl', 'application/json'];

/** What one file holds, decoded. */
interface Decoded {
  lines: number;
  spans: SpanRecord[];
  logs: LogRecord[];
  points: MetricPoint[];
}

const badLine = (line: number, message: string) =>
  new HttpError(400, `line ${line}: ${message}`, { code: 'bad_request' });

/** Decodes one line into `into`; throws the line's 400. */
function decodeLine(text: string, line: number, into: Decoded, nowMs: number): void {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    throw badLine(line, `not JSON (${(error as Error).message})`);
  }
  const d = (doc !== null && typeof doc === 'object' && !Array.isArray(doc) ? doc : {}) as object;
  try {
    if ('resourceSpans' in d) {
      const t = spansInTimeWindow(decodeTraceRequestJson(text), nowMs);
      if (t.rejected) throw new Error(t.rejectReason ?? `${t.rejected} span(s) not storable`);
      into.spans.push(...t.spans);
    } else if ('resourceLogs' in d) into.logs.push(...decodeLogsRequestJson(text).logs);
    else if ('resourceMetrics' in d) {
      const m = decodeMetricPointsJson(text);
      if (m.rejected) throw new Error(m.rejectReason ?? `${m.rejected} metric point(s) not storable`);
      into.points.push(...m.points);
    } else
      throw new Error(
        'is not an OTLP/JSON request: want an object with resourceSpans, resourceLogs or resourceMetrics',
      );
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw badLine(line, (error as Error).message);
  }
  into.lines++;
}

/** Every non-blank line of the body decoded, or the first bad line's 400. */
export function decodeImport(body: Buffer, nowMs = Date.now()): Decoded {
  const into: Decoded = { lines: 0, spans: [], logs: [], points: [] };
  const text = body.toString('utf8');
  let line = 0;
  for (let at = 0; at <= text.length;) {
    const end = text.indexOf('\n', at);
    const next = end < 0 ? text.length : end;
    line++;
    const row = text.slice(at, next).trim();
    if (row) decodeLine(row, line, into, nowMs);
    at = next + 1;
  }
  if (!into.lines) throw new HttpError(400, 'the file holds no OTLP/JSON lines', { code: 'bad_request' });
  return into;
}

/** The handler of POST /v1/import (the method, access and queue checked by the caller). */
export function createImport(
  options: Pick<IngestOptions, 'backend' | 'queue' | 'counters' | 'maxBodyBytes'>,
) {
  return async function importLines(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!MEDIA_TYPES.includes(mediaType(req)))
      throw new HttpError(
        415,
        `Content-Type '${mediaType(req) || '(none)'}' is not supported; send OTLP/JSON lines as ${MEDIA_TYPES[0]}`,
        { code: 'unsupported_media_type' },
      );
    options.queue.checkAccepting(1);
    const decoded = decodeImport(await readBody(req, options.maxBodyBytes, { decompress: true }));
    await options.queue.enqueue(decoded.spans, decoded.logs);
    const stored = decoded.points.length
      ? await options.backend.metrics.ingest(decoded.points)
      : { stored: 0, rejected: 0 };
    options.counters.spans += decoded.spans.length;
    options.counters.logs += decoded.logs.length;
    options.counters.metricDataPoints += stored.stored;
    sendJson(res, 200, {
      lines: decoded.lines,
      spans: decoded.spans.length,
      logs: decoded.logs.length,
      metricDataPoints: stored.stored,
    });
  };
}
