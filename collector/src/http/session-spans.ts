// GET /api/sessions/{id}/spans: a session's whole trace in one call — every span of every trace of
// the session, one stored span record (the API's SpanRecord) a line, streamed with back-pressure.
import type { ServerResponse } from 'node:http';
import type { SpanBackend } from '../store/store.js';
import { HttpError } from '@agentrt/kit';
import type { createExportStreamer } from './export.js';

/** The path of the route; its one group is the %-encoded session id. */
export const SESSION_SPANS_PATH = /^\/api\/sessions\/([^/]+)\/spans$/;

export async function streamSessionSpans(
  spans: Pick<SpanBackend, 'getSession'>,
  exporter: ReturnType<typeof createExportStreamer>,
  sessionId: string,
  res: ServerResponse,
): Promise<void> {
  const found = await spans.getSession(sessionId);
  if (!found)
    throw new HttpError(404, `session ${JSON.stringify(sessionId)} not found`, { code: 'not_found' });
  await exporter.streamRecords(
    'spans',
    found.traces.map((t) => t.traceId),
    res,
  );
}
