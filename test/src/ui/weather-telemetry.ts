/**
 * Sends weather-agent traces the way a real agent does: the OTel SDK with the OTLP/HTTP exporter,
 * spans invoke_agent → chat → execute_tool → chat carrying GenAI attributes and a session id.
 */
import { context, trace, type Span, type Tracer } from '@opentelemetry/api';
import { SeverityNumber, type Logger } from '@opentelemetry/api-logs';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

export interface Telemetry {
  tracer: Tracer;
  logger: Logger;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

export function createTelemetry(collectorUrl: string, serviceName = 'weather-agent'): Telemetry {
  const resource = resourceFromAttributes({ 'service.name': serviceName });
  const traces = new BasicTracerProvider({
    resource,
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${collectorUrl}/v1/traces` }))],
  });
  const logs = new LoggerProvider({
    resource,
    processors: [new SimpleLogRecordProcessor(new OTLPLogExporter({ url: `${collectorUrl}/v1/logs` }))],
  });
  return {
    tracer: traces.getTracer('agentrt-ui-test', '1.0.0'),
    logger: logs.getLogger('agentrt-ui-test', '1.0.0'),
    flush: async () => {
      await Promise.all([traces.forceFlush(), logs.forceFlush()]);
    },
    shutdown: async () => {
      await Promise.all([traces.shutdown(), logs.shutdown()]);
    },
  };
}

export const MODEL = 'us.anthropic.claude-sonnet-4';

/** Millisecond offsets of each step from the turn's start, so tests can check the waterfall. */
export const TURN_LAYOUT = {
  agent: [0, 1400],
  chat1: [50, 650],
  tool: [700, 900],
  chat2: [950, 1350],
} as const;

export interface Turn {
  sessionId: string;
  city: string;
  startMs: number;
}

export const promptOf = (city: string): string => `What's the weather in ${city} today?`;
export const weatherLogLine = (city: string): string => `weather API answered for ${city}: 18°C, sunny`;
export const answerOf = (city: string): string => `It is 18°C and sunny in ${city}, with a light breeze.`;

const json = (v: unknown): string => JSON.stringify(v);

function child(
  tracer: Tracer,
  parent: Span,
  name: string,
  startMs: number,
  attributes: Record<string, string | number | string[]>,
): Span {
  return tracer.startSpan(name, { startTime: startMs, attributes }, trace.setSpan(context.active(), parent));
}

/** One conversational turn; returns its trace id. Spans end (and export) in the real order. */
export function sendWeatherTurn({ tracer, logger }: Telemetry, { sessionId, city, startMs }: Turn): string {
  const at = (ms: number): number => startMs + ms;
  const L = TURN_LAYOUT;
  const user = { role: 'user', parts: [{ type: 'text', content: promptOf(city) }] };
  const toolCall = { type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: { city } };
  const agent = tracer.startSpan('invoke_agent weather', {
    startTime: at(L.agent[0]),
    attributes: {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'weather',
      'gen_ai.provider.name': 'aws.bedrock',
      'gen_ai.request.model': MODEL,
      'session.id': sessionId,
      'gen_ai.conversation.id': sessionId,
      'gen_ai.input.messages': json([user]),
    },
  });
  const chat1 = child(tracer, agent, `chat ${MODEL}`, at(L.chat1[0]), {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'aws.bedrock',
    'gen_ai.request.model': MODEL,
    'session.id': sessionId,
    'gen_ai.system_instructions': json([
      { type: 'text', content: 'You are a weather assistant. Use the tools.' },
    ]),
    'gen_ai.input.messages': json([user]),
    'gen_ai.output.messages': json([{ role: 'assistant', parts: [toolCall], finish_reason: 'tool_use' }]),
    'gen_ai.response.finish_reasons': ['tool_use'],
    'gen_ai.usage.input_tokens': 120,
    'gen_ai.usage.output_tokens': 18,
  });
  chat1.end(at(L.chat1[1]));
  const tool = child(tracer, agent, 'execute_tool get_weather', at(L.tool[0]), {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': 'get_weather',
    'gen_ai.tool.call.id': 'call_1',
    'gen_ai.tool.type': 'function',
    'session.id': sessionId,
    'gen_ai.tool.call.arguments': json({ city }),
    'gen_ai.tool.call.result': json({ city, temperatureC: 18, condition: 'sunny', windKph: 9 }),
  });
  // The tool's own log line, joined to its span by trace and span id.
  logger.emit({
    timestamp: at(L.tool[0] + 120),
    severityNumber: SeverityNumber.INFO,
    severityText: 'INFO',
    body: weatherLogLine(city),
    attributes: { 'tool.name': 'get_weather' },
    context: trace.setSpan(context.active(), tool),
  });
  tool.end(at(L.tool[1]));
  const chat2 = child(tracer, agent, `chat ${MODEL}`, at(L.chat2[0]), {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'aws.bedrock',
    'gen_ai.request.model': MODEL,
    'session.id': sessionId,
    'gen_ai.input.messages': json([
      user,
      { role: 'assistant', parts: [toolCall] },
      {
        role: 'tool',
        parts: [
          { type: 'tool_call_response', id: 'call_1', response: { temperatureC: 18, condition: 'sunny' } },
        ],
      },
    ]),
    'gen_ai.output.messages': json([
      { role: 'assistant', parts: [{ type: 'text', content: answerOf(city) }], finish_reason: 'end_turn' },
    ]),
    'gen_ai.response.finish_reasons': ['end_turn'],
    'gen_ai.usage.input_tokens': 180,
    'gen_ai.usage.output_tokens': 22,
  });
  chat2.end(at(L.chat2[1]));
  // The agent reports the sum of its model calls: the roll-up must not count it twice.
  agent.setAttributes({
    'gen_ai.output.messages': json([
      { role: 'assistant', parts: [{ type: 'text', content: answerOf(city) }] },
    ]),
    'gen_ai.usage.input_tokens': 300,
    'gen_ai.usage.output_tokens': 40,
  });
  agent.end(at(L.agent[1]));
  return agent.spanContext().traceId;
}
