import { describe, expect, it } from 'vitest';
import { buildSpanTree } from './span-tree.js';
import {
  rollUpTokens,
  spanTokenUsage,
  sumTokens,
  sumTokensByModel,
  traceTokenTotals,
  traceTokenUsage,
} from './tokens.js';
import { testSpan } from './test-spans.test-util.js';

describe('spanTokenUsage', () => {
  it('reads current, legacy and OpenInference names, numbers or int64 strings', () => {
    expect(spanTokenUsage({ 'gen_ai.usage.input_tokens': 10, 'gen_ai.usage.output_tokens': '5' })).toEqual({
      input: 10,
      output: 5,
      total: 15,
    });
    expect(spanTokenUsage({ 'gen_ai.usage.prompt_tokens': 3, 'gen_ai.usage.completion_tokens': 4 })).toEqual({
      input: 3,
      output: 4,
      total: 7,
    });
    expect(
      spanTokenUsage({
        'llm.token_count.prompt': 1,
        'llm.token_count.completion': 2,
        'llm.token_count.total': 9,
      }),
    ).toEqual({ input: 1, output: 2, total: 9 });
  });
  it('ignores absent, negative and non-numeric values', () => {
    expect(spanTokenUsage({})).toBeUndefined();
    expect(
      spanTokenUsage({ 'gen_ai.usage.input_tokens': 'many', 'gen_ai.usage.output_tokens': -1 }),
    ).toBeUndefined();
    expect(spanTokenUsage({ 'gen_ai.usage.input_tokens': '', 'gen_ai.usage.output_tokens': 2 })).toEqual({
      input: 0,
      output: 2,
      total: 2,
    });
  });
});

describe('rollUpTokens', () => {
  const usage = (input: number, output: number) => ({
    'gen_ai.usage.input_tokens': input,
    'gen_ai.usage.output_tokens': output,
  });

  it('does not add an agent span that reports the sum of its model calls', () => {
    const spans = [
      testSpan({ id: 'agent', startMs: 0, endMs: 100, attributes: usage(300, 30) }),
      testSpan({ id: 'chat1', parent: 'agent', startMs: 1, endMs: 40, attributes: usage(100, 10) }),
      testSpan({ id: 'tool', parent: 'agent', startMs: 41, endMs: 50 }),
      testSpan({ id: 'chat2', parent: 'agent', startMs: 51, endMs: 99, attributes: usage(200, 20) }),
    ];
    const rollup = rollUpTokens(buildSpanTree(spans));
    expect(rollup.total).toEqual({ input: 300, output: 30, total: 330 });
    expect([...rollup.counted].sort()).toEqual(['chat1', 'chat2']);
    expect(rollup.own.get('agent')).toEqual({ input: 300, output: 30, total: 330 });
    expect(rollup.rolledUp.get('agent')).toEqual({ input: 300, output: 30, total: 330 });
    expect(rollup.rolledUp.has('tool')).toBe(false);
  });

  it('splits the counted usage by model, so per-model sums equal the total (cost without double counting)', () => {
    const spans = [
      testSpan({
        id: 'agent',
        startMs: 0,
        endMs: 100,
        attributes: { ...usage(300, 30), 'gen_ai.request.model': 'agent-x' },
      }),
      testSpan({
        id: 'chat1',
        parent: 'agent',
        startMs: 1,
        endMs: 40,
        attributes: { ...usage(100, 10), 'gen_ai.request.model': 'gpt-4o' },
      }),
      testSpan({
        id: 'chat2',
        parent: 'agent',
        startMs: 51,
        endMs: 99,
        attributes: {
          ...usage(200, 20),
          'gen_ai.request.model': 'claude',
          'gen_ai.response.model': 'claude-3-5-sonnet',
        },
      }),
    ];
    const { total, byModel } = traceTokenUsage(spans);
    expect(total).toEqual({ input: 300, output: 30, total: 330 });
    expect(byModel).toEqual({
      'gpt-4o': { input: 100, output: 10, total: 110 },
      'claude-3-5-sonnet': { input: 200, output: 20, total: 220 },
    });
    expect(
      sumTokensByModel([byModel, undefined, { 'gpt-4o': { input: 1, output: 1, total: 2 } }])['gpt-4o'],
    ).toEqual({
      input: 101,
      output: 11,
      total: 112,
    });
  });

  it('counts a span whose descendants carry no usage, at any depth', () => {
    const spans = [
      testSpan({ id: 'server', startMs: 0, endMs: 100 }),
      testSpan({ id: 'agent', parent: 'server', startMs: 1, endMs: 99, attributes: usage(50, 5) }),
      testSpan({ id: 'http', parent: 'agent', startMs: 2, endMs: 3 }),
      testSpan({ id: 'sub-agent', parent: 'server', startMs: 1, endMs: 99 }),
      testSpan({ id: 'deep-chat', parent: 'sub-agent', startMs: 2, endMs: 90, attributes: usage(7, 3) }),
    ];
    expect(traceTokenTotals(spans)).toEqual({ input: 57, output: 8, total: 65 });
  });

  it('includes orphans (a partial trace) and returns zero when nothing has usage', () => {
    expect(
      traceTokenTotals([
        testSpan({ id: 'root', startMs: 0, endMs: 10, attributes: usage(1, 1) }),
        testSpan({ id: 'lost', parent: 'missing', startMs: 0, endMs: 10, attributes: usage(2, 2) }),
      ]),
    ).toEqual({ input: 3, output: 3, total: 6 });
    expect(traceTokenTotals([testSpan({ id: 'x', startMs: 0, endMs: 1 })])).toEqual({
      input: 0,
      output: 0,
      total: 0,
    });
  });

  it('sums traces into a session total', () => {
    expect(
      sumTokens([
        { input: 1, output: 2, total: 3 },
        { input: 10, output: 20, total: 30 },
      ]),
    ).toEqual({ input: 11, output: 22, total: 33 });
  });
});
