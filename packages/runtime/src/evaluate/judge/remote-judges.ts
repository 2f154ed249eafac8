/**
 * The judges that call a model: any OpenAI-compatible chat completions endpoint (OpenAI, Ollama,
 * vLLM) and Bedrock's Converse API (credentials from the AWS SDK's default chain). Temperature 0,
 * one user message; a transport error or a reply without text is a JudgeModelError.
 */
import { type JudgeAnswer, type JudgeModel, JudgeModelError, type JudgeSettings } from './judge-model.js';

export const DEFAULT_OPENAI_JUDGE_MODEL = 'gpt-5.4';
export const DEFAULT_BEDROCK_JUDGE_MODEL = 'global.anthropic.claude-sonnet-4-6';
const MAX_ANSWER_TOKENS = 512;

interface ChatCompletion {
  choices?: { message?: { content?: unknown } }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number };
}

export function createOpenAiJudge(settings: JudgeSettings): JudgeModel {
  const base = (settings.openaiBaseUrl ?? 'https://api.openai.com/v1').replace(/\/+$/, '');
  const modelId = settings.modelId ?? DEFAULT_OPENAI_JUDGE_MODEL;
  return {
    provider: 'openai',
    modelId,
    async complete(prompt, signal): Promise<JudgeAnswer> {
      const res = await fetch(`${base}/chat/completions`, {
        method: 'POST',
        signal,
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${settings.openaiApiKey ?? 'not-needed'}`,
        },
        body: JSON.stringify({
          model: modelId,
          temperature: 0,
          max_tokens: MAX_ANSWER_TOKENS,
          messages: [{ role: 'user', content: prompt }],
        }),
      }).catch((error: unknown) => {
        throw new JudgeModelError(`judge model at ${base} unreachable: ${(error as Error).message}`, {
          cause: error,
        });
      });
      const body = (await res.json().catch(() => ({}))) as ChatCompletion;
      if (!res.ok) throw new JudgeModelError(`judge model at ${base} answered HTTP ${res.status}`);
      const text = body.choices?.[0]?.message?.content;
      if (typeof text !== 'string') throw new JudgeModelError(`judge model at ${base} sent no message text`);
      return {
        text,
        inputTokens: body.usage?.prompt_tokens ?? 0,
        outputTokens: body.usage?.completion_tokens ?? 0,
      };
    },
  };
}

export function createBedrockJudge(settings: JudgeSettings): JudgeModel {
  const modelId = settings.modelId ?? DEFAULT_BEDROCK_JUDGE_MODEL;
  const region = settings.awsRegion ?? 'us-west-2';
  const client = import('@aws-sdk/client-bedrock-runtime').then(
    ({ BedrockRuntimeClient, ConverseCommand }) => ({
      send: new BedrockRuntimeClient({
        region,
        ...(settings.bedrockEndpoint ? { endpoint: settings.bedrockEndpoint } : {}),
      }),
      ConverseCommand,
    }),
  );
  return {
    provider: 'bedrock',
    modelId,
    async complete(prompt, signal): Promise<JudgeAnswer> {
      const { send, ConverseCommand } = await client;
      const out = await send
        .send(
          new ConverseCommand({
            modelId,
            messages: [{ role: 'user', content: [{ text: prompt }] }],
            inferenceConfig: { temperature: 0, maxTokens: MAX_ANSWER_TOKENS },
          }),
          { abortSignal: signal },
        )
        .catch((error: unknown) => {
          throw new JudgeModelError(`Bedrock judge ${modelId}: ${(error as Error).message}`, {
            cause: error,
          });
        });
      const text = out.output?.message?.content?.map((c) => c.text ?? '').join('') ?? '';
      if (!text) throw new JudgeModelError(`Bedrock judge ${modelId} sent no text`);
      return { text, inputTokens: out.usage?.inputTokens ?? 0, outputTokens: out.usage?.outputTokens ?? 0 };
    },
  };
}
