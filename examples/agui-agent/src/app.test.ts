// The AG-UI agent's input checks and its event stream over real HTTP (the offline model).
import type { AddressInfo } from 'node:net';
import { createLogger } from '@agentrt/example-models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAguiAgentServer, readRunInput, ValidationError } from './app.js';

describe('readRunInput', () => {
  it('takes the ids and the last user message of a RunAgentInput', () => {
    expect(
      readRunInput({
        threadId: 't',
        runId: 'r',
        messages: [
          { id: '1', role: 'user', content: 'first' },
          { id: '2', role: 'assistant', content: 'answer' },
          { id: '3', role: 'user', content: 'second' },
        ],
      }),
    ).toEqual({ threadId: 't', runId: 'r', prompt: 'second' });
  });

  it('names the field of a malformed or hostile input', () => {
    const cases: [unknown, RegExp][] = [
      [null, /RunAgentInput object/],
      [[], /RunAgentInput object/],
      [{ runId: 'r', messages: [] }, /threadId/],
      [{ threadId: 't', runId: 7, messages: [] }, /runId/],
      [{ threadId: 't', runId: 'r', messages: {} }, /messages must be an array/],
      [{ threadId: 't', runId: 'r', messages: [{ role: 'assistant', content: 'x' }] }, /role "user"/],
      [{ threadId: 't', runId: 'r', messages: [{ role: 'user', content: { __proto__: 1 } }] }, /content/],
      [{ threadId: 't', runId: 'r', messages: [null, 1, 'x', { role: 'user', content: '  ' }] }, /content/],
    ];
    for (const [body, message] of cases) expect(() => readRunInput(body)).toThrow(message);
    expect(() => readRunInput(null)).toThrow(ValidationError);
  });
});

describe('the AG-UI agent over HTTP', () => {
  let url: string;
  // Bad input never reaches the model.
  const server = createAguiAgentServer({
    weatherApi: {} as never,
    captureContent: false,
    model: {} as never,
    logger: createLogger({ name: 'test', level: 'error', write: () => undefined }),
    maxBodyBytes: 10_000,
  });
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('answers a bad input with one RUN_ERROR event (VALIDATION_ERROR, 400), an oversized one too', async () => {
    for (const body of ['{"threadId":"t"}', 'not json', JSON.stringify({ big: 'x'.repeat(20_000) })]) {
      const res = await fetch(`${url}/invocations`, {
        method: 'POST',
        body,
        headers: { accept: 'text/event-stream' },
      });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toBe('text/event-stream');
      const event = JSON.parse((await res.text()).replace(/^data: /, '')) as { type: string; code: string };
      expect(event).toMatchObject({ type: 'RUN_ERROR', code: 'VALIDATION_ERROR' });
    }
    expect((await fetch(`${url}/ping`)).status).toBe(200);
    expect((await fetch(`${url}/invocations`)).status).toBe(405);
    expect((await fetch(`${url}/other`)).status).toBe(404);
  });
});
