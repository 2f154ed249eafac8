import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Server, createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import {
  EvaluateCommand,
  type EvaluateCommandInput,
  ValidationException,
} from '@aws-sdk/client-bedrock-agentcore';
import { type SpanRecord, spansToOtlpJson } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCollector } from '../../../collector/src/testing.test-util.js';
import { BUILTIN_EVALUATORS } from './evaluate/catalog.js';
import { FAILED_TOOL_TURN, FORECAST_TURN, weatherSession } from './evaluate/weather-sessions.test-util.js';
import { type TestRuntime, startRuntime } from './test-support.js';

const SESSION = 'eval-session-000000000000000000000000001';
const spans = weatherSession(SESSION, [FORECAST_TURN, FAILED_TOOL_TURN]);
const expected = {
  toolNames: ['http_request', 'http_request', 'ready_to_summarize', 'http_request', 'http_request'],
};
const reference = { context: { spanContext: { sessionId: SESSION } }, expectedTrajectory: expected };

function input(evaluatorId: string, extra: Partial<EvaluateCommandInput> = {}): EvaluateCommandInput {
  return {
    evaluatorId,
    evaluationInput: {
      sessionSpans: spans as never,
    },
    evaluationReferenceInputs: [reference],
    ...extra,
  } as EvaluateCommandInput;
}

async function validationOf(rt: TestRuntime, command: EvaluateCommandInput): Promise<ValidationException> {
  const error = await rt.data.send(new EvaluateCommand(command)).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ValidationException);
  return error as ValidationException;
}

describe('Evaluate through the AWS SDK EvaluateCommand', () => {
  let rt: TestRuntime;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  beforeAll(async () => {
    collector = await startCollector();
    rt = await startRuntime({ otlpEndpoint: collector.url });
  });
  afterAll(async () => {
    await rt?.close();
    await collector?.cleanup();
  });

  it('answers every built-in evaluator id with a score for each unit its level names', async () => {
    for (const spec of BUILTIN_EVALUATORS) {
      const out = await rt.data.send(new EvaluateCommand(input(spec.id)));
      const results = out.evaluationResults ?? [];
      const units = spec.level === 'SESSION' ? 1 : spec.level === 'TRACE' ? 2 : 5;
      expect(results, spec.id).toHaveLength(units);
      for (const r of results) {
        expect(r.evaluatorId).toBe(spec.id);
        expect(r.evaluatorArn).toBe(`arn:aws:bedrock-agentcore:::evaluator/${spec.id}`);
        expect(r.errorCode, `${spec.id}: ${r.errorMessage}`).toBeUndefined();
        expect(r.value).toBeGreaterThanOrEqual(0);
        expect(r.value).toBeLessThanOrEqual(1);
        expect(r.label).toBeTruthy();
        expect(r.context?.spanContext?.sessionId).toBe(SESSION);
        expect(r.tokenUsage?.totalTokens).toBe(
          (r.tokenUsage?.inputTokens ?? 0) + (r.tokenUsage?.outputTokens ?? 0),
        );
      }
      if (spec.level === 'TOOL_CALL') expect(results.every((r) => r.context?.spanContext?.spanId)).toBe(true);
      if (spec.level === 'TRACE')
        expect(new Set(results.map((r) => r.context?.spanContext?.traceId)).size).toBe(2);
    }
  });

  it('matches trajectories exactly, in order and in any order, bit-identical across runs, at zero tokens', async () => {
    const runs = async (id: string, toolNames: string[]) => {
      const out = [];
      for (let i = 0; i < 3; i++) {
        const ref = { context: reference.context, expectedTrajectory: { toolNames } };
        const res = await rt.data.send(new EvaluateCommand(input(id, { evaluationReferenceInputs: [ref] })));
        out.push(JSON.stringify(res.evaluationResults));
      }
      expect(new Set(out).size).toBe(1);
      return JSON.parse(out[0]!) as { value: number; label: string; tokenUsage: { totalTokens: number } }[];
    };
    const reordered = ['ready_to_summarize', 'http_request', 'http_request', 'http_request', 'http_request'];
    const exact = 'Builtin.TrajectoryExactOrderMatch';
    const inOrder = 'Builtin.TrajectoryInOrderMatch';
    const anyOrder = 'Builtin.TrajectoryAnyOrderMatch';
    expect((await runs(exact, expected.toolNames))[0]).toMatchObject({
      value: 1,
      label: 'Yes',
      tokenUsage: { totalTokens: 0 },
    });
    expect((await runs(exact, ['http_request', 'ready_to_summarize']))[0]!.value).toBe(0);
    expect((await runs(inOrder, ['http_request', 'ready_to_summarize']))[0]!.value).toBe(1);
    expect((await runs(inOrder, ['ready_to_summarize', 'ready_to_summarize']))[0]!.value).toBe(0);
    expect((await runs(anyOrder, reordered))[0]!.value).toBe(1);
    expect((await runs(inOrder, reordered))[0]!.value).toBe(0);
    expect((await runs(anyOrder, ['weather_alerts']))[0]!.value).toBe(0);
  });

  it('reads the session from the collector when sessionSpans is empty and a reference names the session', async () => {
    const res = await fetch(`${collector.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(spansToOtlpJson(spans)),
    });
    expect(res.status).toBe(200);
    const inline = await rt.data.send(new EvaluateCommand(input('Builtin.TrajectoryInOrderMatch')));
    let stored;
    for (let i = 0; i < 100; i++) {
      stored = await rt.data
        .send(
          new EvaluateCommand(
            input('Builtin.TrajectoryInOrderMatch', { evaluationInput: { sessionSpans: [] } }),
          ),
        )
        .catch((e: unknown) => e);
      if (!(stored instanceof Error)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(stored).toEqual(expect.objectContaining({ evaluationResults: inline.evaluationResults }));
    const missing = await rt.data
      .send(
        new EvaluateCommand(
          input('Builtin.Helpfulness', {
            evaluationInput: { sessionSpans: [] },
            evaluationReferenceInputs: [{ context: { spanContext: { sessionId: 'no-such-session' } } }],
          }),
        ),
      )
      .catch((e: unknown) => e as Error);
    expect((missing as Error).name).toBe('ResourceNotFoundException');
  });

  it('stores every result beside the traces as a GenAI evaluation span the query language aggregates', async () => {
    const query =
      'filter ispresent(attributes.gen_ai.evaluation.name) | stats avg(attributes.gen_ai.evaluation.score.value) as score, count(*) as n by attributes.gen_ai.evaluation.name as evaluator';
    let rows: Record<string, unknown>[] = [];
    for (let i = 0; i < 100 && rows.length < BUILTIN_EVALUATORS.length; i++) {
      const res = await fetch(`${collector.url}/api/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query }),
      });
      rows = ((await res.json()) as { rows: Record<string, unknown>[] }).rows;
      await new Promise((r) => setTimeout(r, 100));
    }
    const byName = new Map(rows.map((r) => [r.evaluator, r]));
    expect([...byName.keys()].sort()).toEqual(BUILTIN_EVALUATORS.map((e) => e.id).sort());
    const helpful = byName.get('Builtin.Helpfulness')!;
    expect(helpful.n).toBeGreaterThanOrEqual(2);
    expect(helpful.score).toBeGreaterThan(0);
    // 4 matches out of 7 calls: the first test's and the trajectory test's 3 + 3.
    expect(byName.get('Builtin.TrajectoryExactOrderMatch')).toMatchObject({ score: 4 / 7, n: 7 });
    const spansRes = await fetch(`${collector.url}/api/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query: 'filter attributes.gen_ai.evaluation.name = "Builtin.ToolSelectionAccuracy" | limit 1',
      }),
    });
    const span = ((await spansRes.json()) as { rows: { '@message': SpanRecord }[] }).rows[0]!['@message'];
    expect(span.attributes['session.id']).toBe(SESSION);
    expect(span.attributes['agentrt.evaluation.span_id']).toMatch(/^[0-9a-f]{16}$/);
    expect(span.attributes['agentrt.evaluation.judge.provider']).toBe('offline');
    expect(span.events[0]!.name).toBe('gen_ai.evaluation.result');
    expect(span.links[0]!.spanId).toBe(span.attributes['agentrt.evaluation.span_id']);
  });

  it('refuses an unknown evaluator and malformed input with a ValidationException naming the field', async () => {
    const unknown = await validationOf(rt, input('Builtin.NoSuchJudge'));
    expect(unknown.fieldList?.[0]?.name).toBe('evaluatorId');
    expect(unknown.reason).toBe('FieldValidationFailed');
    const bad = [...spans.slice(0, 1), { spanId: 'abc', name: 'x' }];
    const noTrace = await validationOf(
      rt,
      input('Builtin.Helpfulness', { evaluationInput: { sessionSpans: bad as never } }),
    );
    expect(noTrace.fieldList?.[0]?.name).toBe('evaluationInput.sessionSpans[1].traceId');
    const notObject = await validationOf(
      rt,
      input('Builtin.Helpfulness', { evaluationInput: { sessionSpans: ['text'] as never } }),
    );
    expect(notObject.fieldList?.[0]?.name).toBe('evaluationInput.sessionSpans[0]');
    const noTrajectory = await validationOf(
      rt,
      input('Builtin.TrajectoryExactOrderMatch', { evaluationReferenceInputs: [] }),
    );
    expect(noTrajectory.fieldList?.[0]?.name).toBe('evaluationReferenceInputs[].expectedTrajectory');
    const badRef = await validationOf(
      rt,
      input('Builtin.Helpfulness', {
        evaluationReferenceInputs: [{ context: { spanContext: {} } } as never],
      }),
    );
    expect(badRef.fieldList?.[0]?.name).toBe('evaluationReferenceInputs[0].context.spanContext.sessionId');
    const tooMany = Array.from({ length: 1001 }, (_, i) => ({
      ...spans[0]!,
      spanId: i.toString(16).padStart(16, '0'),
    }));
    const over = await validationOf(
      rt,
      input('Builtin.Helpfulness', { evaluationInput: { sessionSpans: tooMany as never } }),
    );
    expect([over.fieldList?.[0]?.name, over.message]).toEqual([
      'evaluationInput.sessionSpans',
      'evaluationInput.sessionSpans: must hold 1 to 1000 documents; it holds 1001',
    ]);
    const malformed = await fetch(`${rt.server.url}/evaluations/evaluate/Builtin.Helpfulness`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"evaluationInput": {"sessionSpans": [',
    });
    expect([malformed.status, malformed.headers.get('x-amzn-errortype')]).toEqual([
      400,
      'ValidationException',
    ]);
    expect(((await malformed.json()) as { fieldList: { name: string }[] }).fieldList[0]!.name).toBe('body');
  });
});

describe('LLM judges through an OpenAI-compatible endpoint', () => {
  let rt: TestRuntime;
  let server: Server;
  const answers: string[] = [];
  const prompts: string[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        const parsed = JSON.parse(body) as { messages: { content: string }[] };
        prompts.push(parsed.messages[0]!.content);
        const content = answers.shift();
        if (content === 'hang') return; // never answers: the judge's deadline must end the call
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            choices: [{ message: { role: 'assistant', content } }],
            usage: { prompt_tokens: 100, completion_tokens: 20 },
          }),
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    rt = await startRuntime({
      evaluation: {
        judge: {
          provider: 'openai',
          openaiBaseUrl: `http://127.0.0.1:${port}/v1`,
          modelId: 'judge-1',
          timeoutMs: 500,
        },
      },
    });
  });
  afterAll(async () => {
    await rt?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });

  it('scores from prose-wrapped JSON, marks garbage and a judge that never answers, records tokens', async () => {
    answers.push(
      'Verdict follows.\n```json\n{"score": 4, "label": "Helpful", "explanation": "Gave the forecast."}\n```',
    );
    answers.push('I am a teapot');
    const out = await rt.data.send(new EvaluateCommand(input('Builtin.Helpfulness')));
    const [first, second] = out.evaluationResults ?? [];
    expect(first).toMatchObject({ value: 0.8, label: 'Helpful', explanation: 'Gave the forecast.' });
    expect(first!.tokenUsage).toEqual({ inputTokens: 100, outputTokens: 20, totalTokens: 120 });
    expect(second).toMatchObject({ errorCode: 'JudgeAnswerUnparseable' });
    expect(second!.errorMessage).toContain('I am a teapot');
    expect(second!.value).toBeUndefined();
    expect(prompts[0]).toContain('What is the weather in Seattle?');
    expect(prompts[0]).toContain('Seattle: 72°F and sunny today');
    expect(prompts[1]).toContain('(tool call failed)');

    answers.push('hang');
    const slow = await rt.data.send(new EvaluateCommand(input('Builtin.GoalSuccessRate')));
    expect(slow.evaluationResults?.[0]).toMatchObject({ errorCode: 'JudgeModelError' });
  });
});

describe('custom evaluators registered by name (AGENTRT_EVALUATORS_FILE)', () => {
  let rt: TestRuntime;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agentrt-evaluators-'));
    writeFileSync(
      join(dir, 'calls.mjs'),
      'export default (s) => ({ value: s.toolCalls.length >= 5 ? 1 : 0.5, label: "calls" });\n',
    );
    writeFileSync(
      join(dir, 'rubric.md'),
      '# Forecast rubric\n\nDoes the answer give a temperature?\n\n{{output}}\n',
    );
    const file = join(dir, 'evaluators.json');
    writeFileSync(
      file,
      JSON.stringify({
        evaluators: [
          { name: 'enough-calls', module: 'calls.mjs' },
          { name: 'forecast-rubric', prompt: 'rubric.md', level: 'SESSION' },
        ],
      }),
    );
    rt = await startRuntime({
      evaluation: { judge: { provider: 'offline', timeoutMs: 5000 }, evaluatorsFile: file },
    });
  });
  afterAll(async () => {
    await rt?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers EvaluateCommand for a module and a prompt evaluator by their names', async () => {
    const mod = await rt.data.send(new EvaluateCommand(input('enough-calls')));
    expect(mod.evaluationResults).toEqual([
      expect.objectContaining({
        evaluatorId: 'enough-calls',
        value: 1,
        label: 'calls',
        ignoredReferenceInputFields: ['expectedTrajectory'],
      }),
    ]);
    const prompt = await rt.data.send(new EvaluateCommand(input('forecast-rubric')));
    expect(prompt.evaluationResults).toHaveLength(1);
    expect(prompt.evaluationResults?.[0]?.value).toBeGreaterThan(0);
    expect((await validationOf(rt, input('no-such-check'))).fieldList?.[0]?.name).toBe('evaluatorId');
  });
});
