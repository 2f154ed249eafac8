// Online evaluation rules on two runtime replicas sharing one Kubernetes control store: a rule made
// through either is a ConfigMap both see, and only the replica holding the leader Lease runs it,
// so each completed session is judged once, not once per replica.
import {
  CreateOnlineEvaluationConfigCommand,
  ListOnlineEvaluationConfigsCommand,
} from '@aws-sdk/client-bedrock-agentcore-control';
import { spansToOtlpJson } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCollector } from '../../../../../collector/src/testing.test-util.js';
import { FORECAST_TURN, weatherSession } from '../../evaluate/weather-sessions.test-util.js';
import { type TestCluster, startTestCluster } from '../../test-support/k8s/test-cluster.js';
import { ROLE_ARN, type TestRuntime, waitFor } from '../../test-support.js';

let cluster: TestCluster;
let collector: Awaited<ReturnType<typeof startCollector>>;
let a: TestRuntime;
let b: TestRuntime;

beforeAll(async () => {
  collector = await startCollector();
  cluster = await startTestCluster();
  const options = {
    evaluation: {
      judge: { provider: 'offline' as const, timeoutMs: 5000 },
      collector: { url: collector.url },
    },
    onlineEvaluationIntervalMs: 100,
    leaseSeconds: 3,
  };
  [a, b] = await Promise.all([cluster.replica('runtime-a', options), cluster.replica('runtime-b', options)]);
}, 60_000);
afterAll(async () => {
  await cluster?.close();
  await collector?.cleanup();
});

/** Results stored per session under the rule's run. */
async function judged(configId: string): Promise<Record<string, number>> {
  const query = `filter attributes.agentrt.evaluation.run_id = "online-${configId}" | stats count(*) as n by attributes.session.id as session`;
  const res = await fetch(`${collector.url}/api/query`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const { rows } = (await res.json()) as { rows: { session: string; n: number }[] };
  return Object.fromEntries(rows.map((r) => [r.session, r.n]));
}

describe('online evaluation rules on two replicas, one Kubernetes control store', () => {
  it('a rule made on A is listed on B and in a ConfigMap, and judges each session once', async () => {
    const created = await a.control.send(
      new CreateOnlineEvaluationConfigCommand({
        onlineEvaluationConfigName: 'shared_rule',
        rule: {
          samplingConfig: { samplingPercentage: 100 },
          sessionConfig: { sessionTimeoutMinutes: 0.02 },
        },
        dataSourceConfig: { cloudWatchLogs: { logGroupNames: [], serviceNames: ['weather'] } },
        evaluators: [{ evaluatorId: 'Builtin.GoalSuccessRate' }],
        evaluationExecutionRoleArn: ROLE_ARN,
        enableOnCreate: true,
      }),
    );
    const id = created.onlineEvaluationConfigId!;
    await waitFor(
      async () =>
        (
          (await b.control.send(new ListOnlineEvaluationConfigsCommand({}))).onlineEvaluationConfigs ?? []
        ).some((c) => c.onlineEvaluationConfigId === id),
      10_000,
      'the rule on replica B',
    );
    const maps = await cluster.kubectl(
      'get',
      'configmaps',
      '-l',
      'agentrt.dev/record=onlineEvaluation',
      '-o',
      'name',
    );
    expect(maps.trim().split('\n')).toHaveLength(1);

    await new Promise((r) => setTimeout(r, 300)); // sessions that end after the rule exists
    const ids = Array.from({ length: 8 }, (_, i) => `replicas-online-${i}`);
    const nowNs = Date.now() * 1e6;
    const spans = ids.flatMap((sid, i) => {
      const session = weatherSession(sid, [FORECAST_TURN], 960 + i);
      const shift = nowNs - Math.max(...session.map((s) => s.endTimeUnixNano));
      return session.map((s) => ({
        ...s,
        startTimeUnixNano: s.startTimeUnixNano + shift,
        endTimeUnixNano: s.endTimeUnixNano + shift,
      }));
    });
    const res = await fetch(`${collector.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(spansToOtlpJson(spans)),
    });
    expect(res.status).toBe(200);
    await waitFor(
      async () => Object.keys(await judged(id)).length === ids.length,
      20_000,
      'every session judged',
    );
    await new Promise((r) => setTimeout(r, 1500)); // many passes of both replicas
    expect(await judged(id)).toEqual(Object.fromEntries(ids.map((sid) => [sid, 1])));
  }, 60_000);
});
