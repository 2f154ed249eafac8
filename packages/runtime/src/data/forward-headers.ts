// The headers the runtime sends a session's worker: the session's ids, trace context, the session's
// baggage (the runtime's session id wins), the MCP/A2A pass-through ones and the version's
// allow-listed and custom headers.
import { type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import { ROOT_CONTEXT, defaultTextMapSetter, propagation } from '@opentelemetry/api';
import { W3CBaggagePropagator } from '@opentelemetry/core';
import { type VersionRecord } from '../control/store.js';
import { type RequestParts } from './websocket.js';

export const SESSION_HEADER = 'x-amzn-bedrock-agentcore-runtime-session-id';
export const CLOUD_SESSION_HEADER = 'x-cloud-agent-runtime-session-id';
const REQUEST_ID_HEADER = 'x-amzn-bedrock-agentcore-runtime-request-id';
const CUSTOM_PREFIX = 'x-amzn-bedrock-agentcore-runtime-custom-';
/** Trace and MCP headers forwarded as they come (both the AWS and our X-Cloud names). */
const PASS_THROUGH = [
  'traceparent',
  'tracestate',
  'x-amzn-trace-id',
  'x-cloud-trace-id',
  'mcp-session-id',
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
  'a2a-version',
  'a2a-extensions',
  'x-a2a-extensions',
  'last-event-id',
  'x-amzn-bedrock-agentcore-runtime-user-id',
];
const baggagePropagator = new W3CBaggagePropagator();

/**
 * The W3C `baggage` header the worker gets: the caller's entries, parsed and written back by the
 * OpenTelemetry propagator, with `session.id` set to the runtime's session whatever the caller sent
 * (the session header decides which session this is; a caller's own `session.id` would make the
 * session's telemetry relay refuse every export of the worker).
 */
export function withSessionBaggage(baggage: string | undefined, sessionId: string): string {
  const getter = { get: () => baggage, keys: () => ['baggage'] };
  const extracted = baggagePropagator.extract(ROOT_CONTEXT, {}, getter);
  const caller = propagation.getBaggage(extracted) ?? propagation.createBaggage();
  const ours = propagation.setBaggage(ROOT_CONTEXT, caller.setEntry('session.id', { value: sessionId }));
  const carrier: Record<string, string> = {};
  baggagePropagator.inject(ours, carrier, defaultTextMapSetter);
  return carrier.baggage ?? '';
}

export function first(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function forwardHeaders(
  ctx: RequestParts,
  version: VersionRecord,
  sessionId: string,
  requestId: string,
  bodyLength: number,
): OutgoingHttpHeaders {
  const h = ctx.req.headers;
  const out: OutgoingHttpHeaders = {
    'content-type': first(h, 'content-type') ?? 'application/octet-stream',
    'content-length': bodyLength,
    [SESSION_HEADER]: sessionId,
    [CLOUD_SESSION_HEADER]: sessionId,
    [REQUEST_ID_HEADER]: first(h, REQUEST_ID_HEADER) ?? requestId,
    baggage: withSessionBaggage(first(h, 'baggage'), sessionId),
  };
  const accept = first(h, 'accept');
  if (accept) out.accept = accept;
  for (const name of PASS_THROUGH) {
    const v = first(h, name);
    if (v !== undefined) out[name] = v;
  }
  // The worker's spans are children of the runtime's InvokeAgentRuntime span.
  Object.assign(out, ctx.operation.traceHeaders());
  const allow = (version.config.requestHeaderConfiguration?.requestHeaderAllowlist ?? []).map((n) =>
    n.toLowerCase(),
  );
  const jwt = version.config.authorizerConfiguration?.customJWTAuthorizer !== undefined;
  for (const [name, value] of Object.entries(h)) {
    if (value === undefined) continue;
    const allowed =
      name.startsWith(CUSTOM_PREFIX) || (allow.includes(name) && (name !== 'authorization' || jwt));
    if (allowed) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
