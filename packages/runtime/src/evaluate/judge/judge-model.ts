/**
 * The model an LLM judge asks: one prompt in, one text answer and its token usage out. Three
 * providers speak it: the offline judge (deterministic, no network), any OpenAI-compatible chat
 * completions endpoint, and Bedrock's Converse API.
 */
export type JudgeProviderName = 'offline' | 'openai' | 'bedrock';

export interface JudgeAnswer {
  text: string;
  inputTokens: number;
  outputTokens: number;
}

export interface JudgeModel {
  readonly provider: JudgeProviderName;
  readonly modelId: string;
  complete(prompt: string, signal: AbortSignal): Promise<JudgeAnswer>;
}

/** What the runtime's config says about the judge (explicit options > env > offline). */
export interface JudgeSettings {
  provider: JudgeProviderName;
  modelId?: string;
  openaiBaseUrl?: string;
  openaiApiKey?: string;
  awsRegion?: string;
  bedrockEndpoint?: string;
  /** A judge call's deadline. */
  timeoutMs: number;
}

/** A judge model that failed to answer (transport, HTTP status, empty reply). */
export class JudgeModelError extends Error {
  override name = 'JudgeModelError';
}
