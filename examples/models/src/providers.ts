import type { Server } from 'node:http';
import type { Model } from '@strands-agents/sdk';
import { BedrockModel } from '@strands-agents/sdk/models/bedrock';
import { OpenAIModel } from '@strands-agents/sdk/models/openai';
import type { AgentServiceConfig, ModelConfig, ModelProviderName, ModelProviderSource } from './config.js';
import { type GenAiProviderName, GenAiTracedModel } from './genai-telemetry.js';
import { type Logger, createLogger } from './logger.js';
import { OfflineModel } from './offline/offline-model.js';

/** Strands 1.19's own defaults, set explicitly so the choice is visible (and the SDK does not warn). */
export const DEFAULT_BEDROCK_MODEL_ID = 'global.anthropic.claude-sonnet-4-6';
export const DEFAULT_OPENAI_MODEL_ID = 'gpt-5.4';

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
      const endpoint = config.bedrockEndpoint;
      const inner = new BedrockModel({
        region,
        modelId: config.modelId ?? DEFAULT_BEDROCK_MODEL_ID,
        ...(endpoint ? { clientConfig: { region, endpoint } } : {}),
      });
      return {
        ...base,
        model: new GenAiTracedModel(inner),
        genAiProvider: 'aws.bedrock',
        modelId: inner.modelId ?? 'unknown',
        offline: false,
        ...(endpoint
          ? endpointOf(endpoint)
          : { serverAddress: `bedrock-runtime.${region}.amazonaws.com`, serverPort: 443 }),
      };
    }
    case 'openai': {
      const baseUrl = config.openaiBaseUrl ?? 'https://api.openai.com/v1';
      const inner = new OpenAIModel({
        api: 'chat',
        modelId: config.modelId ?? DEFAULT_OPENAI_MODEL_ID,
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

/**
 * A service's start: logs the unusable settings, builds the model and says which one answers (a
 * warning when it is the offline model, so nobody mistakes its answers for a real model's).
 */
export function createServiceModel(config: AgentServiceConfig, logger: Logger): ModelSelection {
  for (const warning of config.warnings) logger.warn(warning);
  const selection = createModel(config.model);
  if (selection.offline)
    logger.warn(describeModel(selection), { provider: selection.provider, offline: true });
  else logger.info(describeModel(selection), { provider: selection.provider, offline: false });
  return selection;
}

/** A service's JSON-line stdout logger and its model, with the start-up notes logged. */
export function bootService(
  name: string,
  config: AgentServiceConfig,
): { logger: Logger; model: ModelSelection } {
  const logger = createLogger({ name, level: config.logLevel, write: (line) => process.stdout.write(line) });
  return { logger, model: createServiceModel(config, logger) };
}

/**
 * Listens on the service's HOST:PORT and drains on SIGTERM / SIGINT: in-flight answers finish, a
 * stuck one is cut after AGENTRT_DRAIN_TIMEOUT_MS. `listen` is the server's (or app's) listen.
 */
export function serveUntilSignal(
  listen: (port: number, host: string, ready: () => void) => Server,
  config: Pick<AgentServiceConfig, 'host' | 'port' | 'drainTimeoutMs'>,
  logger: Logger,
): Server {
  const server = listen(config.port, config.host, () => {
    const address = server.address();
    logger.info('listening', {
      host: config.host,
      port: typeof address === 'object' && address ? address.port : config.port,
    });
  });
  const stop = (signal: string): void => {
    logger.info('draining', { signal });
    server.close(() => logger.info('stopped'));
    server.closeIdleConnections();
    setTimeout(() => {
      server.closeAllConnections();
      process.exit(0);
    }, config.drainTimeoutMs).unref();
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  return server;
}
