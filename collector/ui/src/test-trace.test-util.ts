/** A weather-agent trace fixture for the UI's unit tests (not bundled: only tests import it). */
import type { Attributes, SpanRecord } from '../../src/wire-types.js';
import { toSpanView, traceFromSpans } from './convert.js';
import type { TraceView } from './view-types.js';

const MS = 1e6;
const T0 = 1_763_700_000_000 * MS;

function span(
  id: string,
  parent: string | undefined,
  name: string,
  startMs: number,
  endMs: number,
  attributes: Attributes,
): SpanRecord {
  const s: SpanRecord = {
    resource: { attributes: { 'service.name': 'weather-agent' } },
    scope: { name: 'test' },
    traceId: 'f'.repeat(32),
    spanId: id,
    name,
    kind: 'INTERNAL',
    startTimeUnixNano: T0 + startMs * MS,
    endTimeUnixNano: T0 + endMs * MS,
    durationNano: (endMs - startMs) * MS,
    attributes,
    status: { code: 'UNSET' },
    events: [],
    links: [],
  };
  if (parent) s.parentSpanId = parent;
  return s;
}

export interface WeatherTraceOptions {
  city?: string;
  toolMs?: number;
  extraTool?: boolean;
}

/** invoke_agent → chat → execute_tool get_weather (→ execute_tool get_time) → chat. */
export function weatherTrace({
  city = 'Paris',
  toolMs = 30,
  extraTool = false,
}: WeatherTraceOptions = {}): TraceView {
  const question = `What is the weather in ${city}?`;
  const answer = `It is 18°C and sunny in ${city}.`;
  const toolEnd = 50 + toolMs;
  const spans = [
    span('a0', undefined, 'invoke_agent weather', 0, toolEnd + (extraTool ? 20 : 0) + 60, {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'weather',
      'session.id': 's1',
      'gen_ai.input.messages': JSON.stringify([
        { role: 'user', parts: [{ type: 'text', content: question }] },
      ]),
      'gen_ai.output.messages': JSON.stringify([
        { role: 'assistant', parts: [{ type: 'text', content: answer }] },
      ]),
      'gen_ai.usage.input_tokens': 300,
      'gen_ai.usage.output_tokens': 40,
    }),
    span('c1', 'a0', 'chat model-x', 5, 45, {
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'model-x',
      'gen_ai.usage.input_tokens': 100,
      'gen_ai.usage.output_tokens': 15,
    }),
    span('t1', 'a0', 'execute_tool get_weather', 50, toolEnd, {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'get_weather',
      'gen_ai.tool.call.arguments': JSON.stringify({ city }),
      'gen_ai.tool.call.result': JSON.stringify({ tempC: 18 }),
    }),
    ...(extraTool
      ? [
          span('t2', 'a0', 'execute_tool get_time', toolEnd, toolEnd + 20, {
            'gen_ai.operation.name': 'execute_tool',
            'gen_ai.tool.name': 'get_time',
          }),
        ]
      : []),
    span(
      'c2',
      'a0',
      'chat model-x',
      toolEnd + (extraTool ? 20 : 0) + 5,
      toolEnd + (extraTool ? 20 : 0) + 55,
      {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'model-x',
        'gen_ai.usage.input_tokens': 200,
        'gen_ai.usage.output_tokens': 25,
        'gen_ai.output.messages': JSON.stringify([
          { role: 'assistant', parts: [{ type: 'text', content: answer }] },
        ]),
      },
    ),
  ];
  const views = spans.map((s) => toSpanView(s));
  return traceFromSpans(
    {
      traceId: 'f'.repeat(32),
      rootName: 'invoke_agent weather',
      service: 'weather-agent',
      startMs: T0 / MS,
      durationMs: views[0]!.durationMs,
      spanCount: spans.length,
      errorCount: 0,
      tokens: { input: 300, output: 40, total: 340 },
      inProgress: false,
    },
    views,
  );
}
