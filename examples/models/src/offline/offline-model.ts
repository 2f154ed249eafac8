import { type BaseModelConfig, type Message, Model, type StreamOptions } from '@strands-agents/sdk';
import type { ModelStreamEvent } from '@strands-agents/sdk';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { type PlanMessage, estimateTokens, planNextStep, splitIntoChunks } from './planner.js';

export const OFFLINE_MODEL_ID = 'agentrt-offline-weather-1';

export interface OfflineModelConfig extends BaseModelConfig {
  /** Pause between text chunks so a stream arrives in increments, as from a remote model. */
  chunkDelayMs?: number;
}

interface BlockLike {
  readonly type: string;
  readonly text?: string;
  readonly json?: unknown;
  readonly name?: string;
  readonly toolUseId?: string;
  readonly input?: unknown;
  readonly status?: string;
  readonly content?: readonly BlockLike[];
}

function blockText(blocks: readonly BlockLike[]): string {
  return blocks
    .map((b) =>
      b.type === 'textBlock' ? (b.text ?? '') : b.type === 'jsonBlock' ? JSON.stringify(b.json) : '',
    )
    .join('');
}

/** Strands messages to the planner's provider-neutral shape. */
export function toPlanMessages(messages: readonly Message[]): PlanMessage[] {
  const out: PlanMessage[] = [];
  for (const message of messages) {
    const blocks = message.content as readonly BlockLike[];
    if (message.role === 'assistant') {
      out.push({
        role: 'assistant',
        text: blockText(blocks),
        toolCalls: blocks
          .filter((b) => b.type === 'toolUseBlock')
          .map((b) => ({ id: b.toolUseId ?? '', name: b.name ?? '', input: b.input })),
      });
      continue;
    }
    const results = blocks.filter((b) => b.type === 'toolResultBlock');
    for (const r of results) {
      out.push({
        role: 'tool',
        toolCallId: r.toolUseId ?? '',
        content: blockText(r.content ?? []),
        isError: r.status === 'error',
      });
    }
    const text = blockText(blocks);
    if (results.length === 0 || text) out.push({ role: 'user', text });
  }
  return out;
}

function systemText(systemPrompt: StreamOptions['systemPrompt']): string {
  if (systemPrompt === undefined) return '';
  if (typeof systemPrompt === 'string') return systemPrompt;
  return blockText(systemPrompt as readonly BlockLike[]);
}

/**
 * A deterministic Strands model provider that needs no network and no credentials, yet drives the
 * real agent loop: it asks for the weather tools with real arguments, reads the JSON the tools
 * return and writes its answer from the actual forecast periods. Usage numbers are estimates
 * (about four characters a token).
 */
export class OfflineModel extends Model<OfflineModelConfig> {
  private config: OfflineModelConfig;

  constructor(config: OfflineModelConfig = {}) {
    super();
    this.config = { modelId: OFFLINE_MODEL_ID, chunkDelayMs: 15, ...config };
  }

  override updateConfig(modelConfig: OfflineModelConfig): void {
    this.config = { ...this.config, ...modelConfig };
  }

  override getConfig(): OfflineModelConfig {
    return { ...this.config };
  }

  override async *stream(messages: Message[], options?: StreamOptions): AsyncIterable<ModelStreamEvent> {
    const startedMs = performance.now();
    const system = systemText(options?.systemPrompt);
    const toolNames = (options?.toolSpecs ?? []).map((spec) => spec.name);
    const step = planNextStep({ system, messages: toPlanMessages(messages), toolNames });
    const inputTokens = estimateTokens(
      system + JSON.stringify(messages) + JSON.stringify(options?.toolSpecs ?? []),
    );
    const chunkDelayMs = this.config.chunkDelayMs ?? 0;
    const signal = options?.cancelSignal;

    yield { type: 'modelMessageStartEvent', role: 'assistant' };
    const text = step.kind === 'answer' ? step.text : step.preamble;
    let firstByteMs: number | undefined;
    if (text) {
      yield { type: 'modelContentBlockStartEvent' };
      for (const chunk of splitIntoChunks(text)) {
        if (chunkDelayMs > 0) await delay(chunkDelayMs, undefined, signal ? { signal } : undefined);
        firstByteMs ??= performance.now() - startedMs;
        yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'textDelta', text: chunk } };
      }
      yield { type: 'modelContentBlockStopEvent' };
    }
    let outputText = text;
    if (step.kind === 'tool') {
      const args = JSON.stringify(step.input);
      outputText += step.name + args;
      yield {
        type: 'modelContentBlockStartEvent',
        start: {
          type: 'toolUseStart',
          name: step.name,
          toolUseId: `tooluse_${randomUUID().replaceAll('-', '')}`,
        },
      };
      yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'toolUseInputDelta', input: args } };
      yield { type: 'modelContentBlockStopEvent' };
    }
    yield { type: 'modelMessageStopEvent', stopReason: step.kind === 'tool' ? 'toolUse' : 'endTurn' };
    const outputTokens = estimateTokens(outputText);
    const latencyMs = Math.max(1, Math.round(performance.now() - startedMs));
    yield {
      type: 'modelMetadataEvent',
      usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
      metrics: { latencyMs, timeToFirstByteMs: Math.round(firstByteMs ?? latencyMs) },
    };
  }
}
