import { Agent, type AgentResult, type AgentStreamEvent, type Tool } from '@strands-agents/sdk';
import type { WeatherApiConfig } from './config.js';
import { type ConversationStore, processConversations } from './conversations.js';
import { traceAgentRun } from './genai-telemetry.js';
import type { ModelSelection } from './providers.js';
import { skipUnrecordedStrandsSpanWork } from './strands-telemetry.js';
import { createHttpRequestTool, createReadyToSummarizeTool } from './tools.js';

/** The weather assistant's instructions (the Strands weather pattern, pointed at the configured API). */
export function weatherSystemPrompt(baseUrl: string, streaming: boolean): string {
  const lines = [
    'You are a weather assistant with HTTP capabilities. You can:',
    '1. Make HTTP requests to the National Weather Service API',
    '2. Process and display weather forecast data',
    '3. Provide weather information for locations in the United States',
    '',
    'When retrieving weather information:',
    `1. First get the grid information using ${baseUrl}/points/{latitude},{longitude} or ${baseUrl}/zipcodes/{zipcode}`,
    '2. Then use the returned forecast URL to get the actual forecast',
    '',
    'When displaying responses:',
    '- Format weather data in a human-readable way',
    '- Highlight important information like temperature, precipitation, and alerts',
    '- Handle errors appropriately',
    "- Don't ask follow-up questions",
    '',
    'Always explain the weather conditions clearly and provide context for the forecast.',
  ];
  if (streaming) {
    lines.push(
      '',
      'At the point where tools are done being invoked and a summary can be presented to the user, ' +
        'invoke the ready_to_summarize tool and then continue with the summary.',
    );
  }
  return lines.join('\n');
}

export interface AgentRunOptions {
  readonly model: ModelSelection;
  readonly weatherApi: WeatherApiConfig;
  /** Record content on spans (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`). */
  readonly captureContent: boolean;
  /** `gen_ai.agent.name` (default `weather`). */
  readonly agentName?: string;
  /**
   * Session id for the spans (taken from baggage `session.id` when not given) and the conversation
   * the agent continues: with it, earlier turns of the session are the model's history.
   */
  readonly sessionId?: string;
  /** Where the turns of each session are kept (default: this process's). */
  readonly conversations?: ConversationStore;
  /** Fires when the client goes away: the agent stops at its next step. */
  readonly signal?: AbortSignal;
}

/** What the answer metadata says about the run (`offline: true` when the offline model answered). */
export interface AnswerMetadata {
  readonly provider: string;
  readonly modelId: string;
  readonly offline: boolean;
  readonly stopReason: string;
  readonly usage: {
    readonly inputTokens: number;
    readonly outputTokens: number;
    readonly totalTokens: number;
  };
}

export interface AgentAnswer {
  readonly text: string;
  readonly metadata: AnswerMetadata;
}

/** The text of a stream event when it is a model text delta, else undefined (one check, not three). */
export function textDelta(event: AgentStreamEvent): string | undefined {
  if (event.type !== 'modelStreamUpdateEvent') return undefined;
  const inner = event.event;
  if (inner.type !== 'modelContentBlockDeltaEvent' || inner.delta.type !== 'textDelta') return undefined;
  return inner.delta.text;
}

function answerOf(result: AgentResult, options: AgentRunOptions): AgentAnswer {
  const usage = result.metrics?.accumulatedUsage;
  return {
    text: result.toString().trim(),
    metadata: {
      provider: options.model.provider,
      modelId: options.model.modelId,
      offline: options.model.offline,
      stopReason: result.stopReason,
      usage: {
        inputTokens: usage?.inputTokens ?? 0,
        outputTokens: usage?.outputTokens ?? 0,
        totalTokens: usage?.totalTokens ?? 0,
      },
    },
  };
}

function buildAgent(options: AgentRunOptions, tools: Tool[], streaming: boolean): Agent {
  const conversations = options.conversations ?? processConversations;
  const agent = new Agent({
    name: options.agentName ?? 'weather',
    model: options.model.model,
    systemPrompt: weatherSystemPrompt(options.weatherApi.baseUrl, streaming),
    tools,
    printer: false,
    ...(options.sessionId ? { messages: conversations.history(options.sessionId) } : {}),
  });
  // its spans are suppressed in the run (the GenAI layer makes the convention's): skip their work
  skipUnrecordedStrandsSpanWork(agent);
  return agent;
}

/**
 * Runs a fresh weather agent on one prompt as a traced `invoke_agent` run, yielding every Strands
 * stream event and returning the answer.
 */
export async function* runWeatherAgent(
  prompt: string,
  options: AgentRunOptions & { readonly extraTools?: Tool[]; readonly streaming?: boolean },
): AsyncGenerator<AgentStreamEvent, AgentAnswer> {
  const tools: Tool[] = [createHttpRequestTool(options.weatherApi), ...(options.extraTools ?? [])];
  const agent = buildAgent(options, tools, options.streaming ?? false);
  const result = yield* traceAgentRun(
    {
      agentName: agent.name,
      agentId: agent.id,
      provider: options.model.genAiProvider,
      modelId: options.model.modelId,
      captureContent: options.captureContent,
      input: prompt,
      ...(options.sessionId ? { sessionId: options.sessionId } : {}),
      ...(options.model.serverAddress ? { serverAddress: options.model.serverAddress } : {}),
      ...(options.model.serverPort ? { serverPort: options.model.serverPort } : {}),
    },
    () => agent.stream(prompt, options.signal ? { cancelSignal: options.signal } : undefined),
    (r) => r.toString(),
  );
  const answer = answerOf(result, options);
  if (options.sessionId)
    (options.conversations ?? processConversations).record(options.sessionId, prompt, answer.text);
  return answer;
}

/** Asks a fresh weather agent and returns its final answer. */
export async function askWeatherAgent(prompt: string, options: AgentRunOptions): Promise<AgentAnswer> {
  const run = runWeatherAgent(prompt, options);
  for (;;) {
    const step = await run.next();
    if (step.done) return step.value;
  }
}

/**
 * The streaming weather pattern: the agent gets a `ready_to_summarize` tool; text produced before
 * it is called (tool chatter) is dropped, and every text chunk after it is yielded as it arrives.
 */
export async function* streamWeatherSummary(
  prompt: string,
  options: AgentRunOptions,
): AsyncGenerator<string, AgentAnswer> {
  let ready = false;
  const run = runWeatherAgent(prompt, {
    ...options,
    streaming: true,
    extraTools: [createReadyToSummarizeTool(() => (ready = true))],
  });
  try {
    for (;;) {
      const step = await run.next();
      if (step.done) return step.value;
      const text = ready ? textDelta(step.value) : undefined;
      if (text) yield text;
    }
  } finally {
    // Stopped early (the client went away): close the agent run so its spans end and it stops.
    await run.return(undefined as never);
  }
}
