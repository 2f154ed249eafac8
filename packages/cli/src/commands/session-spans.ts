// `agentrt sessions get <id> --spans`: every span of a session (GET /api/sessions/{id}/spans), as
// the collector's span records one a line (--json) or one readable line each, printed as they
// stream in: a session of any size, without holding it.
import type { SpanRecord } from '@agentrt/collector';
import type { CliIO } from '../command.js';
import { collectorFetch, formatDurationNano, formatTime } from '../collector-client.js';

/** A long session streams for longer than a JSON request's deadline. */
const STREAM_TIMEOUT_MS = 3_600_000;

/** The lines of a streamed body, as they complete. */
async function* linesOf(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let rest = '';
  for await (const chunk of body) {
    const parts = (rest + decoder.decode(chunk, { stream: true })).split('\n');
    rest = parts.pop()!;
    for (const line of parts) if (line) yield line;
  }
  if (rest) yield rest;
}

function spanLine(s: SpanRecord): string {
  const error = s.status.code === 'ERROR' ? '  ERROR' : '';
  return `${formatTime(s.startTimeUnixNano / 1e6)}  ${s.traceId}  ${s.spanId}  ${s.parentSpanId || '-'.padEnd(16)}  ${formatDurationNano(s.durationNano).padStart(8)}  ${s.name}${error}\n`;
}

export async function printSessionSpans(base: string, id: string, json: boolean, io: CliIO): Promise<number> {
  const res = await collectorFetch(base, `/api/sessions/${encodeURIComponent(id)}/spans`, {
    signal: AbortSignal.timeout(STREAM_TIMEOUT_MS),
  });
  if (!json) io.stdout(`start  trace  span  parent  duration  name\n`);
  for await (const line of linesOf(res.body as AsyncIterable<Uint8Array>))
    io.stdout(json ? `${line}\n` : spanLine(JSON.parse(line) as SpanRecord));
  return 0;
}
