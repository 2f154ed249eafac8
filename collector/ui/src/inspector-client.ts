/**
 * The Inspector's calls to a runtime host, made by the page itself: the control plane's runtime
 * list and the data plane's InvokeAgentRuntime, with the session header, trace context and
 * credentials any client sends (the runtime lets this page's origin in through
 * AGENTRT_RUNTIME_ALLOWED_ORIGINS).
 */
import { createAnswerReader } from './inspector-model.js';

export type ServerProtocol = 'HTTP' | 'MCP' | 'A2A' | 'AGUI';

export interface RuntimeInfo {
  arn: string;
  id: string;
  name: string;
  status: string;
  protocol: ServerProtocol;
}

/** Credentials sent as a client would: a bearer token (JWT runtimes) or an API key. */
export interface RuntimeAuth {
  bearer?: string;
  apiKey?: string;
}

export const DEFAULT_RUNTIME_HOST = 'http://127.0.0.1:8787';
const SESSION_HEADER = 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id';

/** A runtime answer that is not a success, or a runtime that cannot be reached. */
export class RuntimeCallError extends Error {
  override name = 'RuntimeCallError';
}

function authHeaders(auth: RuntimeAuth): Record<string, string> {
  const headers: Record<string, string> = {};
  if (auth.bearer) headers.authorization = `Bearer ${auth.bearer}`;
  if (auth.apiKey) headers['x-api-key'] = auth.apiKey;
  return headers;
}

/** A request to the runtime host with the credentials; a failure is a RuntimeCallError saying why. */
export async function runtimeCall(
  host: string,
  path: string,
  init: RequestInit,
  auth: RuntimeAuth = {},
): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(`${host}${path}`, {
      ...init,
      headers: { ...(init.headers as Record<string, string>), ...authHeaders(auth) },
    });
  } catch (error) {
    throw new RuntimeCallError(
      `the runtime host at ${host} is not reachable: is it running, with this page's origin (${location.origin}) in AGENTRT_RUNTIME_ALLOWED_ORIGINS?`,
      { cause: error },
    );
  }
  if (res.ok) return res;
  const text = await res.text();
  let message = text;
  try {
    const body = JSON.parse(text) as { message?: string; Message?: string };
    message = body.message ?? body.Message ?? text;
  } catch {
    // Not JSON: the text is the message.
  }
  throw new RuntimeCallError(`${res.status}: ${message || res.statusText}`);
}

/** Every agent runtime of the host with its protocol (ListAgentRuntimes, then GetAgentRuntime). */
export async function listRuntimes(host: string, auth: RuntimeAuth = {}): Promise<RuntimeInfo[]> {
  const headers = { 'content-type': 'application/json' };
  const list = (await (
    await runtimeCall(host, '/runtimes/?maxResults=100', { method: 'POST', headers, body: '{}' }, auth)
  ).json()) as {
    agentRuntimes: {
      agentRuntimeArn: string;
      agentRuntimeId: string;
      agentRuntimeName: string;
      status: string;
    }[];
  };
  return Promise.all(
    list.agentRuntimes.map(async (r) => {
      const got = (await (
        await runtimeCall(host, `/runtimes/${encodeURIComponent(r.agentRuntimeId)}/`, {}, auth)
      ).json()) as { protocolConfiguration?: { serverProtocol?: ServerProtocol } };
      return {
        arn: r.agentRuntimeArn,
        id: r.agentRuntimeId,
        name: r.agentRuntimeName,
        status: r.status,
        protocol: got.protocolConfiguration?.serverProtocol ?? 'HTTP',
      };
    }),
  );
}

/** The runtime's invocation URL (the DEFAULT endpoint): what MCP and A2A clients talk to as well. */
export const invocationsUrl = (host: string, arn: string): string =>
  `${host}/runtimes/${encodeURIComponent(arn)}/invocations?qualifier=DEFAULT`;

export interface InvokeOptions {
  host: string;
  arn: string;
  sessionId: string;
  /** The request body (the agent's payload). */
  payload: string;
  traceparent: string;
  auth?: RuntimeAuth;
  /** Called with the text each part of the answer adds, as it arrives. */
  onText: (text: string) => void;
  signal?: AbortSignal;
}

/** InvokeAgentRuntime, the answer read as it streams. */
export async function invokeStreaming(o: InvokeOptions): Promise<void> {
  const res = await runtimeCall(
    o.host,
    invocationsUrl(o.host, o.arn).slice(o.host.length),
    {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream, application/json',
        [SESSION_HEADER]: o.sessionId,
        traceparent: o.traceparent,
      },
      body: o.payload,
      ...(o.signal ? { signal: o.signal } : {}),
    },
    o.auth,
  );
  const reader = createAnswerReader(res.headers.get('content-type') ?? '');
  const decoder = new TextDecoder();
  const body = res.body!.getReader();
  for (;;) {
    const { done, value } = await body.read();
    if (done) break;
    const text = reader.push(decoder.decode(value, { stream: true }));
    if (text) o.onText(text);
  }
  const rest = reader.push(decoder.decode()) + reader.end();
  if (rest) o.onText(rest);
}
