// The LLM judges' real client paths: the runtime's Bedrock judge (the AWS SDK's BedrockRuntimeClient:
// SigV4, HTTP/2, ConverseCommand) and its OpenAI-compatible judge (fetch, bearer key) against the
// example stub servers, which answer judge prompts with a deterministic judgement in prose and a
// fenced JSON block. Each built-in LLM evaluator is called through the official AWS SDK's
// EvaluateCommand; its scores are the stub's, parsed, and the same on a second run.
import { EvaluateCommand, type EvaluationResultContent } from '@aws-sdk/client-bedrock-agentcore';
import { judgementOf } from '@agentrt/example-models';
import {
  type BedrockStub,
  type OpenAiStub,
  startBedrockStub,
  startOpenAiStub,
} from '@agentrt/example-models/fixtures';
import { BUILTIN_EVALUATORS } from '@agentrt/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FAILED_TOOL_TURN,
  FORECAST_TURN,
  weatherSession,
} from '../../../packages/runtime/src/evaluate/weather-sessions.test-util.js';
import { type TestRuntime, startRuntime } from '../../../packages/runtime/src/test-support.js';

const SESSION = 'judge-session-00000000000000000000000001';
const spans = weatherSession(SESSION, [FORECAST_TURN, FAILED_TOOL_TURN]);
const LLM_EVALUATORS = BUILTIN_EVALUATORS.filter((e) => e.kind === 'judge').map((e) => e.id);
const ACCESS_KEY = 'AKIAAGENTRTJUDGE0001';
const API_KEY = 'sk-agentrt-judge-test';
const MODEL = 'stub.judge-model-v1';

/** The score in a stub answer's fenced JSON (the stub's own record of what it said). */
function scoreIn(text: string): number {
  return (JSON.parse(/```json\n(.*)\n```/.exec(text)![1]!) as { score: number }).score;
}

async function evaluateAll(rt: TestRuntime): Promise<EvaluationResultContent[]> {
  const results: EvaluationResultContent[] = [];
  for (const evaluatorId of LLM_EVALUATORS) {
    const out = await rt.data.send(
      new EvaluateCommand({ evaluatorId, evaluationInput: { sessionSpans: spans as never } }),
    );
    results.push(...(out.evaluationResults ?? []));
  }
  return results;
}

/** Every result scored by the stub: its values are the scores the stub answered, in some order. */
function expectStubScores(results: EvaluationResultContent[], answered: readonly { text: string }[]): void {
  expect(results.length).toBeGreaterThanOrEqual(LLM_EVALUATORS.length);
  for (const r of results) {
    expect(r.errorCode, `${r.evaluatorId}: ${r.errorMessage}`).toBeUndefined();
    expect(r.explanation).toMatch(/^Stub judge: score /);
    expect(r.tokenUsage?.inputTokens).toBeGreaterThan(0);
    expect(r.tokenUsage?.outputTokens).toBeGreaterThan(0);
  }
  expect(answered).toHaveLength(results.length);
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  expect(sorted(results.map((r) => r.value!))).toEqual(sorted(answered.map((a) => scoreIn(a.text))));
  // Not one constant: the judged units differ, and so do their scores.
  expect(new Set(results.map((r) => r.value)).size).toBeGreaterThan(1);
}

describe('LLM judges through their real clients against local model servers', () => {
  let bedrock: BedrockStub;
  let openai: OpenAiStub;
  const runtimes: TestRuntime[] = [];
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
  beforeAll(async () => {
    bedrock = await startBedrockStub({ accessKeyIds: [ACCESS_KEY] });
    openai = await startOpenAiStub({ apiKeys: [API_KEY] });
    // The Bedrock judge's credentials come from the AWS SDK's default chain, as in production.
    process.env.AWS_ACCESS_KEY_ID = ACCESS_KEY;
    process.env.AWS_SECRET_ACCESS_KEY = 'judge-test-secret';
  });
  afterAll(async () => {
    await Promise.all(runtimes.map((rt) => rt.close()));
    await Promise.all([bedrock?.close(), openai?.close()]);
    process.env.AWS_ACCESS_KEY_ID = saved.id;
    process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
    if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
    if (saved.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
  });
  const runtimeWith = async (judge: Record<string, string>) => {
    const rt = await startRuntime({
      evaluation: { judge: { provider: 'offline', timeoutMs: 30_000, ...judge } as never },
    });
    runtimes.push(rt);
    return rt;
  };

  it('Bedrock: ConverseCommand, signed for bedrock in the configured region, scores parsed, same twice', async () => {
    const rt = await runtimeWith({
      provider: 'bedrock',
      modelId: MODEL,
      awsRegion: 'eu-west-1',
      bedrockEndpoint: bedrock.url,
    });
    const first = await evaluateAll(rt);
    const calls = bedrock.requests.slice();
    expect(calls.every((c) => c.modelId === MODEL && c.region === 'eu-west-1' && !c.stream)).toBe(true);
    expectStubScores(first, calls);
    // The judged prompt decides the score: the judgement of the prompt the stub saw.
    expect(scoreIn(calls[0]!.text)).toBe(judgementOf(calls[0]!.prompt).score);
    const second = await evaluateAll(rt);
    expect(second).toEqual(first);
  });

  it('OpenAI-compatible: chat completions with the bearer key, scores parsed, same twice', async () => {
    const rt = await runtimeWith({
      provider: 'openai',
      modelId: MODEL,
      openaiBaseUrl: openai.baseUrl,
      openaiApiKey: API_KEY,
    });
    const first = await evaluateAll(rt);
    const calls = openai.requests.slice();
    expect(calls.every((c) => c.model === MODEL && !c.stream && c.path === '/v1/chat/completions')).toBe(
      true,
    );
    expectStubScores(first, calls);
    expect(await evaluateAll(rt)).toEqual(first);
  });

  it('a judge the model server refuses marks each result errored, naming the cause', async () => {
    const rt = await runtimeWith({
      provider: 'openai',
      modelId: MODEL,
      openaiBaseUrl: openai.baseUrl,
      openaiApiKey: 'sk-wrong',
    });
    const out = await rt.data.send(
      new EvaluateCommand({
        evaluatorId: 'Builtin.Helpfulness',
        evaluationInput: { sessionSpans: spans as never },
      }),
    );
    expect(out.evaluationResults?.length).toBeGreaterThan(0);
    for (const r of out.evaluationResults ?? []) {
      expect(r.errorCode).toBe('JudgeModelError');
      expect(r.errorMessage).toMatch(/HTTP 401/);
    }
  });
});
