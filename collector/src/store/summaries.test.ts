import { describe, expect, it } from 'vitest';
import { testSpan } from '../trace-model/test-spans.test-util.js';
import { summarizeSession, summarizeTrace } from './summaries.js';

describe('trace summaries: in progress or continued', () => {
  it('a trace whose root has not arrived is in progress', () => {
    const child = testSpan({ id: 'child', parent: 'root', startMs: 10, endMs: 20 });
    expect(summarizeTrace('t', [child]).inProgress).toBe(true);
    const root = testSpan({ id: 'root', startMs: 0, endMs: 30 });
    expect(summarizeTrace('t', [child, root])).toMatchObject({ inProgress: false, rootName: 'root' });
  });

  it('a trace continued from an upstream caller (a SERVER span whose parent is elsewhere) is complete', () => {
    // What every hosted invocation looks like: the runtime's InvokeAgentRuntime SERVER span has the
    // caller's span as parent, which is never exported here.
    const entry = {
      ...testSpan({ id: 'invoke', parent: 'caller', name: 'InvokeAgentRuntime', startMs: 0, endMs: 50 }),
      kind: 'SERVER' as const,
    };
    const agent = testSpan({ id: 'agent', parent: 'invoke', startMs: 5, endMs: 45 });
    expect(summarizeTrace('t', [agent, entry])).toMatchObject({
      inProgress: false,
      rootName: 'InvokeAgentRuntime',
    });
  });
});

describe('trace summaries: whose work a trace is', () => {
  const runtimeSpan = (name: string, attributes: Record<string, string>) => ({
    ...testSpan({ id: name, name, startMs: 0, endMs: 50, attributes }),
    kind: 'SERVER' as const,
    resource: { attributes: { 'service.name': 'agentrt-runtime' } },
  });

  it("names a call to a hosted agent after the agent's runtime; its session lists the agent", () => {
    const invoke = runtimeSpan('InvokeAgentRuntime', {
      'rpc.service': 'BedrockAgentCore',
      'aws.bedrock.agentcore.runtime.name': 'sdk_agent',
    });
    const worker = testSpan({ id: 'worker', parent: 'InvokeAgentRuntime', startMs: 5, endMs: 45 });
    const summary = summarizeTrace('t', [invoke, worker]);
    expect(summary).toMatchObject({ serviceName: 'agentrt-runtime', agentName: 'sdk_agent' });
    expect(summary.noise).toBeUndefined();
    const plain = summarizeTrace('u', [testSpan({ id: 'root', startMs: 0, endMs: 10 })]);
    expect(plain.agentName).toBeUndefined();
    expect(summarizeSession('s', [summary, plain]).serviceNames).toEqual(['sdk_agent', 'svc']);
  });

  it("marks the runtime's control-plane calls (registering, looking a name up) as internal noise", () => {
    for (const op of ['CreateAgentRuntime', 'GetAgentRuntime', 'ListAgentRuntimes'])
      expect(summarizeTrace('t', [runtimeSpan(op, { 'rpc.service': 'BedrockAgentCoreControl' })]).noise).toBe(
        'internal',
      );
  });
});
