import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type RegisteredRuntime } from './runtime-registration.js';

export interface DemoResult {
  name: string;
  /** The invocation behaved as the demo expects (a failing tool is expected to fail). */
  ok: boolean;
  status: number;
  sessionId: string;
  detail: string;
}

export interface DemoOptions {
  runtimeUrl: string;
  weatherUrl: string;
  runtimes: readonly RegisteredRuntime[];
  timeoutMs?: number;
}

const SESSION_HEADER = 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id';
const CLOUD_SESSION_HEADER = 'X-Cloud-Agent-Runtime-Session-Id';

function newSession(kind: string): string {
  return `demo-${kind}-${randomUUID()}`;
}

function short(text: string, max = 90): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** custom_agent's answer text (`output.message.content[].text`), else the body as it came. */
function messageText(status: number, body: string): string {
  try {
    const parsed = JSON.parse(body) as { output?: { message?: { content?: { text?: string }[] } } };
    const text = parsed.output?.message?.content?.map((c) => c.text ?? '').join('');
    if (text) return `${status} ${short(text)}`;
  } catch {
    // Not JSON: an error page or plain text, shown as it came.
  }
  return `${status} ${short(body)}`;
}

interface Call {
  name: string;
  url: string;
  sessionId: string;
  payload: unknown;
  headers?: Record<string, string>;
  /** Which statuses count as the expected outcome. */
  expect: (status: number, body: string) => boolean;
  describe?: (status: number, body: string) => string;
}

async function send(call: Call, timeoutMs: number): Promise<DemoResult> {
  try {
    const res = await fetch(call.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...call.headers },
      body: JSON.stringify(call.payload),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = await res.text();
    return {
      name: call.name,
      ok: call.expect(res.status, body),
      status: res.status,
      sessionId: call.sessionId,
      detail: call.describe?.(res.status, body) ?? `${res.status} ${short(body)}`,
    };
  } catch (error) {
    return {
      name: call.name,
      ok: false,
      status: 0,
      sessionId: call.sessionId,
      detail: error instanceof Error ? error.message : String(error),
    };
  }
}

function invocationsUrl(runtimeUrl: string, runtime: RegisteredRuntime | undefined): string {
  return `${runtimeUrl}/runtimes/${encodeURIComponent(runtime?.arn ?? 'missing')}/invocations`;
}

/**
 * Sends the sample traffic `agentrt dev --demo` promises, so the UI has data at once: one plain
 * invocation, one streamed, a two-turn session, a weather question, a weather question whose
 * tool call fails (a place outside the forecast service's area), an A2A message and MCP tool calls.
 */
export async function runDemo(options: DemoOptions): Promise<DemoResult[]> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const sdk = options.runtimes.find((r) => r.name === 'sdk_agent');
  const custom = options.runtimes.find((r) => r.name === 'custom_agent');
  const single = newSession('single');
  const stream = newSession('stream');
  const multi = newSession('multi-turn');
  const weather = newSession('weather');
  const failing = newSession('failing-tool');
  const ok2xx = (status: number) => status >= 200 && status < 300;
  const results: DemoResult[] = [];
  const calls: Call[] = [
    {
      name: 'single invocation (sdk_agent)',
      url: invocationsUrl(options.runtimeUrl, sdk),
      sessionId: single,
      payload: { prompt: 'Hello! What can you do?' },
      headers: { [SESSION_HEADER]: single },
      expect: ok2xx,
    },
    {
      name: 'streaming invocation (sdk_agent)',
      url: invocationsUrl(options.runtimeUrl, sdk),
      sessionId: stream,
      payload: { prompt: 'Tell me about agentrt, step by step.', stream: true },
      headers: { [SESSION_HEADER]: stream, accept: 'text/event-stream' },
      expect: ok2xx,
      describe: (status, body) =>
        `${status}, ${body.split('\n').filter((l) => l.startsWith('data:')).length} events`,
    },
    {
      name: 'multi-turn session, turn 1 (custom_agent)',
      url: invocationsUrl(options.runtimeUrl, custom),
      sessionId: multi,
      payload: { input: { prompt: 'My name is Ada. Please remember it.' } },
      headers: { [SESSION_HEADER]: multi },
      expect: ok2xx,
      describe: messageText,
    },
    {
      name: 'multi-turn session, turn 2 (custom_agent)',
      url: invocationsUrl(options.runtimeUrl, custom),
      sessionId: multi,
      payload: { input: { prompt: 'What is my name?' } },
      headers: { [SESSION_HEADER]: multi },
      expect: (status, body) => ok2xx(status) && body.includes('Ada'),
      describe: messageText,
    },
    {
      name: 'weather question (weather service)',
      url: `${options.weatherUrl}/weather`,
      sessionId: weather,
      payload: { prompt: 'What is the weather in Seattle?' },
      headers: { [CLOUD_SESSION_HEADER]: weather },
      expect: ok2xx,
    },
    {
      name: 'failing tool (weather outside the forecast area)',
      url: `${options.weatherUrl}/weather`,
      sessionId: failing,
      payload: { prompt: 'What is the weather at 48.8566,2.3522 (Paris, France)?' },
      headers: { [CLOUD_SESSION_HEADER]: failing },
      // The tool's HTTP call fails (404 from the forecast API); the agent may still answer, or fail.
      expect: (status) => status === 200 || status === 500,
    },
  ];
  const a2a = options.runtimes.find((r) => r.name === 'weather_a2a');
  const a2aSession = newSession('a2a');
  calls.push({
    name: 'A2A message (weather_a2a)',
    url: `${invocationsUrl(options.runtimeUrl, a2a)}/`,
    sessionId: a2aSession,
    payload: {
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'Forecast for Denver' }] },
      },
    },
    headers: { [SESSION_HEADER]: a2aSession, 'A2A-Version': '1.0' },
    expect: (status, body) => status === 200 && body.includes('"result"'),
  });
  // Sequential on purpose: the turns of one session must be ordered, and a cold start is per session.
  for (const call of calls) results.push(await send(call, timeoutMs));
  const mcp = options.runtimes.find((r) => r.name === 'weather_mcp');
  if (mcp) results.push(await mcpDemo(options.runtimeUrl, mcp, timeoutMs));
  return results;
}

/** Lists the MCP server's tools and calls get_alerts through the runtime with the official MCP client. */
async function mcpDemo(
  runtimeUrl: string,
  runtime: RegisteredRuntime,
  timeoutMs: number,
): Promise<DemoResult> {
  const name = 'MCP tools/list + tools/call get_alerts (weather_mcp)';
  const transport = new StreamableHTTPClientTransport(
    new URL(`${invocationsUrl(runtimeUrl, runtime)}?qualifier=DEFAULT`),
  );
  const client = new Client({ name: 'agentrt-dev-demo', version: '0.1.0' });
  try {
    await client.connect(transport, { timeout: timeoutMs });
    const { tools } = await client.listTools(undefined, { timeout: timeoutMs });
    const result = await client.callTool({ name: 'get_alerts', arguments: { state: 'CO' } }, undefined, {
      timeout: timeoutMs,
    });
    const text = ((result.content ?? []) as { text?: string }[]).map((c) => c.text ?? '').join(' ');
    return {
      name,
      ok: tools.length > 0 && !result.isError,
      status: 200,
      sessionId: transport.sessionId ?? '',
      detail: `${tools.map((t) => t.name).join(', ')}; ${short(text, 60)}`,
    };
  } catch (error) {
    return { name, ok: false, status: 0, sessionId: transport.sessionId ?? '', detail: String(error) };
  } finally {
    await client.close().catch(() => undefined); // closing a failed connection has nothing to report
  }
}
