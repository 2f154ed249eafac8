import { describe, expect, it } from 'vitest';
import { compareTraces, diffSteps } from './compare.js';
import { conversationTurn } from './conversation.js';
import { weatherTrace } from './test-trace.test-util.js';

describe('trace view conversion', () => {
  it('orders spans, rolls tokens up once and finds the critical path', () => {
    const t = weatherTrace();
    expect(t.roots).toHaveLength(1);
    expect(t.roots[0]!.children.map((c) => c.span.name)).toEqual([
      'chat model-x',
      'execute_tool get_weather',
      'chat model-x',
    ]);
    expect(t.tokens.total).toEqual({ input: 300, output: 40, total: 340 });
    expect([...t.criticalPath.spanIds].sort()).toEqual(['a0', 'c1', 'c2', 't1']);
    expect(t.endMs - t.startMs).toBe(140);
  });
});

describe('conversationTurn', () => {
  it('reads prompt, answer, tools and models of a turn', () => {
    expect(conversationTurn(weatherTrace({ city: 'Oslo' }))).toEqual({
      prompt: 'What is the weather in Oslo?',
      answer: 'It is 18°C and sunny in Oslo.',
      tools: ['get_weather'],
      models: ['model-x'],
    });
  });
});

describe('compareTraces', () => {
  it('splits model and tool time and diffs the steps', () => {
    const c = compareTraces(weatherTrace({ toolMs: 30 }), weatherTrace({ toolMs: 90, extraTool: true }));
    expect(c.a.modelMs).toBe(90);
    expect(c.a.toolMs).toBe(30);
    expect(c.b.toolMs).toBe(110);
    expect(c.b.toolCalls).toBe(2);
    expect(c.steps.map((s) => `${s.change}:${s.label}`)).toEqual([
      'same:invoke_agent weather',
      'same:chat model-x',
      'same:execute_tool get_weather',
      'only-b:execute_tool get_time',
      'same:chat model-x',
    ]);
  });
  it('aligns steps by longest common subsequence', () => {
    const s = (labels: string) => labels.split('').map((label) => ({ label, ms: 1 }));
    expect(
      diffSteps(s('abcd'), s('acde')).map(
        (d) => `${d.change[0] === 's' ? '=' : d.change === 'only-a' ? '-' : '+'}${d.label}`,
      ),
    ).toEqual(['=a', '-b', '=c', '=d', '+e']);
  });
});
