// Cross-origin access for the browsers of AGENTRT_RUNTIME_ALLOWED_ORIGINS (the collector's
// Inspector page): their preflights are answered and their answers carry the CORS headers, so the
// page calls the data and control planes directly — the same requests, headers, auth and session
// ids as any client. Every other origin gets no CORS headers (the browser keeps the answer from
// the page) and its state-changing requests are refused by the request guard.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Request headers a page may send: the content, trace context, session, auth, MCP and A2A ones. */
const ALLOWED_HEADERS = [
  'content-type',
  'accept',
  'authorization',
  'x-api-key',
  'traceparent',
  'tracestate',
  'baggage',
  'x-amzn-bedrock-agentcore-runtime-session-id',
  'x-cloud-agent-runtime-session-id',
  'x-amzn-bedrock-agentcore-runtime-user-id',
  'x-cloud-agent-runtime-user-id',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'a2a-version',
  'a2a-extensions',
  'x-agentrt-replay-of',
].join(', ');
const CUSTOM_PREFIX = 'x-amzn-bedrock-agentcore-runtime-custom-';

/** The fixed list, and the custom headers the preflight asks for (the agent gets those; a replay resends them). */
function allowedHeaders(req: IncomingMessage): string {
  const asked = String(req.headers['access-control-request-headers'] ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h.startsWith(CUSTOM_PREFIX) && /^[a-z0-9-]{1,200}$/.test(h));
  return [ALLOWED_HEADERS, ...asked].join(', ');
}

/** Answer headers a page may read. */
const EXPOSED_HEADERS = [
  'x-amzn-requestid',
  'x-amzn-bedrock-agentcore-runtime-session-id',
  'x-cloud-agent-runtime-session-id',
  'mcp-session-id',
  'mcp-protocol-version',
].join(', ');

/** The request's Origin when it is one of `allowed` (compared as origins: scheme, host, port). */
function allowedOrigin(req: IncomingMessage, allowed: readonly string[]): string | undefined {
  const origin = req.headers.origin;
  if (!origin || !allowed.length) return undefined;
  let parsed: string;
  try {
    parsed = new URL(origin).origin;
  } catch {
    return undefined;
  }
  return allowed.some((a) => URL.canParse(a) && new URL(a).origin === parsed) ? parsed : undefined;
}

/**
 * Sets the CORS headers for an allowed origin; answers its preflight (OPTIONS) and returns true
 * when it did, so the request goes no further.
 */
export function handleCors(req: IncomingMessage, res: ServerResponse, allowed: readonly string[]): boolean {
  const origin = allowedOrigin(req, allowed);
  if (!origin) return false;
  res.setHeader('access-control-allow-origin', origin);
  res.setHeader('vary', 'Origin');
  res.setHeader('access-control-expose-headers', EXPOSED_HEADERS);
  if (req.method !== 'OPTIONS' || !req.headers['access-control-request-method']) return false;
  res.writeHead(204, {
    'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE',
    'access-control-allow-headers': allowedHeaders(req),
    'access-control-max-age': '600',
  });
  res.end();
  return true;
}
