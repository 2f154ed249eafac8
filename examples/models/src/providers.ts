import type { Model } from '@strands-agents/sdk';
import { BedrockModel } from '@strands-agents/sdk/models/bedrock';
import { OpenAIModel } from '@strands-agents/sdk/models/openai';
import type { ModelConfig, ModelProviderName, ModelProviderSource } from './config.js';
import { type GenAiProviderName, GenAiTracedModel } from './genai-telemetry.js';
import { OfflineModel } from './offline/offline-model.js';

/** A ready model plus what telemetry and answer metadata say about it. */
export interface ModelSelection {
  /** The Strands model, wrapped so each call is a GenAI `chat <model>` CLIENT span. */
  readonly model: Model;
  readonly provider: ModelProviderName;
  readonly providerSource: ModelProviderSource;
  /** `gen_ai.provider.name`: `aws.bedrock`, `openai` or `offline`. */
  readonly genAiProvider: GenAiProviderName;
  readonly modelId: string;
  readonly offline: boolean;
  readonly serverAddress?: string;
  readonly serverPort?: number;
}

function endpointOf(url: string): { serverAddress?: string; serverPort?: number } {
  try {
    const parsed = new URL(url);
    const port = parsed.port ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
    return { serverAddress: parsed.hostname, serverPort: port };
  } catch {
    return {};
  }
}

/**
 * Builds the model the settings ask for. Bedrock takes AWS credentials from the environment (the
 * SDK's default chain); OpenAI works with any OpenAI-compatible chat completions endpoint (OpenAI,
 * Ollama, vLLM); offline needs nothing.
 */
export function createModel(config: ModelConfig): ModelSelection {
  const base = { provider: config.provider, providerSource: config.providerSource };
  switch (config.provider) {
    case 'bedrock': {
      const region = config.awsRegion ?? 'us-west-2';
      const inner = new BedrockModel({ region, ...(config.modelId ? { modelId: config.modelId } : {}) });
      return {
        ...base,
        model: new GenAiTracedModel(inner),
        genAiProvider: 'aws.bedrock',
        modelId: inner.modelId ?? 'unknown',
        offline: false,
        serverAddress: `bedrock-runtime.${region}.amazonaws.com`,
        serverPort: 443,
      };
    }
    case 'openai': {
      const baseUrl = config.openaiBaseUrl ?? 'https://api.openai.com/v1';
      const inner = new OpenAIModel({
        api: 'chat',
        ...(config.modelId ? { modelId: config.modelId } : {}),
        // Ollama and vLLM accept any key; the OpenAI client refuses to start without one.
        apiKey: config.openaiApiKey ?? 'not-needed',
        clientConfig: { baseURL: baseUrl },
      });
      return {
        ...base,
        model: new GenAiTracedModel(inner),
        genAiProvider: 'openai',
        modelId: inner.modelId ?? 'unknown',
        offline: false,
        ...endpointOf(baseUrl),
      };
    }
    case 'offline': {
      const inner = new OfflineModel({
        chunkDelayMs: config.offlineChunkDelayMs,
        ...(config.modelId ? { modelId: config.modelId } : {}),
      });
      return {
        ...base,
        model: new GenAiTracedModel(inner),
        genAiProvider: 'offline',
        modelId: inner.modelId ?? 'unknown',
        offline: true,
      };
    }
  }
}

/** One log line's worth of facts about the chosen model (the offline default says so plainly). */
export function describeModel(selection: ModelSelection): string {
  const why =
    selection.providerSource === 'default'
      ? 'no model credentials are configured, so the offline deterministic model answers (set AGENTRT_MODEL_PROVIDER, AWS credentials or OPENAI_API_KEY for a real model)'
      : selection.providerSource === 'credentials'
        ? 'chosen from the credentials in the environment'
        : 'chosen by AGENTRT_MODEL_PROVIDER';
  return `model provider ${selection.provider} (${selection.modelId}): ${why}`;
}
