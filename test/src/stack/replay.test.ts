/**
 * `agentrt replay <traceId>` against a real runtime host and collector: an invocation sent with
 * the official AWS SDK client (a custom header added as SDK users do, by middleware) is recorded
 * on its span; the replay sends the same payload, session and header to the runtime in a new
 * trace whose InvokeAgentRuntime span links to the original. Clear refusals: a trace the
 * collector does not have, one with no runtime call, a runtime that is gone, a malformed link.
 */
import { DeleteAgentRuntimeCommand, GetAgentRuntimeCommand } from '@aws-sdk/client-bedrock-agentcore-control';
import { main } from '@agentrt/cli';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type RuntimeStack,
  invocationSpanOf,
  sendAgentOnlyTrace,
  startRuntimeStack,
  until,
} from '../observability/runtime-stack.js';

const SESSION = `replay-session-${'0'.repeat(24)}`;
const CUSTOM = 'x-amzn-bedrock-agentcore-runtime-custom-tenant';

let stack: RuntimeStack;

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, {
    stdout: (t) => void (out += t),
    stderr: (t) => void (err += t),
    env: {},
    cwd: process.cwd(),
  });
  return { code, out, err };
}

/** `agentrt replay <traceId>` against the stack's collector and runtime. */
const replay = (traceId: string) =>
  run(['replay', traceId, '--collector', stack.collector.url, '--url', stack.runtime.url]);

const invocationOf = (traceId: string) => invocationSpanOf(stack.collector.url, traceId);

beforeAll(async () => {
  stack = await startRuntimeStack({ name: 'replay_agent', runtime: { captureRequests: true } });
  // A custom header, the way AWS SDK users send one: a build-step middleware.
  stack.data.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers: Record<string, string> };
      request.headers[CUSTOM] = 'acme';
      return next(args);
    },
    { step: 'build', name: 'customHeader' },
  );
}, 120_000);

afterAll(async () => {
  await stack?.close();
}, 60_000);

describe('agentrt replay', { timeout: 90_000 }, () => {
  const originalTrace = randomBytes(16).toString('hex');
  const payload = JSON.stringify({ prompt: 'What is the weather in Paris?' });

  it('sends the recorded call again in a new trace linked to the original', async () => {
    const first = await stack.invoke(payload, SESSION, {
      traceParent: `00-${originalTrace}-${randomBytes(8).toString('hex')}-01`,
    });
    expect(first.statusCode).toBe(200);
    const original = await invocationOf(originalTrace);
    expect(original.attributes['agentrt.request.payload']).toBe(payload);
    expect(original.attributes[`agentrt.request.header.${CUSTOM}`]).toBe('acme');
    expect(original.attributes['authorization']).toBeUndefined();

    const replayed = await replay(originalTrace);
    expect(replayed.err).toBe('');
    expect(replayed.code).toBe(0);
    const [, newTrace] =
      /^replayed [0-9a-f]{32} as ([0-9a-f]{32}) \(session (\S+), (\d+) bytes answered\)/.exec(replayed.out)!;
    expect(replayed.out).toContain(
      `compare: ${stack.collector.url}/#/compare?a=${originalTrace}&b=${newTrace}`,
    );
    const again = await invocationOf(newTrace!);
    expect(again.attributes['session.id']).toBe(SESSION);
    expect(again.attributes['agentrt.request.payload']).toBe(payload);
    expect(again.attributes[`agentrt.request.header.${CUSTOM}`]).toBe('acme');
    expect(again.attributes['agentrt.replay.of_trace_id']).toBe(originalTrace);
    expect(again.links).toEqual([
      expect.objectContaining({ traceId: originalTrace, spanId: original.spanId }),
    ]);
  });

  it('refuses what it cannot replay, saying why', async () => {
    const unknown = 'ab'.repeat(16);
    const missing = await replay(unknown);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain(`trace ${unknown} is not in the collector at ${stack.collector.url}`);
    expect((await run(['replay', 'not-a-trace'])).err).toMatch(/32 lowercase hex/);

    // A trace with no runtime call in it (an agent's own spans, sent straight to the collector).
    const plain = await sendAgentOnlyTrace(stack.collector.url);
    const noCall = await until('plain trace refused', async () => {
      const r = await replay(plain);
      return r.err.includes('not in the collector') ? undefined : r;
    });
    expect(noCall.code).toBe(1);
    expect(noCall.err).toContain(`trace ${plain} has no InvokeAgentRuntime span`);

    // A malformed link header is a 400 naming it.
    const bad = await fetch(`${stack.runtime.url}/runtimes/${encodeURIComponent(stack.arn)}/invocations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-agentrt-replay-of': 'zz-not-ids' },
      body: payload,
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/x-agentrt-replay-of/);

    // The runtime is gone: deleted after the trace was recorded.
    const agentRuntimeId = stack.arn.split('/').pop()!;
    await stack.control.send(new DeleteAgentRuntimeCommand({ agentRuntimeId }));
    await until('runtime deleted', () =>
      stack.control.send(new GetAgentRuntimeCommand({ agentRuntimeId })).then(
        () => undefined,
        (error: Error) => (error.name === 'ResourceNotFoundException' ? true : undefined),
      ),
    );
    const gone = await replay(originalTrace);
    expect(gone.code).toBe(1);
    expect(gone.err).toContain(`cannot replay trace ${originalTrace}: its runtime ${stack.arn} is gone`);
  });
});
