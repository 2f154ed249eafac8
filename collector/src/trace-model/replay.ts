// What a replay of a trace re-sends: the InvokeAgentRuntime call at the top of the trace, as the
// runtime recorded it on its span (AGENTRT_CAPTURE_REQUESTS, which `agentrt dev` turns on) — the
// runtime ARN, qualifier, session id, payload, content type, accept, custom and MCP headers.
// Shared by `agentrt replay` and the trace view's Replay button; both send it to the runtime with
// `X-Agentrt-Replay-Of: <traceId>-<spanId>` so the new trace links to this one.
import type { AttributeValue, SpanNode, SpanRecord } from '../wire-types.js';

export interface ReplayRequest {
  /** The invocation span re-sent (`<traceId>-<spanId>` is the replay's link). */
  traceId: string;
  spanId: string;
  runtimeArn: string;
  qualifier?: string;
  sessionId?: string;
  payload: Uint8Array;
  contentType?: string;
  accept?: string;
  /**
   * The custom headers (`X-Amzn-Bedrock-AgentCore-Runtime-Custom-*`) the agent got, and an MCP
   * call's `Mcp-Session-Id` and `MCP-Protocol-Version` (its server may answer it only in that session).
   */
  headers: Record<string, string>;
}

export const REPLAY_OF_HEADER = 'x-agentrt-replay-of';
const HEADER_PREFIX = 'agentrt.request.header.';

/** Why a trace cannot be replayed: a message for the user, naming what is missing. */
export class NotReplayable extends Error {
  override name = 'NotReplayable';
}

const text = (v: AttributeValue | undefined): string | undefined => (typeof v === 'string' ? v : undefined);

/** The trace's first InvokeAgentRuntime span, outermost first. */
function invocationSpan(roots: readonly SpanNode[]): SpanRecord | undefined {
  const queue = [...roots];
  for (let node = queue.shift(); node; node = queue.shift()) {
    if (node.span.attributes['rpc.method'] === 'InvokeAgentRuntime') return node.span;
    queue.push(...node.children);
  }
  return undefined;
}

function decodePayload(value: string, encoding: string | undefined): Uint8Array {
  if (encoding !== 'base64') return new TextEncoder().encode(value);
  const bytes = atob(value);
  return Uint8Array.from(bytes, (c) => c.charCodeAt(0));
}

/** The request to re-send for a trace, or NotReplayable saying why there is none. */
export function replayRequestOf(traceId: string, roots: readonly SpanNode[]): ReplayRequest {
  const span = invocationSpan(roots);
  if (!span)
    throw new NotReplayable(
      `trace ${traceId} has no InvokeAgentRuntime span: only calls made through agentrt's runtime can be replayed`,
    );
  const a = span.attributes;
  const runtimeArn = text(a['aws.bedrock.agentcore.runtime.arn']);
  if (!runtimeArn)
    throw new NotReplayable(`trace ${traceId}: its InvokeAgentRuntime span names no runtime ARN`);
  if (a['agentrt.request.payload_truncated'] === true)
    throw new NotReplayable(
      `trace ${traceId}: its request (${String(a['agentrt.request.payload_bytes'])} bytes) was larger than the runtime records (64 KiB)`,
    );
  const payload = text(a['agentrt.request.payload']);
  if (payload === undefined)
    throw new NotReplayable(
      `trace ${traceId}: the runtime did not record its request; start it with AGENTRT_CAPTURE_REQUESTS=1 (agentrt dev does)`,
    );
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(a))
    if (key.startsWith(HEADER_PREFIX) && typeof value === 'string')
      headers[key.slice(HEADER_PREFIX.length)] = value;
  const optional = {
    qualifier: text(a['aws.bedrock.agentcore.runtime.qualifier']),
    sessionId: text(a['session.id']),
    contentType: text(a['agentrt.request.content_type']),
    accept: text(a['agentrt.request.accept']),
  };
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    runtimeArn,
    payload: decodePayload(payload, text(a['agentrt.request.payload_encoding'])),
    headers,
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)),
  };
}
