/**
 * The Inspector's MCP, A2A and AG-UI calls: JSON-RPC 2.0 posted to the runtime's invocation URL, as
 * the official clients post it (MCP Streamable HTTP; A2A 1.0 `SendStreamingMessage`), answers read
 * as JSON or server-sent events; an AG-UI RunAgentInput, its events read as they stream. Same
 * headers as any client: the session, trace context, credentials.
 */
import { type RuntimeAuth, RuntimeCallError, invocationsUrl, runtimeCall } from './inspector-client.js';
import { takeSseEvents } from './inspector-model.js';

export interface ProtocolTarget {
  host: string;
  arn: string;
  sessionId: string;
  auth?: RuntimeAuth;
}

export interface McpTool {
  name: string;
  description?: string;
  inputSchema: unknown;
}

const MCP_PROTOCOL_VERSION = '2025-06-18';
let nextId = 1;

/** The JSON-RPC messages of an answer: a JSON body, or one per `data:` event. */
async function* rpcMessages(res: Response): AsyncGenerator<Record<string, unknown>> {
  const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
  if (type !== 'text/event-stream') {
    const text = await res.text();
    if (text.trim()) yield JSON.parse(text) as Record<string, unknown>;
    return;
  }
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    const { data, rest } = takeSseEvents(buffer + decoder.decode(value, { stream: !done }), done);
    buffer = rest;
    for (const d of data) yield JSON.parse(d) as Record<string, unknown>;
    if (done) return;
  }
}

/** The `result` of a JSON-RPC answer; its `error` as a RuntimeCallError. */
function resultOf(message: Record<string, unknown>): unknown {
  const error = message.error as { code?: number; message?: string } | undefined;
  if (error) throw new RuntimeCallError(`${error.message ?? 'error'} (JSON-RPC ${error.code ?? '?'})`);
  return message.result;
}

async function post(
  t: ProtocolTarget,
  body: unknown,
  headers: Record<string, string>,
  traceparent?: string,
): Promise<Response> {
  return runtimeCall(
    t.host,
    invocationsUrl(t.host, t.arn).slice(t.host.length),
    {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': t.sessionId,
        ...(traceparent ? { traceparent } : {}),
        ...headers,
      },
      body: JSON.stringify(body),
    },
    t.auth,
  );
}

/** An MCP client over Streamable HTTP: initialize once, then list and call tools. */
export function createMcpClient(t: ProtocolTarget) {
  let mcpSession: string | undefined;
  let ready: Promise<void> | undefined;
  const headers = (): Record<string, string> => ({
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MCP_PROTOCOL_VERSION,
    ...(mcpSession ? { 'mcp-session-id': mcpSession } : {}),
  });
  async function request(method: string, params: unknown, traceparent?: string): Promise<unknown> {
    const id = nextId++;
    const res = await post(t, { jsonrpc: '2.0', id, method, params }, headers(), traceparent);
    mcpSession = res.headers.get('mcp-session-id') ?? mcpSession;
    for await (const message of rpcMessages(res)) if (message.id === id) return resultOf(message);
    throw new RuntimeCallError(`the MCP server sent no answer to ${method}`);
  }
  const initialize = async (): Promise<void> => {
    await request('initialize', {
      protocolVersion: MCP_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: 'agentrt-inspector', version: '0.1.0' },
    });
    await post(t, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers());
  };
  const connected = (): Promise<void> => (ready ??= initialize());
  return {
    async listTools(): Promise<McpTool[]> {
      await connected();
      return ((await request('tools/list', {})) as { tools: McpTool[] }).tools;
    },
    async callTool(name: string, args: Record<string, unknown>, traceparent: string): Promise<unknown> {
      await connected();
      return request('tools/call', { name, arguments: args }, traceparent);
    },
  };
}

/** The runtime's A2A agent card (GetAgentCard). */
export async function getAgentCard(t: ProtocolTarget): Promise<Record<string, unknown>> {
  const path = `/runtimes/${encodeURIComponent(t.arn)}/invocations/.well-known/agent-card.json`;
  const res = await runtimeCall(
    t.host,
    path,
    { headers: { 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': t.sessionId, 'A2A-Version': '1.0' } },
    t.auth,
  );
  return (await res.json()) as Record<string, unknown>;
}

/** The text parts anywhere in an A2A event (a message, a task's status, an artifact). */
export function a2aText(event: unknown): string {
  if (Array.isArray(event)) return event.map(a2aText).join('');
  if (typeof event !== 'object' || event === null) return '';
  const e = event as Record<string, unknown>;
  if (Array.isArray(e.parts))
    return e.parts
      .map((p) => (typeof (p as { text?: unknown }).text === 'string' ? (p as { text: string }).text : ''))
      .join('');
  return Object.values(e).map(a2aText).join('');
}

/** A2A 1.0 SendStreamingMessage: calls `onEvent` with each event's kind and text as it streams. */
export async function streamA2aMessage(
  t: ProtocolTarget,
  text: string,
  traceparent: string,
  onEvent: (kind: string, text: string) => void,
): Promise<void> {
  const id = nextId++;
  const message = { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] };
  const res = await post(
    t,
    { jsonrpc: '2.0', id, method: 'SendStreamingMessage', params: { message } },
    { accept: 'text/event-stream', 'A2A-Version': '1.0' },
    traceparent,
  );
  for await (const m of rpcMessages(res)) {
    const result = resultOf(m) as Record<string, unknown>;
    const kind = Object.keys(result ?? {})[0] ?? 'event';
    onEvent(kind, a2aText(result));
  }
}

/** A turn of the conversation as AG-UI messages carry it. */
export interface AguiTurn {
  role: 'user' | 'assistant';
  content: string;
}

/**
 * An AG-UI run (the runtime's AGUI protocol, as the AG-UI HttpAgent posts it): a RunAgentInput of
 * the conversation so far — thread = the session — posted to the invocation URL, its AG-UI events
 * read as they stream. `onText` gets each TEXT_MESSAGE_CONTENT delta, `onEvent` every event's type;
 * a RUN_ERROR event (or an answer of no events) is a RuntimeCallError with its code and message.
 */
export async function streamAguiRun(
  t: ProtocolTarget,
  turns: readonly AguiTurn[],
  traceparent: string,
  onText: (text: string) => void,
  onEvent: (type: string) => void = () => undefined,
): Promise<void> {
  const input = {
    threadId: t.sessionId,
    runId: crypto.randomUUID(),
    messages: turns.map((m) => ({ id: crypto.randomUUID(), role: m.role, content: m.content })),
    tools: [],
    context: [],
    state: {},
    forwardedProps: {},
  };
  const res = await post(t, input, { accept: 'text/event-stream' }, traceparent);
  let finished = false;
  for await (const event of rpcMessages(res)) {
    const type = String(event.type);
    onEvent(type);
    if (type === 'TEXT_MESSAGE_CONTENT' && typeof event.delta === 'string') onText(event.delta);
    if (type === 'RUN_ERROR')
      throw new RuntimeCallError(`${String(event.code ?? 'RUN_ERROR')}: ${String(event.message ?? '')}`);
    if (type === 'RUN_FINISHED') finished = true;
  }
  if (!finished) throw new RuntimeCallError('the AG-UI run ended without RUN_FINISHED');
}
