// Online evaluation rules through the AWS SDK's CreateOnlineEvaluationConfigCommand: stored in the
// control store, validated field by field, run by the runtime; a rule survives a restart and judges
// the sessions that ended while the runtime was down, each once.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ConflictException,
  CreateOnlineEvaluationConfigCommand,
  type CreateOnlineEvaluationConfigCommandInput,
  DeleteOnlineEvaluationConfigCommand,
  GetOnlineEvaluationConfigCommand,
  ListOnlineEvaluationConfigsCommand,
  ResourceNotFoundException,
  UpdateOnlineEvaluationConfigCommand,
  ValidationException,
} from '@aws-sdk/client-bedrock-agentcore-control';
import { type SpanRecord, spansToOtlpJson } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCollector } from '../../../collector/src/testing.test-util.js';
import { FORECAST_TURN, weatherSession } from './evaluate/weather-sessions.test-util.js';
import { ROLE_ARN, type TestRuntime, startRuntime, waitFor } from './test-support.js';

const GOAL = 'Builtin.GoalSuccessRate'; // one result per session

function config(
  name: string,
  extra: Partial<CreateOnlineEvaluationConfigCommandInput> = {},
): CreateOnlineEvaluationConfigCommandInput {
  return {
    onlineEvaluationConfigName: name,
    rule: {
      samplingConfig: { samplingPercentage: 100 },
      // 1.5 s: agentrt takes fractions of a minute (AWS: whole minutes).
      sessionConfig: { sessionTimeoutMinutes: 0.025 },
      filters: [{ key: 'gen_ai.agent.name', operator: 'Equals', value: { stringValue: 'weather' } }],
    },
    dataSourceConfig: { cloudWatchLogs: { logGroupNames: [], serviceNames: ['weather'] } },
    evaluators: [{ evaluatorId: GOAL }],
    evaluationExecutionRoleArn: ROLE_ARN,
    enableOnCreate: true,
    ...extra,
  };
}

/** A weather session whose last span ends at `endMs` (the helper's sessions are an hour old). */
function sessionEndingAt(id: string, seed: number, endMs: number, service = 'weather'): SpanRecord[] {
  const spans = weatherSession(id, [FORECAST_TURN], seed);
  const last = Math.max(...spans.map((s) => s.endTimeUnixNano));
  const shift = endMs * 1e6 - last;
  return spans.map((s) => ({
    ...s,
    resource: { attributes: { 'service.name': service } },
    startTimeUnixNano: s.startTimeUnixNano + shift,
    endTimeUnixNano: s.endTimeUnixNano + shift,
  }));
}

describe('online evaluation configs (CreateOnlineEvaluationConfigCommand)', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let dir: string;
  let rt: TestRuntime;
  const start = () =>
    startRuntime(
      {
        evaluation: {
          judge: { provider: 'offline', timeoutMs: 5000 },
          collector: { url: collector.url },
        },
        onlineEvaluationIntervalMs: 200,
      },
      dir,
    );
  const ingest = async (spans: SpanRecord[]) => {
    const res = await fetch(`${collector.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(spansToOtlpJson(spans)),
    });
    expect(res.status).toBe(200);
  };
  /** Results stored per session id under the rule's run. */
  const judged = async (configId: string): Promise<Map<string, number>> => {
    const query = `filter attributes.agentrt.evaluation.run_id = "online-${configId}" | stats count(*) as n by attributes.session.id as session`;
    const res = await fetch(`${collector.url}/api/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    const { rows } = (await res.json()) as { rows: { session: string; n: number }[] };
    return new Map(rows.map((r) => [r.session, r.n]));
  };

  beforeAll(async () => {
    collector = await startCollector();
    dir = mkdtempSync(join(tmpdir(), 'agentrt-online-eval-'));
    rt = await start();
  });
  afterAll(async () => {
    await rt?.close();
    await collector?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const validation = async (input: CreateOnlineEvaluationConfigCommandInput) => {
    const error = await rt.control
      .send(new CreateOnlineEvaluationConfigCommand(input))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationException);
    return (error as ValidationException).message.split(':')[0];
  };

  it('creates, gets, lists and deletes a config; refuses bad fields naming each', async () => {
    const created = await rt.control.send(new CreateOnlineEvaluationConfigCommand(config('crud_rule')));
    expect(created).toMatchObject({ status: 'ACTIVE', executionStatus: 'ENABLED' });
    expect(created.onlineEvaluationConfigId).toMatch(/^crud_rule-[a-zA-Z0-9]{10}$/);
    expect(created.createdAt).toBeInstanceOf(Date);
    expect(Math.abs(created.createdAt!.getTime() - Date.now())).toBeLessThan(60_000);
    const id = created.onlineEvaluationConfigId!;
    const got = await rt.control.send(new GetOnlineEvaluationConfigCommand({ onlineEvaluationConfigId: id }));
    expect(got).toMatchObject({
      onlineEvaluationConfigName: 'crud_rule',
      rule: { samplingConfig: { samplingPercentage: 100 }, sessionConfig: { sessionTimeoutMinutes: 0.025 } },
      evaluators: [{ evaluatorId: GOAL }],
      dataSourceConfig: { cloudWatchLogs: { serviceNames: ['weather'] } },
    });
    const again = await rt.control
      .send(new CreateOnlineEvaluationConfigCommand(config('crud_rule')))
      .catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ConflictException);

    const bad = (rule: object) => config('bad_rule', { rule: { ...config('x').rule!, ...rule } });
    expect(await validation(config('bad-name'))).toBe('onlineEvaluationConfigName');
    expect(
      await validation(
        config('bad_rule', { evaluators: [{ evaluatorId: GOAL }, { evaluatorId: 'Builtin.Nope' }] }),
      ),
    ).toBe('evaluators[1].evaluatorId');
    expect(await validation(bad({ samplingConfig: { samplingPercentage: 0 } }))).toBe(
      'rule.samplingConfig.samplingPercentage',
    );
    expect(await validation(bad({ sessionConfig: { sessionTimeoutMinutes: 2000 } }))).toBe(
      'rule.sessionConfig.sessionTimeoutMinutes',
    );
    const filter = (f: object) => bad({ filters: [config('x').rule!.filters![0]!, f] });
    // A key that would smuggle a condition into the query the rule runs.
    expect(
      await validation(filter({ key: 'a = 1 or b', operator: 'Equals', value: { stringValue: 'x' } })),
    ).toBe('rule.filters[1].key');
    expect(await validation(filter({ key: 'a', operator: 'Matches', value: { stringValue: 'x' } }))).toBe(
      'rule.filters[1].operator',
    );
    expect(await validation(filter({ key: 'a', operator: 'GreaterThan', value: { stringValue: 'x' } }))).toBe(
      'rule.filters[1].value',
    );
    expect(
      await validation(
        config('bad_rule', { dataSourceConfig: { cloudWatchLogs: { serviceNames: [] } } as never }),
      ),
    ).toBe('dataSourceConfig.cloudWatchLogs.serviceNames');
    expect(await validation(config('bad_rule', { enableOnCreate: 'yes' as never }))).toBe('enableOnCreate');

    // Malformed and oversized bodies, a hostile id in the path.
    const post = (body: string) =>
      fetch(`${rt.server.url}/online-evaluation-configs/create`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
      });
    const malformed = await post('{"onlineEvaluationConfigName": ');
    expect([malformed.status, malformed.headers.get('x-amzn-errortype')]).toEqual([
      400,
      'ValidationException',
    ]);
    const huge = await post(JSON.stringify({ ...config('huge'), description: 'x'.repeat(2_000_000) }));
    expect(huge.status).toBeGreaterThanOrEqual(400);
    expect(huge.status).toBeLessThan(500);
    const traversal = await fetch(`${rt.server.url}/online-evaluation-configs/..%2F..%2Fruntimes`);
    expect([traversal.status, await traversal.json()]).toEqual([
      400,
      expect.objectContaining({ fieldList: [expect.objectContaining({ name: 'onlineEvaluationConfigId' })] }),
    ]);

    const listed = await rt.control.send(new ListOnlineEvaluationConfigsCommand({}));
    expect(listed.onlineEvaluationConfigs?.map((c) => c.onlineEvaluationConfigName)).toEqual(['crud_rule']);
    const update = (input: object) =>
      rt.control
        .send(new UpdateOnlineEvaluationConfigCommand({ onlineEvaluationConfigId: id, ...input }))
        .catch((e: unknown) => e);
    const badStatus = await update({ executionStatus: 'PAUSED' });
    expect((badStatus as ValidationException).message).toMatch(/^executionStatus: /);
    const badSampling = await update({
      rule: { ...config('x').rule!, samplingConfig: { samplingPercentage: 500 } },
    });
    expect((badSampling as ValidationException).message).toMatch(
      /^rule\.samplingConfig\.samplingPercentage: /,
    );
    expect(await update({ executionStatus: 'DISABLED', description: 'paused' })).toMatchObject({
      executionStatus: 'DISABLED',
    });
    expect(
      await rt.control.send(new GetOnlineEvaluationConfigCommand({ onlineEvaluationConfigId: id })),
    ).toMatchObject({
      executionStatus: 'DISABLED',
      description: 'paused',
      evaluators: [{ evaluatorId: GOAL }],
    });
    await rt.control.send(new DeleteOnlineEvaluationConfigCommand({ onlineEvaluationConfigId: id }));
    const gone = await rt.control
      .send(new GetOnlineEvaluationConfigCommand({ onlineEvaluationConfigId: id }))
      .catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(ResourceNotFoundException);
    expect(
      (await rt.control.send(new ListOnlineEvaluationConfigsCommand({}))).onlineEvaluationConfigs,
    ).toEqual([]);
  });

  it(
    'keeps a rule over a restart and judges the sessions that ended while it was down, each once',
    { timeout: 90_000 },
    async () => {
      // An hour old: ended before the rule existed, never judged.
      await ingest(weatherSession('online-old', [FORECAST_TURN], 900));
      const created = await rt.control.send(new CreateOnlineEvaluationConfigCommand(config('restart_rule')));
      const id = created.onlineEvaluationConfigId!;
      await new Promise((r) => setTimeout(r, 500)); // sessions whose last span starts after the rule exists
      const before = ['online-a1', 'online-a2', 'online-a3'];
      await ingest([
        ...before.flatMap((s, i) => sessionEndingAt(s, 910 + i, Date.now())),
        ...sessionEndingAt('online-other-service', 920, Date.now(), 'billing'),
      ]);
      await waitFor(async () => (await judged(id)).size === before.length, 20_000);

      await rt.close();
      const during = ['online-b1', 'online-b2', 'online-b3', 'online-b4'];
      await ingest(during.flatMap((s, i) => sessionEndingAt(s, 930 + i, Date.now())));
      await new Promise((r) => setTimeout(r, 2_000)); // past the rule's 1.5 s: ended while it was down
      rt = await start();

      const listed = await rt.control.send(new ListOnlineEvaluationConfigsCommand({}));
      expect(listed.onlineEvaluationConfigs?.map((c) => c.onlineEvaluationConfigId)).toEqual([id]);
      await waitFor(async () => (await judged(id)).size === before.length + during.length, 20_000);
      await new Promise((r) => setTimeout(r, 1_500)); // more passes: nothing judged twice
      const counts = await judged(id);
      expect(Object.fromEntries(counts)).toEqual(
        Object.fromEntries([...before, ...during].map((s) => [s, 1])),
      );
    },
  );

  it('a disabled rule judges nothing; enabled (UpdateOnlineEvaluationConfig), it judges what ended since it was made', async () => {
    const created = await rt.control.send(
      new CreateOnlineEvaluationConfigCommand(config('paused_rule', { enableOnCreate: false })),
    );
    const id = created.onlineEvaluationConfigId!;
    expect(created.executionStatus).toBe('DISABLED');
    await new Promise((r) => setTimeout(r, 500));
    const ids = ['online-p1', 'online-p2'];
    await ingest(ids.flatMap((s, i) => sessionEndingAt(s, 940 + i, Date.now())));
    await new Promise((r) => setTimeout(r, 2_500)); // complete, and many passes
    expect(await judged(id)).toEqual(new Map());
    await rt.control.send(
      new UpdateOnlineEvaluationConfigCommand({ onlineEvaluationConfigId: id, executionStatus: 'ENABLED' }),
    );
    await waitFor(async () => (await judged(id)).size === ids.length, 20_000);
    expect(Object.fromEntries(await judged(id))).toEqual({ 'online-p1': 1, 'online-p2': 1 });
  }, 60_000);
});
