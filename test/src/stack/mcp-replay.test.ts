/**
 * Replay of MCP calls against a real runtime host and collector: the official MCP SDK client calls
 * the runtime's MCP test server (packages/runtime/test-fixtures/mcp) with request capture on; a
 * `tools/call` is recorded on its InvokeAgentRuntime span, MCP headers included, and
 * `agentrt replay` sends it again in a new trace linked to the original. A stateless server takes
 * the replay in its session (or a new one); a stateful one only in the live session its
 * `initialize` ran in, and any other replay is refused saying why.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { StopRuntimeSessionCommand } from '@aws-sdk/client-bedrock-agentcore';
import { CreateAgentRuntimeCommand, GetAgentRuntimeCommand } from '@aws-sdk/client-bedrock-agentcore-control';
import { main } from '@agentrt/cli';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REPO_ROOT,
  type RuntimeStack,
  invocationSpanOf,
  startRuntimeStack,
  until,
} from '../observability/runtime-stack.js';

const FIXTURE = pathToFileURL(join(REPO_ROOT, 'packages', 'runtime', 'test-fixtures', 'mcp')).href;

let stack: RuntimeStack;
let statefulArn: string;

/** An MCP client on a runtime whose every request starts a trace of its own; `traces` by method. */
async function mcpClient(arn: string) {
  const traces: { method: string; traceId: string }[] = [];
  const url = `${stack.runtime.url}/runtimes/${encodeURIComponent(arn)}/invocations?qualifier=DEFAULT`;
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: (input, init) => {
      const traceId = randomBytes(16).toString('hex');
      const headers = new Headers(init?.headers);
      headers.set('traceparent', `00-${traceId}-${randomBytes(8).toString('hex')}-01`);
      if (typeof init?.body === 'string')
        traces.push({ method: (JSON.parse(init.body) as { method: string }).method, traceId });
      return fetch(input, { ...init, headers });
    },
  });
  const client = new Client({ name: 'mcp-replay-test', version: '1.0.0' });
  await client.connect(transport);
  /** The `count` tool's answer (a per-process counter) and the trace of its call. */
  const count = async () => {
    const result = await client.callTool({ name: 'count' });
    const [content] = result.content as { text: string }[];
    const traceId = traces.filter((t) => t.method === 'tools/call').at(-1)!.traceId;
    return { count: (JSON.parse(content!.text) as { count: number }).count, traceId };
  };
  return { client, transport, count };
}

async function replay(traceId: string, ...flags: string[]) {
  let out = '';
  let err = '';
  const code = await main(
    ['replay', traceId, ...flags, '--collector', stack.collector.url, '--url', stack.runtime.url],
    { stdout: (t) => void (out += t), stderr: (t) => void (err += t), env: {}, cwd: process.cwd() },
  );
  const newTrace = /^replayed [0-9a-f]{32} as ([0-9a-f]{32})/.exec(out)?.[1];
  return { code, err, newTrace };
}

beforeAll(async () => {
  stack = await startRuntimeStack({
    name: 'mcp_replay',
    containerUri: FIXTURE,
    serverProtocol: 'MCP',
    environment: {},
    runtime: { captureRequests: true },
  });
  const created = await stack.control.send(
    new CreateAgentRuntimeCommand({
      agentRuntimeName: 'mcp_replay_stateful',
      agentRuntimeArtifact: { containerConfiguration: { containerUri: FIXTURE } },
      roleArn: 'arn:aws:iam::123456789012:role/AgentRuntimeRole',
      networkConfiguration: { networkMode: 'PUBLIC' },
      protocolConfiguration: { serverProtocol: 'MCP' },
      environmentVariables: { MCP_MODE: 'stateful' },
    }),
  );
  await until('the stateful runtime READY', async () => {
    const got = await stack.control.send(
      new GetAgentRuntimeCommand({ agentRuntimeId: created.agentRuntimeId! }),
    );
    return got.status === 'READY' ? true : undefined;
  });
  statefulArn = created.agentRuntimeArn!;
}, 120_000);

afterAll(async () => {
  await stack?.close();
}, 60_000);

describe('replay of MCP calls', { timeout: 90_000 }, () => {
  it('records a tools/call on its span; its replay runs in the same session, linked to it', async () => {
    const mcp = await mcpClient(stack.arn);
    expect((await mcp.count()).count).toBe(1);
    const second = await mcp.count();
    expect(second.count).toBe(2);
    const original = await invocationSpanOf(stack.collector.url, second.traceId);
    const a = original.attributes;
    expect(JSON.parse(a['agentrt.request.payload'] as string)).toMatchObject({
      method: 'tools/call',
      params: { name: 'count' },
    });
    expect(a['agentrt.request.accept']).toMatch(/text\/event-stream/);
    expect(a['agentrt.request.header.mcp-session-id']).toBe(mcp.transport.sessionId);
    expect(a['agentrt.request.header.mcp-protocol-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);

    const replayed = await replay(second.traceId);
    expect(replayed.err).toBe('');
    expect(replayed.code).toBe(0);
    const again = await invocationSpanOf(stack.collector.url, replayed.newTrace!);
    expect(again.attributes['session.id']).toBe(a['session.id']);
    expect(again.attributes['agentrt.request.payload']).toBe(a['agentrt.request.payload']);
    expect(again.attributes['agentrt.replay.of_trace_id']).toBe(second.traceId);
    expect(again.links).toEqual([
      expect.objectContaining({ traceId: second.traceId, spanId: original.spanId }),
    ]);
    // The replay counted in the session's worker: the client's next call sees it.
    expect((await mcp.count()).count).toBe(4);

    // On a new session a stateless server answers it too (a fresh worker: its own counter).
    const fresh = await replay(second.traceId, '--new-session');
    expect(fresh.code).toBe(0);
    const elsewhere = await invocationSpanOf(stack.collector.url, fresh.newTrace!);
    expect(elsewhere.attributes['session.id']).not.toBe(a['session.id']);
    expect((await mcp.count()).count).toBe(5);
    await mcp.client.close();
  });

  it('replays a stateful server’s call in its live session, and refuses it elsewhere saying why', async () => {
    const mcp = await mcpClient(statefulArn);
    const first = await mcp.count();
    expect(first.count).toBe(1);
    const original = await invocationSpanOf(stack.collector.url, first.traceId);
    const runtimeSession = original.attributes['session.id'] as string;
    const minted = mcp.transport.sessionId!;
    expect(minted).not.toBe(runtimeSession);

    // While the session lives, the replay carries the server's own MCP session id into it.
    const live = await replay(first.traceId);
    expect(live.err).toBe('');
    expect(live.code).toBe(0);
    expect((await invocationSpanOf(stack.collector.url, live.newTrace!)).links).toEqual([
      expect.objectContaining({ traceId: first.traceId, spanId: original.spanId }),
    ]);
    expect((await mcp.count()).count).toBe(3);

    // Another session has no such MCP session: refused before anything reaches a worker.
    const elsewhere = await replay(first.traceId, '--new-session');
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.err).toContain(
      `cannot replay this MCP call on its own: its server is stateful (it minted MCP session ${minted} on initialize) and answers it only in runtime session ${runtimeSession}, not in `,
    );

    // Once the session has ended, nor has the server.
    await stack.data.send(
      new StopRuntimeSessionCommand({ agentRuntimeArn: statefulArn, runtimeSessionId: runtimeSession }),
    );
    const ended = await replay(first.traceId);
    expect(ended.code).toBe(1);
    expect(ended.err).toContain(`only in runtime session ${runtimeSession}, which has ended`);
    await mcp.client.close();
  });
});
