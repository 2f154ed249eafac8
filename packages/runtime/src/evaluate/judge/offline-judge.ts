import { createHash } from 'node:crypto';
import { type JudgeAnswer, type JudgeModel } from './judge-model.js';
import { NO_ANSWER, TOOL_FAILED } from './prompts.js';

/** About four characters a token: the offline judge's stand-in for a tokenizer. */
const tokens = (text: string): number => Math.ceil(text.length / 4);

/**
 * Scores from the prompt alone, the same bytes for the same prompt: no answer → 0, a failed tool
 * call → 0.25, otherwise 0.5–1 in steps of 0.125 from a hash of the prompt. Not a judgment: it
 * lets tests and CI run every judge without a model, and changes when the judged spans change.
 */
export function offlineScore(prompt: string): number {
  if (prompt.includes(NO_ANSWER)) return 0;
  if (prompt.includes(TOOL_FAILED)) return 0.25;
  const byte = createHash('sha256').update(prompt).digest()[0]!;
  return 0.5 + (byte % 5) * 0.125;
}

export function createOfflineJudge(modelId = 'offline-judge'): JudgeModel {
  return {
    provider: 'offline',
    modelId,
    complete(prompt): Promise<JudgeAnswer> {
      const score = offlineScore(prompt);
      const label = score >= 0.75 ? 'Good' : score >= 0.5 ? 'Fair' : 'Poor';
      const why =
        score === 0
          ? 'The agent gave no answer.'
          : score === 0.25
            ? 'A tool call failed during the turn.'
            : 'Offline judge: a deterministic score from the judged text, not a model judgment.';
      const text = JSON.stringify({ score, label, explanation: why });
      return Promise.resolve({ text, inputTokens: tokens(prompt), outputTokens: tokens(text) });
    },
  };
}
