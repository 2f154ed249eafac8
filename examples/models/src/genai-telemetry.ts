/**
 * OpenTelemetry GenAI spans for Strands agents, done right.
 *
 * Strands 1.19 emits its own spans, but gets several things wrong (see the SDK landscape spec, 4.5):
 * every span is INTERNAL (inference must be CLIENT), the model span is named `chat` without the
 * model, `gen_ai.provider.name`/`gen_ai.system` carry the service name instead of the provider,
 * message content is always recorded with no switch, and there is no session or conversation id.
 * Span kinds cannot be changed through the API once a span exists, so instead of patching, this
 * layer runs the agent with Strands' tracing suppressed (its spans become non-recording) and emits
 * the convention's spans itself:
 *
 *   invoke_agent <agent>      INTERNAL  (around the whole run)
 *     chat <model>            CLIENT    (one per model call; wraps the provider, so its HTTP spans nest)
 *     execute_tool <tool>     INTERNAL  (one per tool call; the tool's own HTTP spans nest)
 *
 * Every span carries gen_ai.operation.name, gen_ai.provider.name (the real provider),
 * gen_ai.request.model, gen_ai.conversation.id and session.id; usage lands on chat and on
 * invoke_agent; content only when capture is on. Only `@opentelemetry/api` (and `core` for the
 * suppression flag) is used: with no SDK registered everything is a cheap no-op.
 */
import {
  type Attributes,
  type Context,
  ProxyTracerProvider,
  type Span,
  SpanKind,
  SpanStatusCode,
  context,
  createContextKey,
  propagation,
  trace,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { AsyncResource } from 'node:async_hooks';
import { suppressTracing, unsuppressTracing } from '@opentelemetry/core';
import { type Message, Model, type StreamOptions } from '@strands-agents/sdk';
import type { BaseModelConfig, ModelStreamEvent } from '@strands-agents/sdk';

export const GENAI_TRACER_NAME = '@agentrt/example-models';

/** `gen_ai.provider.name` values used here (the convention's registry values, plus our offline model). */
export type GenAiProviderName = 'aws.bedrock' | 'openai' | 'offline';

export interface GenAiRunOptions {
  readonly agentName: string;
  readonly agentId?: string;
  readonly provider: GenAiProviderName;
  readonly modelId: string;
  /** Session id; read from baggage `session.id` of the active context when not given. */
  readonly sessionId?: string;
  /** Record prompts, answers, system instructions and tool arguments/results. */
  readonly captureContent: boolean;
  readonly serverAddress?: string;
  readonly serverPort?: number;
}

interface GenAiRun extends GenAiRunOptions {
  /** Unsuppressed context holding the invoke_agent span: the parent of chat and execute_tool. */
  readonly agentContext: Context;
  readonly sessionId: string | undefined;
  usage: { input: number; output: number };
  finishReasons: string[];
}

const RUN_KEY = createContextKey('agentrt.genai.run');
/** The async resource type of {@link runnerIn}'s context holders (async_hooks `init` sees it). */
const RUNNER_RESOURCE = 'agentrt.genai.context';

let cachedTracer: { provider: TracerProvider; tracer: Tracer } | undefined;

/**
 * The GenAI tracer of the registered provider. `trace.getTracer` builds a key string and looks it
 * up through the global proxy on every call (six calls per agent request); this asks again only
 * when the registered provider changes.
 */
function tracer(): Tracer {
  const global = trace.getTracerProvider();
  const provider = global instanceof ProxyTracerProvider ? global.getDelegate() : global;
  if (cachedTracer?.provider !== provider) {
    cachedTracer = { provider, tracer: global.getTracer(GENAI_TRACER_NAME) };
  }
  return cachedTracer.tracer;
}

function currentRun(): GenAiRun | undefined {
  return context.active().getValue(RUN_KEY) as GenAiRun | undefined;
}

/** The session id in baggage (`session.id`), as the agentrt middleware and propagators place it. */
export function sessionIdFromContext(ctx: Context = context.active()): string | undefined {
  return propagation.getBaggage(ctx)?.getEntry('session.id')?.value;
}

function commonAttributes(
  run: GenAiRunOptions & { sessionId: string | undefined },
  operation: string,
): Attributes {
  const attributes: Attributes = {
    'gen_ai.operation.name': operation,
    'gen_ai.provider.name': run.provider,
    'gen_ai.request.model': run.modelId,
  };
  if (run.sessionId) {
    attributes['gen_ai.conversation.id'] = run.sessionId;
    attributes['session.id'] = run.sessionId;
  }
  return attributes;
}

function endWithError(span: Span, error: unknown): void {
  const err = error instanceof Error ? error : new Error(String(error));
  span.recordException(err);
  span.setAttribute('error.type', err.name || 'Error');
  span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
  span.end();
}

/** Runs callbacks with one context active: {@link runnerIn}. */
type Runner = <T>(fn: () => T) => T;

/**
 * A runner for `ctx`, for re-entering one context many times (every step of a streamed
 * generator). `context.with` copies Node's async context frame on every call; an AsyncResource
 * created once inside `ctx` holds that frame and re-enters it by swapping a pointer (33 ns a call
 * against 1.5 µs, hundreds of calls per agent run). Creating it costs about what one
 * `context.with` does; `AsyncLocalStorage.snapshot()` would do the same job but costs 5–8× more to
 * create (it also binds a function). The resource is used only if it really restores `ctx`: with a
 * context manager that is not built on AsyncLocalStorage each call goes through `context.with`.
 */
function runnerIn(ctx: Context): Runner {
  const resource = context.with(ctx, () => new AsyncResource(RUNNER_RESOURCE));
  if (resource.runInAsyncScope(() => context.active()) === ctx) return (fn) => resource.runInAsyncScope(fn);
  return (fn) => context.with(ctx, fn);
}

/** Runs one step of a generator in `runner`'s context, so everything it awaits inherits that context. */
function stepIn<T, R>(runner: Runner, gen: AsyncGenerator<T, R>, method: 'next' | 'return', value?: R) {
  return runner(() => (method === 'next' ? gen.next() : gen.return(value as R)));
}

/**
 * Iterates `start()`'s generator as one `invoke_agent <name>` run. Strands' own spans are
 * suppressed for the run; chat and tool spans come from {@link GenAiTracedModel} and
 * {@link traceToolCall}, which find the run through the OpenTelemetry context.
 */
export async function* traceAgentRun<T, R>(
  options: GenAiRunOptions & { readonly input?: string },
  start: () => AsyncGenerator<T, R>,
  finish?: (result: R) => string | undefined,
): AsyncGenerator<T, R> {
  const parent = context.active();
  const sessionId = options.sessionId ?? sessionIdFromContext(parent);
  const attributes = commonAttributes({ ...options, sessionId }, 'invoke_agent');
  attributes['gen_ai.agent.name'] = options.agentName;
  if (options.agentId) attributes['gen_ai.agent.id'] = options.agentId;
  if (options.captureContent && options.input !== undefined) {
    attributes['gen_ai.input.messages'] = JSON.stringify([
      { role: 'user', parts: [{ type: 'text', content: options.input }] },
    ]);
  }
  const span = tracer().startSpan(
    `invoke_agent ${options.agentName}`,
    { kind: SpanKind.INTERNAL, attributes },
    parent,
  );
  const agentContext = trace.setSpan(unsuppressTracing(parent), span);
  const run: GenAiRun = {
    ...options,
    sessionId,
    agentContext,
    usage: { input: 0, output: 0 },
    finishReasons: [],
  };
  const inStrands = runnerIn(suppressTracing(agentContext.setValue(RUN_KEY, run)));
  const gen = inStrands(start);
  let finished = false;
  try {
    for (;;) {
      const step = await stepIn(inStrands, gen, 'next');
      if (step.done) {
        finished = true;
        span.setAttributes({
          'gen_ai.usage.input_tokens': run.usage.input,
          'gen_ai.usage.output_tokens': run.usage.output,
        });
        if (run.finishReasons.length > 0)
          span.setAttribute('gen_ai.response.finish_reasons', [...run.finishReasons]);
        const output = options.captureContent && span.isRecording() ? finish?.(step.value) : undefined;
        if (output !== undefined) {
          span.setAttribute(
            'gen_ai.output.messages',
            JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: output }] }]),
          );
        }
        span.setStatus({ code: SpanStatusCode.OK });
        span.end();
        return step.value;
      }
      yield step.value;
    }
  } catch (error) {
    finished = true;
    endWithError(span, error);
    throw error;
  } finally {
    if (!finished) {
      // The consumer stopped early (client went away): close the agent's generator and the span.
      await stepIn(inStrands, gen, 'return').catch(() => undefined); // best effort; already cancelling
      span.setAttribute('error.type', 'cancelled');
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'cancelled before the agent finished' });
      span.end();
    }
  }
}

function mapStopReason(stopReason: string): string {
  switch (stopReason) {
    case 'endTurn':
      return 'stop';
    case 'toolUse':
      return 'tool_call';
    case 'maxTokens':
      return 'length';
    case 'contentFiltered':
    case 'guardrailIntervened':
      return 'content_filter';
    default:
      return stopReason;
  }
}

function messagesForContent(messages: readonly Message[]): string {
  return JSON.stringify(
    messages.map((m) => ({
      role: m.role,
      parts: (
        m.content as readonly {
          type: string;
          text?: string;
          name?: string;
          input?: unknown;
          toolUseId?: string;
          content?: unknown;
        }[]
      ).map((b) =>
        b.type === 'textBlock'
          ? { type: 'text', content: b.text }
          : b.type === 'toolUseBlock'
            ? { type: 'tool_call', id: b.toolUseId, name: b.name, arguments: b.input }
            : b.type === 'toolResultBlock'
              ? { type: 'tool_call_response', id: b.toolUseId, response: b.content }
              : { type: b.type },
      ),
    })),
  );
}

/**
 * Wraps a Strands model so that each call is one `chat <model>` CLIENT span with the real
 * provider, usage, finish reasons and time to first chunk. Outside a traced run it only delegates.
 */
export class GenAiTracedModel<C extends BaseModelConfig = BaseModelConfig> extends Model<C> {
  constructor(private readonly inner: Model<C>) {
    super();
  }

  override updateConfig(modelConfig: C): void {
    this.inner.updateConfig(modelConfig);
  }

  override getConfig(): C {
    return this.inner.getConfig();
  }

  override get stateful(): boolean {
    return this.inner.stateful;
  }

  override async *stream(messages: Message[], options?: StreamOptions): AsyncIterable<ModelStreamEvent> {
    const run = currentRun();
    if (!run) {
      yield* this.inner.stream(messages, options);
      return;
    }
    const modelId = this.inner.modelId ?? run.modelId;
    const attributes = commonAttributes({ ...run, modelId }, 'chat');
    attributes['gen_ai.request.stream'] = true;
    if (run.serverAddress) attributes['server.address'] = run.serverAddress;
    if (run.serverPort) attributes['server.port'] = run.serverPort;
    const span = tracer().startSpan(
      `chat ${modelId}`,
      { kind: SpanKind.CLIENT, attributes },
      run.agentContext,
    );
    const recordContent = run.captureContent && span.isRecording();
    if (recordContent) {
      span.setAttribute('gen_ai.input.messages', messagesForContent(messages));
      const system = options?.systemPrompt;
      if (system !== undefined) {
        const text = typeof system === 'string' ? system : JSON.stringify(system);
        span.setAttribute('gen_ai.system_instructions', JSON.stringify([{ type: 'text', content: text }]));
      }
    }
    const inSpan = runnerIn(trace.setSpan(run.agentContext, span));
    const startedMs = performance.now();
    const iterator = inSpan(() => this.inner.stream(messages, options)[Symbol.asyncIterator]());
    let outputText = '';
    let firstChunk = true;
    let ended = false;
    try {
      for (;;) {
        const step = await inSpan(() => iterator.next());
        if (step.done) break;
        const event = step.value;
        if (firstChunk && event.type === 'modelContentBlockDeltaEvent') {
          firstChunk = false;
          span.setAttribute('gen_ai.response.time_to_first_chunk', (performance.now() - startedMs) / 1000);
        }
        if (recordContent && event.type === 'modelContentBlockDeltaEvent' && event.delta.type === 'textDelta')
          outputText += event.delta.text;
        if (event.type === 'modelMessageStopEvent') {
          const reason = mapStopReason(event.stopReason);
          span.setAttribute('gen_ai.response.finish_reasons', [reason]);
          run.finishReasons.push(reason);
        }
        if (event.type === 'modelMetadataEvent' && event.usage) {
          const input = event.usage.inputTokens + (event.usage.cacheReadInputTokens ?? 0);
          span.setAttributes({
            'gen_ai.usage.input_tokens': input,
            'gen_ai.usage.output_tokens': event.usage.outputTokens,
          });
          if (event.usage.cacheReadInputTokens) {
            span.setAttribute('gen_ai.usage.cache_read.input_tokens', event.usage.cacheReadInputTokens);
          }
          run.usage.input += input;
          run.usage.output += event.usage.outputTokens;
        }
        yield event;
      }
      if (recordContent) {
        span.setAttribute(
          'gen_ai.output.messages',
          JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: outputText }] }]),
        );
      }
      ended = true;
      span.setStatus({ code: SpanStatusCode.OK });
      span.end();
    } catch (error) {
      ended = true;
      endWithError(span, error);
      throw error;
    } finally {
      if (!ended) {
        await iterator.return?.();
        span.setAttribute('error.type', 'cancelled');
        span.end();
      }
    }
  }
}

export interface ToolCallInfo {
  readonly name: string;
  readonly description: string;
  readonly callId: string | undefined;
  readonly input: unknown;
}

/**
 * Runs a tool body as one `execute_tool <tool>` span under the current run's invoke_agent span,
 * with tracing re-enabled so the tool's outbound HTTP calls are traced as its children.
 */
export async function traceToolCall<T>(info: ToolCallInfo, body: () => Promise<T>): Promise<T> {
  const run = currentRun();
  if (!run) return body();
  const attributes = commonAttributes(run, 'execute_tool');
  attributes['gen_ai.tool.name'] = info.name;
  attributes['gen_ai.tool.description'] = info.description;
  attributes['gen_ai.tool.type'] = 'function';
  if (info.callId) attributes['gen_ai.tool.call.id'] = info.callId;
  if (run.captureContent) attributes['gen_ai.tool.call.arguments'] = JSON.stringify(info.input);
  const span = tracer().startSpan(
    `execute_tool ${info.name}`,
    { kind: SpanKind.INTERNAL, attributes },
    run.agentContext,
  );
  try {
    const result = await context.with(trace.setSpan(run.agentContext, span), body);
    if (run.captureContent && span.isRecording()) {
      span.setAttribute('gen_ai.tool.call.result', JSON.stringify(result));
    }
    span.setStatus({ code: SpanStatusCode.OK });
    span.end();
    return result;
  } catch (error) {
    endWithError(span, error);
    throw error;
  }
}
