import {
  type AgentRunOptions,
  type AnswerMetadata,
  type ModelSelection,
  type WeatherApiConfig,
  runWeatherAgent,
  textDelta,
} from '@agentrt/example-models';
import { AgentError, type Entrypoint, type RequestContext } from '@agentrt/server';

/** The text used when the payload has no `prompt` (as in the seed's SDK example). */
export const DEFAULT_PROMPT =
  'No prompt found in input, please guide the customer to send a JSON payload with a "prompt" key.';

export interface SdkEntrypointOptions {
  readonly model: ModelSelection;
  readonly weatherApi: WeatherApiConfig;
  readonly captureContent: boolean;
}

/** The payload this agent reads. */
export interface SdkPayload {
  readonly prompt?: unknown;
  /** `true` streams events instead of returning one result. */
  readonly stream?: unknown;
}

/** The non-streaming answer. */
export interface SdkResult {
  readonly result: string;
  readonly metadata: AnswerMetadata;
}

/** One streamed event (one SSE `data:` frame). Text chunks carry `data`, as the seed's stream items do. */
export type SdkEvent =
  | { readonly type: 'text'; readonly data: string }
  | { readonly type: 'tool_call'; readonly name: string; readonly input: unknown }
  | { readonly type: 'tool_result'; readonly name: string; readonly status: string }
  | { readonly type: 'done'; readonly result: string; readonly metadata: AnswerMetadata };

function readPayload(payload: unknown): { prompt: string; stream: boolean } {
  if (payload === undefined || payload === null) return { prompt: DEFAULT_PROMPT, stream: false };
  if (typeof payload !== 'object' || Array.isArray(payload)) {
    throw new AgentError(
      400,
      'The payload must be a JSON object, e.g. {"prompt": "What is the weather in Seattle?"}',
      {
        code: 'invalid_payload',
      },
    );
  }
  const { prompt, stream } = payload as SdkPayload;
  if (prompt !== undefined && prompt !== null && typeof prompt !== 'string') {
    throw new AgentError(
      400,
      `prompt must be a string, got ${Array.isArray(prompt) ? 'array' : typeof prompt}`,
      {
        code: 'invalid_prompt',
      },
    );
  }
  if (stream !== undefined && typeof stream !== 'boolean') {
    throw new AgentError(400, `stream must be a boolean, got ${typeof stream}`, { code: 'invalid_stream' });
  }
  return { prompt: prompt?.trim() ? prompt : DEFAULT_PROMPT, stream: stream === true };
}

async function* streamEvents(prompt: string, options: AgentRunOptions): AsyncGenerator<SdkEvent> {
  const run = runWeatherAgent(prompt, options);
  try {
    for (;;) {
      const step = await run.next();
      if (step.done) {
        yield { type: 'done', result: step.value.text, metadata: step.value.metadata };
        return;
      }
      const event = step.value;
      const text = textDelta(event);
      if (text) yield { type: 'text', data: text };
      else if (event.type === 'beforeToolCallEvent')
        yield { type: 'tool_call', name: event.toolUse.name, input: event.toolUse.input };
      else if (event.type === 'afterToolCallEvent')
        yield { type: 'tool_result', name: event.toolUse.name, status: event.result.status };
    }
  } finally {
    await run.return(undefined as never); // the client went away: stop the agent and end its spans
  }
}

/**
 * The SDK-integration entrypoint: reads `prompt` (a default text when absent) and answers with a
 * fresh Strands agent; with `"stream": true` it is an async generator, which `@agentrt/server`
 * streams as SSE (text deltas, tool calls and results, then a `done` event).
 */
export function createSdkEntrypoint(options: SdkEntrypointOptions): Entrypoint {
  return (payload: unknown, context: RequestContext) => {
    const { prompt, stream } = readPayload(payload);
    const runOptions: AgentRunOptions = {
      model: options.model,
      weatherApi: options.weatherApi,
      captureContent: options.captureContent,
      agentName: 'sdk_agent',
      signal: context.signal,
      ...(context.sessionId ? { sessionId: context.sessionId } : {}),
    };
    if (stream) return streamEvents(prompt, runOptions);
    return (async (): Promise<SdkResult> => {
      const run = runWeatherAgent(prompt, runOptions);
      for (;;) {
        const step = await run.next();
        if (step.done) return { result: step.value.text, metadata: step.value.metadata };
      }
    })();
  };
}
