import { InvokeAgentRuntimeCommand } from '@aws-sdk/client-bedrock-agentcore';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { checkResourceAllowed } from '@modelcontextprotocol/sdk/shared/auth-utils.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestRuntime, createReady, sessionId, startRuntime } from './test-support.js';

/** Every response header the MCP client saw, in order. */
interface Seen {
  request: Record<string, string>;
  status: number;
  response: Record<string, string>;
}

async function mcpClient(url: string, seen: Seen[] = [], headers: Record<string, string> = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers },
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      seen.push({
        request: Object.fromEntries(new Headers(init?.headers).entries()),
        status: res.status,
        response: Object.fromEntries(res.headers.entries()),
      });
      return res;
    },
  });
  const client = new Client({ name: 'agentrt-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

function text(result: Awaited<ReturnType<Client['callTool']>>): string {
  const content = result.content as { type: string; text: string }[];
  return content.map((c) => c.text).join('');
}

describe('MCP runtimes through the official MCP SDK client', () => {
  let rt: TestRuntime;
  const urls: Record<string, string> = {};
  const arns: Record<string, string> = {};
  beforeAll(async () => {
    rt = await startRuntime();
    const envs: Record<string, Record<string, string>> = {
      mcp_sse: {},
      mcp_json: { MCP_JSON: '1' },
      mcp_stateful: { MCP_MODE: 'stateful' },
    };
    for (const [name, env] of Object.entries(envs)) {
      const runtime = await createReady(rt.control, name, 'mcp', {
        protocolConfiguration: { serverProtocol: 'MCP' },
        environmentVariables: env,
      });
      expect(runtime.protocolConfiguration).toEqual({ serverProtocol: 'MCP' });
      arns[name] = runtime.agentRuntimeArn!;
      urls[name] =
        `${rt.server.url}/runtimes/${encodeURIComponent(runtime.agentRuntimeArn!)}/invocations?qualifier=DEFAULT`;
    }
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
  }, 30_000);

  const workerPid = (sid: string) => rt.server.sessions().find((s) => s.sessionId === sid)?.worker?.pid;

  it('initializes, lists and calls tools (SSE); one runtime session per MCP session', async () => {
    const seen: Seen[] = [];
    const { client, transport } = await mcpClient(urls.mcp_sse!, seen);
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual(['add', 'count', 'countdown']);
    expect(text(await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } }))).toBe('5');
    const sid = transport.sessionId!;
    expect(sid).toMatch(/^[0-9a-f-]{36}$/);
    // The initialize reply carries the session id and the runtime session header; later POSTs send it.
    const posts = seen.filter((s) => s.request['content-type'] === 'application/json');
    expect(posts[0]!.response['mcp-session-id']).toBe(sid);
    expect(posts[0]!.response['x-amzn-bedrock-agentcore-runtime-session-id']).toBe(sid);
    expect(posts[0]!.response['content-type']).toMatch(/^text\/event-stream/);
    expect(posts.at(-1)!.request['mcp-session-id']).toBe(sid);
    expect(posts.at(-1)!.request['mcp-protocol-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    // The GET stream the client opens after initialize is refused with 405, which it accepts.
    expect(seen.some((s) => s.status === 405)).toBe(true);

    expect(JSON.parse(text(await client.callTool({ name: 'count' }))).count).toBe(1);
    expect(JSON.parse(text(await client.callTool({ name: 'count' }))).count).toBe(2);
    const other = await mcpClient(urls.mcp_sse!);
    expect(JSON.parse(text(await other.client.callTool({ name: 'count' }))).count).toBe(1);
    expect(other.transport.sessionId).not.toBe(sid);
    expect(workerPid(sid)).toBeDefined();
    expect(workerPid(other.transport.sessionId!)).not.toBe(workerPid(sid));
    await transport.terminateSession(); // DELETE → 405, which the client treats as success
    await client.close();
    await other.client.close();
  });

  it('streams SSE notifications as the server sends them (not buffered)', async () => {
    const { client } = await mcpClient(urls.mcp_sse!);
    const at: number[] = [];
    const result = await client.callTool(
      { name: 'countdown', arguments: { steps: 3, delayMs: 200 } },
      undefined,
      {
        onprogress: () => void at.push(Date.now()),
      },
    );
    expect(text(result)).toBe('liftoff');
    expect(at).toHaveLength(3);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(120);
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(120);
    await client.close();
  });

  it('passes JSON responses through', async () => {
    const seen: Seen[] = [];
    const { client } = await mcpClient(urls.mcp_json!, seen);
    expect(text(await client.callTool({ name: 'add', arguments: { a: 40, b: 2 } }))).toBe('42');
    const call = seen.filter((s) => s.request['content-type'] === 'application/json').at(-1)!;
    expect(call.response['content-type']).toMatch(/^application\/json/);
    await client.close();
  });

  it('returns a stateful server’s own session id and keeps its state behind it', async () => {
    const seen: Seen[] = [];
    const { client, transport } = await mcpClient(urls.mcp_stateful!, seen);
    const minted = transport.sessionId!;
    const runtimeSession = seen[0]!.response['x-amzn-bedrock-agentcore-runtime-session-id']!;
    expect(minted).toBeDefined();
    expect(runtimeSession).not.toBe(minted); // the server's id, aliased to the runtime session
    expect(JSON.parse(text(await client.callTool({ name: 'count' }))).count).toBe(1);
    expect(JSON.parse(text(await client.callTool({ name: 'count' }))).count).toBe(2);
    const last = seen.at(-1)!;
    expect(last.response['x-amzn-bedrock-agentcore-runtime-session-id']).toBe(runtimeSession);
    expect(last.response['mcp-session-id']).toBe(minted);
    await client.close();
  });

  it('keeps a caller-chosen runtime session across MCP clients', async () => {
    const sid = sessionId('mcp-caller-chosen');
    const header = { 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': sid };
    const a = await mcpClient(urls.mcp_sse!, [], header);
    expect(JSON.parse(text(await a.client.callTool({ name: 'count' }))).count).toBe(1);
    const b = await mcpClient(urls.mcp_sse!, [], header);
    expect(JSON.parse(text(await b.client.callTool({ name: 'count' }))).count).toBe(2);
    await a.client.close();
    await b.client.close();
  });

  it('answers InvokeAgentRuntime with the MCP fields through the AWS SDK', async () => {
    const runtimeSessionId = sessionId('mcp-sdk');
    const call = async (id: number, method: string, params: unknown, mcpSessionId?: string) => {
      const out = await rt.data.send(
        new InvokeAgentRuntimeCommand({
          agentRuntimeArn: arns.mcp_json!,
          runtimeSessionId,
          contentType: 'application/json',
          accept: 'application/json, text/event-stream',
          mcpProtocolVersion: '2025-06-18',
          mcpMethod: method,
          ...(mcpSessionId ? { mcpSessionId } : {}),
          payload: new TextEncoder().encode(JSON.stringify({ jsonrpc: '2.0', id, method, params })),
        }),
      );
      return { out, body: JSON.parse(await out.response!.transformToString()) as Record<string, unknown> };
    };
    const init = await call(1, 'initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'sdk', version: '1' },
    });
    expect(init.out.runtimeSessionId).toBe(runtimeSessionId);
    expect(init.out.mcpSessionId).toBe(runtimeSessionId);
    const called = await call(2, 'tools/call', { name: 'count', arguments: {} }, init.out.mcpSessionId);
    const result = called.body.result as { content: { text: string }[] };
    expect(JSON.parse(result.content[0]!.text).count).toBe(1);
    expect(called.out.mcpSessionId).toBe(runtimeSessionId);
  });

  it('challenges a JWT runtime with resource metadata that MCP OAuth discovery accepts', async () => {
    const runtime = await createReady(rt.control, 'mcp_jwt', 'mcp', {
      protocolConfiguration: { serverProtocol: 'MCP' },
      authorizerConfiguration: {
        customJWTAuthorizer: {
          discoveryUrl: 'http://127.0.0.1:9/issuer/.well-known/openid-configuration',
          allowedAudience: ['mcp'],
        },
      },
    });
    const url = `${rt.server.url}/runtimes/${encodeURIComponent(runtime.agentRuntimeArn!)}/invocations?qualifier=DEFAULT`;
    const seen: Seen[] = [];
    await expect(mcpClient(url, seen)).rejects.toThrow(/-32001.*Missing bearer token/);
    const challenge = seen[0]!.response['www-authenticate']!;
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)![1]!;
    const metadata = (await (await fetch(metadataUrl)).json()) as {
      resource: string;
      authorization_servers: string[];
    };
    expect(metadata.authorization_servers).toEqual(['http://127.0.0.1:9/issuer']);
    expect(checkResourceAllowed({ requestedResource: url, configuredResource: metadata.resource })).toBe(
      true,
    );
  });

  it('reports a failed MCP container as JSON-RPC error -32010 with the container’s words', async () => {
    const runtime = await createReady(rt.control, 'mcp_crashing', 'crashing', {
      protocolConfiguration: { serverProtocol: 'MCP' },
    });
    const url = `${rt.server.url}/runtimes/${encodeURIComponent(runtime.agentRuntimeArn!)}/invocations`;
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list', fail: true }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { id: number; error: { code: number; message: string } };
    expect(body.id).toBe(3);
    expect(body.error.code).toBe(-32010);
    expect(body.error.message).toContain('Received error (500) from runtime');
    expect(body.error.message).toContain('tool exploded');
    // The runtime and its other sessions carry on.
    const { client } = await mcpClient(urls.mcp_sse!);
    expect(text(await client.callTool({ name: 'add', arguments: { a: 1, b: 1 } }))).toBe('2');
    await client.close();
  });
});
