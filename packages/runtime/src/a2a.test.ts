import { randomUUID } from 'node:crypto';
import { GetAgentCardCommand, ResourceNotFoundException } from '@aws-sdk/client-bedrock-agentcore';
import { Role } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestRuntime, createReady, sessionId, startRuntime, waitFor } from './test-support.js';

function message(text: string) {
  return {
    tenant: '',
    message: {
      messageId: randomUUID(),
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [
        {
          content: { $case: 'text' as const, value: text },
          metadata: undefined,
          filename: '',
          mediaType: '',
        },
      ],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}

function textOf(parts: { content?: { $case: string; value?: unknown } }[]): string {
  return parts.map((p) => (p.content?.$case === 'text' ? String(p.content.value) : '')).join('');
}

const SESSION_HEADER = 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id';

/**
 * The official A2A client, started from the card URL, sending the runtime session header; the
 * session ids the runtime answers with go to `answered`.
 */
async function a2aClient(baseUrl: string, runtimeSessionId?: string, answered: (string | null)[] = []) {
  const fetchImpl: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    if (runtimeSessionId) headers.set(SESSION_HEADER, runtimeSessionId);
    const res = await fetch(input, { ...init, headers });
    answered.push(res.headers.get(SESSION_HEADER));
    return res;
  };
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return factory.createFromUrl(baseUrl);
}

describe('A2A runtimes through the official A2A SDK client and the AWS SDK', () => {
  let rt: TestRuntime;
  let arn: string;
  let base: string;
  beforeAll(async () => {
    rt = await startRuntime();
    const runtime = await createReady(rt.control, 'a2a_echo', 'a2a', {
      protocolConfiguration: { serverProtocol: 'A2A' },
    });
    arn = runtime.agentRuntimeArn!;
    base = `${rt.server.url}/runtimes/${encodeURIComponent(arn)}/invocations/`;
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
  }, 30_000);

  it('serves the container’s card through GetAgentCard, pointing back through the runtime', async () => {
    const sid = sessionId('a2a-card');
    const out = await rt.data.send(new GetAgentCardCommand({ agentRuntimeArn: arn, runtimeSessionId: sid }));
    expect(out.runtimeSessionId).toBe(sid);
    const card = out.agentCard as { name: string; supportedInterfaces: { url: string }[] };
    expect(card.name).toBe('Echo agent');
    expect(card.supportedInterfaces[0]!.url).toBe(base);
    const raw = await fetch(`${base}.well-known/agent-card.json`);
    expect(raw.status).toBe(200);
    expect(((await raw.json()) as { name: string }).name).toBe('Echo agent');
  });

  it('sends a message and streams one through the runtime (official A2A client)', async () => {
    const sid = sessionId('a2a-client');
    const client = await a2aClient(base, sid);
    const result = await client.sendMessage(message('hello'));
    const reply = result as unknown as { parts: { content?: { $case: string; value?: unknown } }[] };
    const text = textOf(reply.parts);
    expect(text).toContain('echo: hello');
    expect(text).toContain(`session ${sid}`);
    expect(text).toContain('a2a-version 1.0');
    const events = [];
    for await (const event of client.sendMessageStream(message('streamed'))) events.push(event);
    const streamed = events.find((e) => e.payload?.$case === 'message');
    expect(streamed).toBeDefined();
    const value = streamed!.payload!.value as { parts: { content?: { $case: string; value?: unknown } }[] };
    expect(textOf(value.parts)).toContain('echo: streamed');
    // Both calls reached the one worker of that session.
    expect(rt.server.sessions().filter((s) => s.sessionId === sid)).toHaveLength(1);
  });

  it('reads the card without a session id in a session of its own, never another caller’s', async () => {
    const sid = sessionId('a2a-card-owner');
    const owner = await a2aClient(base, sid);
    await owner.sendMessage(message('mine'));
    const ownerSession = () => rt.server.sessions().find((s) => s.sessionId === sid);
    const lastActivityMs = ownerSession()!.lastActivityMs;
    const answered: (string | null)[] = [];
    await a2aClient(base, undefined, answered);
    expect(answered).toHaveLength(1);
    const cardSession = answered[0];
    expect(cardSession).toBeTruthy();
    // Neither served by the owner's worker nor told the owner's session id.
    expect(cardSession).not.toBe(sid);
    expect(ownerSession()!.lastActivityMs).toBe(lastActivityMs);
    // The session the runtime minted for the read serves nothing else: it is stopped once it has.
    await waitFor(
      () => !rt.server.sessions().some((s) => s.sessionId === cardSession),
      10_000,
      'the card session to stop',
    );
    const viaAws = await rt.data.send(new GetAgentCardCommand({ agentRuntimeArn: arn }));
    expect(viaAws.runtimeSessionId).not.toBe(sid);
    expect(ownerSession()!.lastActivityMs).toBe(lastActivityMs);
  });

  it('relays a crashed agent as a JSON-RPC error with the runtime’s 424 code', async () => {
    const client = await a2aClient(base, sessionId('a2a-crash'));
    await expect(client.sendMessage(message('crash'))).rejects.toThrow(/-32055|Received error|failed/);
    const res = await fetch(base, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'A2A-Version': '1.0',
        'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': sessionId('a2a-crash-2'),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'SendMessage',
        params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'crash' }] } },
      }),
    });
    expect(res.status).toBe(424);
    const body = (await res.json()) as { id: number; error: { code: number; message: string } };
    expect(body.id).toBe(7);
    expect(body.error.code).toBe(-32055);
  });

  it('answers GetAgentCard on a non-A2A runtime with ResourceNotFoundException', async () => {
    const http = await createReady(rt.control, 'a2a_not', 'echo');
    await expect(
      rt.data.send(
        new GetAgentCardCommand({ agentRuntimeArn: http.agentRuntimeArn!, runtimeSessionId: sessionId('x') }),
      ),
    ).rejects.toThrow(ResourceNotFoundException);
  });

  it('gives an MCP client pointed at an A2A runtime a clear error, and the agent carries on', async () => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } =
      await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const client = new Client({ name: 'wrong-protocol', version: '1.0.0' });
    await expect(
      client.connect(new StreamableHTTPClientTransport(new URL(`${base}?qualifier=DEFAULT`))),
    ).rejects.toThrow(/-32052.*serves A2A, not MCP/);
    const a2a = await a2aClient(base, sessionId('a2a-after-mcp'));
    const reply = (await a2a.sendMessage(message('still here'))) as unknown as {
      parts: { content?: { $case: string; value?: unknown } }[];
    };
    expect(textOf(reply.parts)).toContain('echo: still here');
  });
});
