import { describe, expect, it } from 'vitest';
import { createAnswerReader, loadSessions, newSessionId, newTraceparent } from './inspector-model.js';

const read = (type: string, chunks: string[]): string[] => {
  const r = createAnswerReader(type);
  return [...chunks.map((c) => r.push(c)), r.end()].filter(Boolean);
};

describe('the Inspector answer reader', () => {
  it('shows server-sent text deltas as they complete, across chunk boundaries, not the repeated result', () => {
    const sse = [
      'data: {"type":"text","data":"Let me "}\n\n',
      'data: {"type":"tool_call","name":"http_request","input":{}}\n\ndata: {"type":"te',
      'xt","data":"look."}\n\n',
      'data: {"type":"done","result":"Let me look."}\n\n',
    ];
    expect(read('text/event-stream; charset=utf-8', sse)).toEqual(['Let me ', '\n⚙ http_request\n', 'look.']);
  });
  it('reads plain data frames, a JSON answer by its result (else whole), and text as it comes', () => {
    expect(read('text/event-stream', ['data: hello\n\n', 'data: world'])).toEqual(['hello', 'world']);
    expect(read('application/json', ['{"result":', '"sunny"}'])).toEqual(['sunny']);
    expect(read('application/json', ['{"forecast":1}'])).toEqual(['{"forecast":1}']);
    expect(read('text/plain', ['a', 'b'])).toEqual(['a', 'b']);
  });
});

describe('Inspector sessions and trace context', () => {
  it('makes session ids the runtime takes and a sampled traceparent naming its trace', () => {
    expect(newSessionId().length).toBeGreaterThanOrEqual(33);
    const { traceId, header } = newTraceparent();
    expect(header).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  });
  it('reads stored sessions, and anything unreadable as none', () => {
    const stored = { sessions: [{ id: 'x', name: 'a', messages: [] }], activeId: 'x' };
    expect(loadSessions({ getItem: () => JSON.stringify(stored) }, 'k')).toEqual(stored);
    for (const junk of ['{', '42', '{"sessions":3}', null])
      expect(loadSessions({ getItem: () => junk }, 'k')).toEqual({ sessions: [] });
  });
});
