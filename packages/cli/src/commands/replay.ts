// `agentrt replay <traceId>`: sends the invocation at the top of a trace again — same runtime,
// qualifier, session id, payload, content type and custom headers, as the runtime recorded them
// (AGENTRT_CAPTURE_REQUESTS; `agentrt dev` turns it on) — to the code running now, in a new trace
// linked to the old one (X-Agentrt-Replay-Of), and prints where to compare the two.
import { randomBytes } from 'node:crypto';
import {
  NotReplayable,
  REPLAY_OF_HEADER,
  type ReplayRequest,
  type TraceResponse,
  replayRequestOf,
} from '@agentrt/collector';
import { RuntimeClientRequestError } from '@agentrt/runtime';
import { BEARER_OPTIONS, bearerFrom } from '../bearer.js';
import { CollectorRequestError, collectorJson, collectorUrl } from '../collector-client.js';
import { type CliIO, type Command, UsageError, parseCommandArgs } from '../command.js';
import { clientFrom } from './runtime.js';

const usage = `Usage: agentrt replay <traceId> [--new-session] [--collector <url>] [--url <runtime url>]
       [--bearer <token> | --bearer-env <var>]

Sends the invocation of a trace again, to the code the runtime runs now: same runtime, endpoint,
session id, payload and custom headers (the runtime records them when AGENTRT_CAPTURE_REQUESTS=1;
agentrt dev sets it). The new trace links to the old one; the command prints both ids and the
compare view's address.

  --new-session      send it on a fresh session instead of the recorded one
  --collector <url>  the collector (default $AGENTRT_COLLECTOR_URL or http://127.0.0.1:4318)
  --url <url>        the runtime (default $AGENTRT_RUNTIME_URL or http://127.0.0.1:8787)`;

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

async function recordedRequest(collector: string, traceId: string): Promise<ReplayRequest> {
  try {
    const trace = await collectorJson<TraceResponse>(collector, `/api/traces/${traceId}`);
    return replayRequestOf(traceId, trace.roots);
  } catch (error) {
    if (error instanceof CollectorRequestError && error.status === 404)
      throw new Error(`trace ${traceId} is not in the collector at ${collector}`, { cause: error });
    throw error;
  }
}

/** Sends `request` again; resolves with the new trace's id once its answer has been read. */
async function send(
  request: ReplayRequest,
  values: { url?: string; 'api-key'?: string; 'new-session': boolean },
  bearerToken: string | undefined,
  io: CliIO,
): Promise<{ traceId: string; bytes: number; sessionId: string }> {
  const traceId = hex(16);
  const client = clientFrom(values, io);
  const result = await client
    .invoke(request.runtimeArn, request.payload, {
      ...(request.sessionId && !values['new-session'] ? { sessionId: request.sessionId } : {}),
      ...(request.qualifier ? { qualifier: request.qualifier } : {}),
      ...(request.contentType ? { contentType: request.contentType } : {}),
      ...(request.accept ? { accept: request.accept } : {}),
      ...(bearerToken ? { bearerToken } : {}),
      headers: {
        ...request.headers,
        traceparent: `00-${traceId}-${hex(8)}-01`,
        [REPLAY_OF_HEADER]: `${request.traceId}-${request.spanId}`,
      },
    })
    .catch((error: unknown) => {
      if (error instanceof RuntimeClientRequestError && error.status === 404)
        throw new Error(
          `cannot replay trace ${request.traceId}: its runtime ${request.runtimeArn} is gone (${error.message})`,
          { cause: error },
        );
      throw error;
    });
  let bytes = 0;
  for await (const chunk of result.body) bytes += chunk.length;
  return { traceId, bytes, sessionId: result.sessionId };
}

export const replayCommand: Command = {
  name: 'replay',
  summary: "send a trace's invocation again to the current code; the new trace links to the old",
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs({
      args: argv,
      allowPositionals: true,
      options: {
        'new-session': { type: 'boolean', default: false },
        collector: { type: 'string' },
        url: { type: 'string' },
        'api-key': { type: 'string' },
        ...BEARER_OPTIONS,
      },
    });
    const [traceId, ...extra] = positionals;
    if (!traceId) throw new UsageError('missing <traceId>');
    if (extra.length) throw new UsageError(`unexpected argument '${extra[0]}'`);
    if (!/^[0-9a-f]{32}$/.test(traceId))
      throw new UsageError('<traceId> must be 32 lowercase hex characters');
    const collector = collectorUrl(values.collector, io);
    let request: ReplayRequest;
    try {
      request = await recordedRequest(collector, traceId);
    } catch (error) {
      if (error instanceof NotReplayable) throw new Error(error.message, { cause: error });
      throw error;
    }
    const sent = await send(request, values, bearerFrom(values, io.env), io);
    io.stdout(
      `replayed ${traceId} as ${sent.traceId} (session ${sent.sessionId}, ${sent.bytes} bytes answered)\n` +
        `compare: ${collector}/#/compare?a=${traceId}&b=${sent.traceId}\n`,
    );
    return 0;
  },
};
