/**
 * A trace read as it streams (GET /api/traces/{id}/spans and /logs, one stored record a line in
 * start order): the view is built from the first records that arrive, so a 50,000-span trace
 * paints its first rows from the first page, and rebuilt as the rest fill in — each time the
 * span count has doubled (a handful of rebuilds whatever the size, about twice the work of one),
 * and once at the end with the log records.
 */
import { summarizeTrace } from '../../src/store/summaries.js';
import type { LogRecord, SpanRecord } from '../../src/wire-types.js';
import { apiErrorOf, send } from './api.js';
import { toLogView, toSpanView, toTraceSummaryView, traceFromSpans } from './convert.js';
import type { SpanView, TraceView } from './view-types.js';

/**
 * Calls `onLines` with the parsed lines of each chunk of an NDJSON body as it arrives (and waits
 * for what it returns).
 */
export async function readNdjson<T>(
  response: Response,
  onLines: (lines: T[]) => void | Promise<void>,
): Promise<void> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let rest = '';
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    const text = rest + r.value;
    const cut = text.lastIndexOf('\n');
    if (cut < 0) {
      rest = text;
      continue;
    }
    rest = text.slice(cut + 1);
    await onLines(JSON.parse(`[${text.slice(0, cut).split('\n').filter(Boolean).join(',')}]`) as T[]);
  }
  if (rest.trim()) await onLines([JSON.parse(rest) as T]);
}

/**
 * Resolves after the page has painted: chunks already received are read in microtasks, which
 * would otherwise hold the first paint until the whole trace is in (a hidden page, where frames
 * do not run, goes on after 100 ms).
 */
function afterPaint(): Promise<void> {
  return new Promise((resolve) => {
    requestAnimationFrame(() => setTimeout(resolve, 0));
    setTimeout(resolve, 100);
  });
}

async function open(path: string, signal: AbortSignal): Promise<Response> {
  const response = await send(path, { signal });
  if (!response.ok) throw apiErrorOf(response, await response.text());
  return response;
}

/** The trace from the records so far (spans converted once each, as they came). */
function build(traceId: string, records: SpanRecord[], views: SpanView[], logs: LogRecord[] = []): TraceView {
  const summary = toTraceSummaryView(summarizeTrace(traceId, records));
  if (!logs.length) return traceFromSpans(summary, views);
  const bySpan = new Map<string, LogRecord[]>();
  for (const l of logs) if (l.spanId) bySpan.set(l.spanId, [...(bySpan.get(l.spanId) ?? []), l]);
  const withLogs = views.map((v) =>
    bySpan.has(v.spanId) ? toSpanView(v.source.span, bySpan.get(v.spanId)) : v,
  );
  const ids = new Set(views.map((v) => v.spanId));
  const unattached = logs.filter((l) => !l.spanId || !ids.has(l.spanId));
  return traceFromSpans(
    summary,
    withLogs,
    unattached.map(toLogView).sort((a, b) => a.timeMs - b.timeMs),
  );
}

/**
 * Streams the trace: `onTrace(trace, false)` as records arrive (first with the first chunk),
 * then `onTrace(trace, true)` once every span and log record is in. A missing trace rejects with
 * the API's 404; `signal` stops it.
 */
export async function streamTrace(
  traceId: string,
  onTrace: (trace: TraceView, done: boolean) => void,
  signal: AbortSignal,
): Promise<void> {
  const id = encodeURIComponent(traceId);
  const logs = open(`/api/traces/${id}/logs`, signal).then(async (response) => {
    const all: LogRecord[] = [];
    await readNdjson<LogRecord>(response, (lines) => void all.push(...lines));
    return all;
  });
  logs.catch(() => undefined); // Awaited below; a failed span stream must not leave it unhandled.
  const records: SpanRecord[] = [];
  const views: SpanView[] = [];
  let nextBuild = 1;
  await readNdjson<SpanRecord>(await open(`/api/traces/${id}/spans`, signal), async (lines) => {
    for (const r of lines) {
      records.push(r);
      views.push(toSpanView(r));
    }
    if (records.length < nextBuild || signal.aborted) return;
    nextBuild = records.length * 2;
    onTrace(build(traceId, records, views), false);
    await afterPaint();
  });
  if (!signal.aborted) onTrace(build(traceId, records, views, await logs), true);
}
