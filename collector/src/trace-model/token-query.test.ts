import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Collector } from '../http/collector.js';
import { hex, jsonRequest, jsonSpan, postJson, startCollector } from '../testing.test-util.js';
import type { QueryResponse, SessionResponse, TraceResponse } from '../wire-types.js';

// The token query the collector README documents. Agent spans (invoke_agent) carry the sum of their
// model calls and the model-call spans (chat) their own usage: summing every span counts twice.
const DOCUMENTED =
  'filter attributes.gen_ai.operation.name = "chat" | stats sum(attributes.gen_ai.usage.input_tokens) as input, sum(attributes.gen_ai.usage.output_tokens) as output by attributes.gen_ai.request.model as model | sort model';

describe('the documented token query agrees with the trace and session roll-ups', () => {
  let c: Collector & { cleanup: () => Promise<void> };
  const trace = hex(77, 16);
  beforeAll(async () => {
    c = await startCollector();
    const now = Date.now() - 10_000;
    const usage = (model: string, input: number, output: number) => ({
      'gen_ai.request.model': model,
      'gen_ai.usage.input_tokens': input,
      'gen_ai.usage.output_tokens': output,
      'session.id': 'token-session',
    });
    const res = await postJson(
      `${c.url}/v1/traces`,
      jsonRequest('agent', [
        jsonSpan({
          traceId: trace,
          spanId: hex(1, 8),
          name: 'invoke_agent weather',
          startMs: now,
          durationMs: 100,
          attributes: { ...usage('claude', 30, 12), 'gen_ai.operation.name': 'invoke_agent' },
        }),
        jsonSpan({
          traceId: trace,
          spanId: hex(2, 8),
          parentSpanId: hex(1, 8),
          name: 'chat claude',
          startMs: now + 1,
          durationMs: 40,
          attributes: { ...usage('claude', 10, 5), 'gen_ai.operation.name': 'chat' },
        }),
        jsonSpan({
          traceId: trace,
          spanId: hex(3, 8),
          parentSpanId: hex(1, 8),
          name: 'chat claude',
          startMs: now + 50,
          durationMs: 40,
          attributes: { ...usage('claude', 20, 7), 'gen_ai.operation.name': 'chat' },
        }),
      ]),
    );
    expect(res.status).toBe(200);
  });
  afterAll(() => c?.cleanup());

  it('counts each token once in the documented query, the trace summary and the session', async () => {
    const q = (await (await postJson(`${c.url}/api/query`, { query: DOCUMENTED })).json()) as QueryResponse;
    expect(q.rows).toEqual([{ model: 'claude', input: 30, output: 12 }]);
    const t = (await (await fetch(`${c.url}/api/traces/${trace}`)).json()) as TraceResponse;
    expect(t.summary.tokens).toEqual({ input: 30, output: 12, total: 42 });
    const s = (await (await fetch(`${c.url}/api/sessions/token-session`)).json()) as SessionResponse;
    expect(s.session.tokens).toEqual({ input: 30, output: 12, total: 42 });
    // Summing every span instead double counts: what the documentation warns about.
    const naive = (await (
      await postJson(`${c.url}/api/query`, {
        query: 'stats sum(attributes.gen_ai.usage.input_tokens) as input',
      })
    ).json()) as QueryResponse;
    expect(naive.rows).toEqual([{ input: 60 }]);
  });
});
