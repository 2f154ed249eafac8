/**
 * Span records of weather-agent sessions as the collector stores them (an `invoke_agent` span per
 * turn with its messages, `chat` model calls and `execute_tool` calls), deterministic ids and
 * times. For the evaluation tests; not part of the package.
 */
import type { SpanRecord } from '@agentrt/collector';

export interface TurnSpec {
  question: string;
  /** Tool names called in this order; `!name` marks a failed call. */
  tools: string[];
  answer: string;
}

const hex = (n: number, bytes: number): string => n.toString(16).padStart(bytes * 2, '0');
/** An hour ago, whole seconds: inside any retention window. */
const T0 = (Math.floor(Date.now() / 1000) - 3600) * 1e9;

function span(fields: Partial<SpanRecord> & Pick<SpanRecord, 'traceId' | 'spanId' | 'name'>): SpanRecord {
  return {
    resource: { attributes: { 'service.name': 'weather' } },
    scope: { name: 'agentrt.genai' },
    kind: 'INTERNAL',
    startTimeUnixNano: T0,
    endTimeUnixNano: T0 + 1_000_000,
    durationNano: 1_000_000,
    attributes: {},
    status: { code: 'OK' },
    events: [],
    links: [],
    ...fields,
  };
}

/** One session: `seed` keeps ids apart between sessions. */
export function weatherSession(sessionId: string, turns: readonly TurnSpec[], seed = 1): SpanRecord[] {
  const out: SpanRecord[] = [];
  turns.forEach((turn, t) => {
    const traceId = hex(seed * 1000 + t + 1, 16);
    // Within the last hour whatever the seed: a session in the future would never count as complete.
    const start = T0 + ((seed % 30) * 100 + t) * 1_000_000_000;
    const agentId = hex(seed * 100_000 + t * 100 + 1, 8);
    const common = { 'session.id': sessionId, 'gen_ai.conversation.id': sessionId };
    out.push(
      span({
        traceId,
        spanId: agentId,
        name: 'invoke_agent weather',
        startTimeUnixNano: start,
        endTimeUnixNano: start + 900_000_000,
        attributes: {
          ...common,
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': 'weather',
          'gen_ai.input.messages': JSON.stringify([
            { role: 'user', parts: [{ type: 'text', content: turn.question }] },
          ]),
          'gen_ai.output.messages': JSON.stringify([
            { role: 'assistant', parts: [{ type: 'text', content: turn.answer }] },
          ]),
        },
      }),
    );
    turn.tools.forEach((raw, i) => {
      const failed = raw.startsWith('!');
      const name = failed ? raw.slice(1) : raw;
      out.push(
        span({
          traceId,
          spanId: hex(seed * 100_000 + t * 100 + 10 + i, 8),
          parentSpanId: agentId,
          name: `execute_tool ${name}`,
          startTimeUnixNano: start + (i + 1) * 100_000_000,
          attributes: {
            ...common,
            'gen_ai.operation.name': 'execute_tool',
            'gen_ai.tool.name': name,
            'gen_ai.tool.call.arguments': JSON.stringify({ url: `https://api.weather.gov/points/${i}` }),
            'gen_ai.tool.call.result': failed ? 'HTTP 503' : JSON.stringify({ temperature: 70 + i }),
          },
          status: failed ? { code: 'ERROR', message: 'HTTP 503' } : { code: 'OK' },
        }),
      );
    });
    out.push(
      span({
        traceId,
        spanId: hex(seed * 100_000 + t * 100 + 90, 8),
        parentSpanId: agentId,
        name: 'chat offline',
        startTimeUnixNano: start + 800_000_000,
        attributes: { ...common, 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'offline' },
      }),
    );
  });
  return out;
}

/** The question and tools of the reference weather run. */
export const FORECAST_TURN: TurnSpec = {
  question: 'What is the weather in Seattle?',
  tools: ['http_request', 'http_request', 'ready_to_summarize'],
  answer: 'Seattle: 72°F and sunny today, showers tomorrow.',
};

/** A follow-up turn whose second tool call failed. */
export const FAILED_TOOL_TURN: TurnSpec = {
  question: 'And Portland?',
  tools: ['http_request', '!http_request'],
  answer: 'Portland: 68°F.',
};
