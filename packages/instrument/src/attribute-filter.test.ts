import { describe, expect, it } from 'vitest';
import { REDACTED, createAttributeFilter, createKeyMatcher } from './attribute-filter.js';

describe('createKeyMatcher', () => {
  it('matches exact keys and * wildcards, case-insensitively', () => {
    const m = createKeyMatcher(['user.email', 'http.*.header.*token*', 'a.b']);
    expect(m('User.Email')).toBe(true);
    expect(m('http.request.header.x-auth-token')).toBe(true);
    expect(m('gen_ai.usage.input_tokens')).toBe(false);
    expect(m('aXb')).toBe(false); // the dot is literal
  });
});

describe('createAttributeFilter', () => {
  const attrs = () => ({
    'gen_ai.operation.name': 'chat',
    'gen_ai.input.messages': '[...]',
    'gen_ai.prompt.0.content': 'hi',
    'gen_ai.usage.input_tokens': 12,
    'http.request.header.authorization': ['Bearer x'],
    'http.response.header.set-cookie': ['a=b'],
    'http.request.header.x-api-key': ['k'],
    'user.email': 'a@b.c',
  });

  it('drops content and redacts secrets by default, keeping everything else', () => {
    const filter = createAttributeFilter({ captureMessageContent: false, redactAttributes: ['user.email'] });
    const a: Record<string, unknown> = attrs();
    expect(filter.apply(a)).toBe(true);
    expect(a).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.usage.input_tokens': 12,
      'http.request.header.authorization': REDACTED,
      'http.response.header.set-cookie': REDACTED,
      'http.request.header.x-api-key': REDACTED,
      'user.email': REDACTED,
    });
    expect(filter.dropsEvent('gen_ai.user.message')).toBe(true);
    expect(filter.dropsEvent('exception')).toBe(false);
  });

  it('keeps content when capture is on, but still redacts secrets', () => {
    const filter = createAttributeFilter({ captureMessageContent: true, redactAttributes: [] });
    const a: Record<string, unknown> = attrs();
    filter.apply(a);
    expect(a['gen_ai.input.messages']).toBe('[...]');
    expect(a['user.email']).toBe('a@b.c');
    expect(a['http.request.header.authorization']).toBe(REDACTED);
    expect(filter.dropsEvent('gen_ai.choice')).toBe(false);
  });

  it('reports no change for clean attributes', () => {
    const filter = createAttributeFilter({ captureMessageContent: false, redactAttributes: [] });
    expect(filter.apply({ 'http.request.method': 'GET' })).toBe(false);
  });
});
