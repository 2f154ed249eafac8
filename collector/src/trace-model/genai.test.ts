import { describe, expect, it } from 'vitest';
import type { LogRecord, SpanEventRecord } from '../wire-types.js';
import {
  classifySpan,
  extractChatMessages,
  genAiFacts,
  messageText,
  normalizeMessages,
  parseMaybeJson,
  sessionIdOf,
  toolCallOf,
} from './genai.js';

describe('classifySpan', () => {
  it('uses gen_ai.operation.name first', () => {
    expect(classifySpan({ name: 'whatever', attributes: { 'gen_ai.operation.name': 'invoke_agent' } })).toBe(
      'invoke_agent',
    );
    expect(classifySpan({ name: 'x', attributes: { 'gen_ai.operation.name': 'chat' } })).toBe('chat');
    expect(classifySpan({ name: 'x', attributes: { 'gen_ai.operation.name': 'text_completion' } })).toBe(
      'chat',
    );
    expect(classifySpan({ name: 'x', attributes: { 'gen_ai.operation.name': 'execute_tool' } })).toBe(
      'execute_tool',
    );
  });
  it('falls back to OpenInference kinds and the span name prefix', () => {
    expect(classifySpan({ name: 'x', attributes: { 'openinference.span.kind': 'LLM' } })).toBe('chat');
    expect(classifySpan({ name: 'invoke_agent weather', attributes: {} })).toBe('invoke_agent');
    expect(classifySpan({ name: 'chat claude-3', attributes: {} })).toBe('chat');
    expect(classifySpan({ name: 'execute_tool get_weather', attributes: {} })).toBe('execute_tool');
    expect(classifySpan({ name: 'chatter', attributes: {} })).toBe('other');
    expect(classifySpan({ name: 'GET /ping', attributes: {} })).toBe('other');
  });
});

describe('genAiFacts and sessionIdOf', () => {
  it('collects model, provider, agent and finish reasons', () => {
    expect(
      genAiFacts({
        name: 'chat m',
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'aws.bedrock',
          'gen_ai.request.model': 'm',
          'gen_ai.response.finish_reasons': ['stop'],
        },
      }),
    ).toEqual({
      kind: 'chat',
      operation: 'chat',
      provider: 'aws.bedrock',
      requestModel: 'm',
      finishReasons: ['stop'],
    });
  });
  it('finds the session from span then resource attributes', () => {
    expect(sessionIdOf({ 'gen_ai.conversation.id': 'c1' })).toBe('c1');
    expect(sessionIdOf({ 'session.id': 's1', 'gen_ai.conversation.id': 'c1' })).toBe('s1');
    expect(sessionIdOf({}, { 'session.id': 'r1' })).toBe('r1');
    expect(sessionIdOf({ 'session.id': '' })).toBeUndefined();
  });
});

describe('extractChatMessages', () => {
  it('reads the current parts format from JSON-string attributes', () => {
    const t = extractChatMessages({
      name: 'chat',
      attributes: {
        'gen_ai.system_instructions': JSON.stringify([{ type: 'text', content: 'Be brief.' }]),
        'gen_ai.input.messages': JSON.stringify([
          { role: 'user', parts: [{ type: 'text', content: 'Weather in Paris?' }] },
          {
            role: 'assistant',
            parts: [{ type: 'tool_call', id: 'c1', name: 'get_weather', arguments: { city: 'Paris' } }],
          },
          { role: 'tool', parts: [{ type: 'tool_call_response', id: 'c1', response: '{"tempC":18}' }] },
        ]),
        'gen_ai.output.messages': JSON.stringify([
          { role: 'assistant', parts: [{ type: 'text', content: '18°C and sunny.' }], finish_reason: 'stop' },
        ]),
      },
    });
    expect(t.inputSource).toBe('attributes');
    expect(t.system).toEqual([{ role: 'system', parts: [{ type: 'text', content: 'Be brief.' }] }]);
    expect(t.input.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(t.input[1]!.parts[0]).toEqual({
      type: 'tool_call',
      id: 'c1',
      name: 'get_weather',
      arguments: { city: 'Paris' },
    });
    expect(t.input[2]!.parts[0]).toEqual({ type: 'tool_call_response', id: 'c1', response: { tempC: 18 } });
    expect(t.output).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: '18°C and sunny.' }], finishReason: 'stop' },
    ]);
  });

  it('accepts already-structured arrays (kvlist/array attribute values)', () => {
    const t = extractChatMessages({
      name: 'chat',
      attributes: { 'gen_ai.input.messages': [{ role: 'user', parts: [{ type: 'text', content: 'hi' }] }] },
    });
    expect(messageText(t.input[0]!)).toBe('hi');
  });

  it('reads legacy gen_ai.prompt / gen_ai.completion, plain or indexed', () => {
    const plain = extractChatMessages({
      name: 'c',
      attributes: { 'gen_ai.prompt': 'Hello?', 'gen_ai.completion': 'Hi!' },
    });
    expect(plain.input).toEqual([{ role: 'user', parts: [{ type: 'text', content: 'Hello?' }] }]);
    expect(plain.output).toEqual([{ role: 'assistant', parts: [{ type: 'text', content: 'Hi!' }] }]);
    expect(plain.inputSource).toBe('legacy-attributes');
    const indexed = extractChatMessages({
      name: 'c',
      attributes: {
        'gen_ai.prompt.0.role': 'system',
        'gen_ai.prompt.0.content': 'sys',
        'gen_ai.prompt.1.role': 'user',
        'gen_ai.prompt.1.content': 'q',
        'gen_ai.completion.0.role': 'assistant',
        'gen_ai.completion.0.content': 'a',
        'gen_ai.completion.0.finish_reason': 'stop',
      },
    });
    expect(indexed.input.map((m) => `${m.role}:${messageText(m)}`)).toEqual(['system:sys', 'user:q']);
    expect(indexed.output[0]!.finishReason).toBe('stop');
  });

  it('reads per-message span events (Strands / 2024 semconv)', () => {
    const events: SpanEventRecord[] = [
      { name: 'gen_ai.system.message', timeUnixNano: 1, attributes: { content: '[{"text":"sys"}]' } },
      {
        name: 'gen_ai.user.message',
        timeUnixNano: 2,
        attributes: { content: '[{"text":"What is the weather?"}]' },
      },
      {
        name: 'gen_ai.assistant.message',
        timeUnixNano: 3,
        attributes: {
          content: JSON.stringify([
            { toolUse: { toolUseId: 't1', name: 'weather', input: { city: 'Oslo' } } },
          ]),
        },
      },
      {
        name: 'gen_ai.choice',
        timeUnixNano: 4,
        attributes: { message: '[{"text":"Cold."}]', finish_reason: 'end_turn' },
      },
    ];
    const t = extractChatMessages({ name: 'chat', attributes: {}, events });
    expect(t.inputSource).toBe('events');
    expect(t.system.map(messageText)).toEqual(['sys']);
    expect(t.input.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(t.input[1]!.parts[0]).toEqual({
      type: 'tool_call',
      id: 't1',
      name: 'weather',
      arguments: { city: 'Oslo' },
    });
    expect(t.output).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'Cold.' }], finishReason: 'end_turn' },
    ]);
  });

  it('reads the operation-details event and log records', () => {
    const details = extractChatMessages({
      name: 'chat',
      attributes: {},
      events: [
        {
          name: 'gen_ai.client.inference.operation.details',
          timeUnixNano: 1,
          attributes: {
            'gen_ai.input.messages': [{ role: 'user', parts: [{ type: 'text', content: 'q' }] }],
          },
        },
      ],
    });
    expect(details.inputSource).toBe('details-event');
    const log = (eventName: string, body: LogRecord['body']): LogRecord => ({
      resource: { attributes: {} },
      scope: { name: 'x' },
      timeUnixNano: 1,
      observedTimeUnixNano: 1,
      severityNumber: 9,
      body,
      attributes: {},
      eventName,
    });
    const fromLogs = extractChatMessages({ name: 'chat', attributes: {} }, [
      log('gen_ai.user.message', { content: 'from a log' }),
      log('gen_ai.choice', {
        index: 0,
        finish_reason: 'stop',
        message: { role: 'assistant', content: 'answer' },
      }),
    ]);
    expect(fromLogs.inputSource).toBe('logs');
    expect(fromLogs.input.map(messageText)).toEqual(['from a log']);
    expect(fromLogs.output).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'answer' }], finishReason: 'stop' },
    ]);
  });

  it('reads OpenAI-style messages with tool_calls and never throws on junk', () => {
    const [assistant, tool] = normalizeMessages(
      [
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'x', function: { name: 'f', arguments: '{"a":1}' } }],
        },
        { role: 'tool', tool_call_id: 'x', content: '{"ok":true}' },
      ],
      'user',
    );
    expect(assistant!.parts).toEqual([{ type: 'tool_call', id: 'x', name: 'f', arguments: { a: 1 } }]);
    expect(tool!.parts).toEqual([{ type: 'tool_call_response', id: 'x', response: { ok: true } }]);
    expect(normalizeMessages('{not json', 'user')).toEqual([
      { role: 'user', parts: [{ type: 'text', content: '{not json' }] },
    ]);
    expect(normalizeMessages([42, null, 'text'], 'user')).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'text' }] },
    ]);
    expect(extractChatMessages({ name: 'x', attributes: { 'gen_ai.input.messages': 7 } }).input).toEqual([]);
  });
});

describe('toolCallOf', () => {
  it('returns name, id and parsed arguments / result', () => {
    expect(
      toolCallOf({
        name: 'execute_tool get_weather',
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.call.id': 'c1',
          'gen_ai.tool.call.arguments': '{"city":"Paris"}',
          'gen_ai.tool.call.result': '{"tempC":18}',
        },
      }),
    ).toEqual({ name: 'get_weather', callId: 'c1', arguments: { city: 'Paris' }, result: { tempC: 18 } });
    expect(toolCallOf({ name: 'GET /', attributes: {} })).toEqual({});
  });
  it('keeps non-JSON strings as text', () => {
    expect(parseMaybeJson('sunny')).toBe('sunny');
    expect(parseMaybeJson('[1,2')).toBe('[1,2');
    expect(parseMaybeJson(' {"a":1} ')).toEqual({ a: 1 });
  });
});
