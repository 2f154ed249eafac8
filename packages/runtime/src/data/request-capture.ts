// What `agentrt replay` needs of an invocation, recorded on its InvokeAgentRuntime span when the
// runtime captures requests (AGENTRT_CAPTURE_REQUESTS): the payload (up to 64 KiB; UTF-8 text as
// it is, other bytes as base64), its content type and accept, the custom headers the agent gets,
// and an MCP call's session and protocol version (a replay of it needs its MCP session).
// Credentials (Authorization, X-Api-Key, SigV4) are never recorded. A replay carries
// `X-Agentrt-Replay-Of: <traceId>-<spanId>`: its span links to the invocation it re-sends.
import { type IncomingMessage } from 'node:http';
import { type Attributes } from '@opentelemetry/api';
import { validationError } from '../errors.js';

export const REQUEST_ATTRIBUTES = {
  payload: 'agentrt.request.payload',
  encoding: 'agentrt.request.payload_encoding',
  bytes: 'agentrt.request.payload_bytes',
  truncated: 'agentrt.request.payload_truncated',
  contentType: 'agentrt.request.content_type',
  accept: 'agentrt.request.accept',
  headerPrefix: 'agentrt.request.header.',
  replayOfTrace: 'agentrt.replay.of_trace_id',
  replayOfSpan: 'agentrt.replay.of_span_id',
} as const;

export const REPLAY_OF_HEADER = 'x-agentrt-replay-of';
/** Payloads past this are not recorded (the span says so; a replay of it is refused). */
export const MAX_CAPTURED_PAYLOAD_BYTES = 64 * 1024;
const CUSTOM_PREFIX = 'x-amzn-bedrock-agentcore-runtime-custom-';
/** An MCP call outside its session is refused by a stateful server: a replay re-sends these too. */
const MCP_HEADERS = new Set(['mcp-session-id', 'mcp-protocol-version']);

/** The span attributes of one invocation's request. */
export function capturedRequest(req: IncomingMessage, body: Buffer): Attributes {
  const attrs: Attributes = { [REQUEST_ATTRIBUTES.bytes]: body.length };
  if (body.length > MAX_CAPTURED_PAYLOAD_BYTES) attrs[REQUEST_ATTRIBUTES.truncated] = true;
  else {
    const text = new TextDecoder('utf-8', { fatal: true });
    try {
      attrs[REQUEST_ATTRIBUTES.payload] = text.decode(body);
      attrs[REQUEST_ATTRIBUTES.encoding] = 'utf8';
    } catch {
      attrs[REQUEST_ATTRIBUTES.payload] = body.toString('base64');
      attrs[REQUEST_ATTRIBUTES.encoding] = 'base64';
    }
  }
  const contentType = req.headers['content-type'];
  if (contentType) attrs[REQUEST_ATTRIBUTES.contentType] = contentType;
  const accept = req.headers.accept;
  if (accept) attrs[REQUEST_ATTRIBUTES.accept] = accept;
  for (const [name, value] of Object.entries(req.headers))
    if ((name.startsWith(CUSTOM_PREFIX) || MCP_HEADERS.has(name)) && value !== undefined)
      attrs[`${REQUEST_ATTRIBUTES.headerPrefix}${name}`] = Array.isArray(value) ? value.join(', ') : value;
  return attrs;
}

/** Whether the request is a replay (`agentrt replay`, the trace view's Replay button). */
export const isReplay = (req: IncomingMessage): boolean => req.headers[REPLAY_OF_HEADER] !== undefined;

/** The invocation a replay re-sends (`X-Agentrt-Replay-Of: <32 hex>-<16 hex>`); 400 when malformed. */
export function replayOf(req: IncomingMessage): { traceId: string; spanId: string } | undefined {
  const value = req.headers[REPLAY_OF_HEADER];
  if (value === undefined) return undefined;
  const m = typeof value === 'string' ? /^([0-9a-f]{32})-([0-9a-f]{16})$/.exec(value.trim()) : null;
  if (!m || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!))
    throw validationError(
      REPLAY_OF_HEADER,
      'must be <trace id: 32 hex>-<span id: 16 hex> of the invocation replayed',
    );
  return { traceId: m[1]!, spanId: m[2]! };
}
