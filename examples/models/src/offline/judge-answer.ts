/**
 * How the offline "brain" answers an LLM judge's prompt (agentrt's Evaluate judges end theirs with
 * an answer format asking for `{"score": <a number from 0 to 1>, …}`): a score from a hash of the
 * prompt, in a fenced JSON block after a line of prose, as chat models tend to answer. The same
 * prompt always gets the same answer, so tests can run the Bedrock and OpenAI-compatible judges'
 * real client paths against the stub servers and compare runs.
 */
import { createHash } from 'node:crypto';

/** What marks a prompt as a judge's: the answer format agentrt's judges append. */
const JUDGE_MARKER = /"score":\s*<a number from 0 to 1>/;

export interface Judgement {
  readonly score: number;
  readonly label: string;
  readonly explanation: string;
}

export function isJudgePrompt(prompt: string): boolean {
  return JUDGE_MARKER.test(prompt);
}

/** The judgement of a judge prompt: a score on 0–1 in steps of 0.05, from the prompt's bytes. */
export function judgementOf(prompt: string): Judgement {
  const byte = createHash('sha256').update(prompt).digest()[0]!;
  const score = Math.round((byte / 255) * 20) / 20;
  const label = score >= 0.75 ? 'Good' : score >= 0.5 ? 'Fair' : 'Poor';
  const explanation = `Stub judge: score ${score} from the prompt's hash, not a model judgment.`;
  return { score, label, explanation };
}

/** The answer text: a line of prose and the judgement as fenced JSON. */
export function judgeAnswerText(prompt: string): string {
  return `Here is my assessment.\n\n\`\`\`json\n${JSON.stringify(judgementOf(prompt))}\n\`\`\`\n`;
}
