import { describe, expect, it } from 'vitest';
import { testSpan } from '../trace-model/test-spans.test-util.js';
import { summarizeTrace } from './summaries.js';

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
