/**
 * The trace view's Replay: the trace's InvokeAgentRuntime call as the runtime recorded it
 * (trace-model/replay.ts, as `agentrt replay` reads it), sent again from the page to the runtime
 * host the Inspector talks to, with the credentials it holds for that host, in a new trace linked
 * to this one (X-Agentrt-Replay-Of); resolves with the new trace's id once the answer has been read.
 */
import { REPLAY_OF_HEADER, type ReplayRequest } from '../../src/trace-model/index.js';
import { loadAuth } from './inspector-auth.js';
import { DEFAULT_RUNTIME_HOST, type RuntimeAuth, runtimeCall } from './inspector-client.js';
import { newTraceparent } from './inspector-model.js';

/** The runtime host the Inspector was last pointed at (its saved choice), else the default. */
export function replayHost(): string {
  let saved: string | null = null;
  try {
    saved = localStorage.getItem('agentrt.inspector.host');
  } catch {
    // Storage disabled: the default host.
  }
  return (saved || DEFAULT_RUNTIME_HOST).replace(/\/+$/, '');
}

/** The credentials the Inspector holds for the host (its Credentials box), if any. */
function hostAuth(host: string): RuntimeAuth {
  try {
    return loadAuth({ session: sessionStorage, local: localStorage }, host);
  } catch {
    return {}; // Storage disabled: none.
  }
}

export async function sendReplay(host: string, request: ReplayRequest): Promise<string> {
  const { traceId, header } = newTraceparent();
  const query = `?qualifier=${encodeURIComponent(request.qualifier ?? 'DEFAULT')}`;
  const res = await runtimeCall(
    host,
    `/runtimes/${encodeURIComponent(request.runtimeArn)}/invocations${query}`,
    {
      method: 'POST',
      headers: {
        ...request.headers,
        'content-type': request.contentType ?? 'application/json',
        ...(request.accept ? { accept: request.accept } : {}),
        ...(request.sessionId ? { 'x-amzn-bedrock-agentcore-runtime-session-id': request.sessionId } : {}),
        traceparent: header,
        [REPLAY_OF_HEADER]: `${request.traceId}-${request.spanId}`,
      },
      body: new Blob([request.payload as Uint8Array<ArrayBuffer>]),
    },
    hostAuth(host),
  );
  await res.arrayBuffer();
  return traceId;
}
