// Two runtime replicas as real processes (dist/main.js, AGENTRT_SESSIONS=kubernetes,
// AGENTRT_CONTROL_STORE=kubernetes) on one test API server and test kubelet: one is killed with
// SIGKILL in the middle of 20 session starts; once the survivor has reconciled, every pod serves a
// live session (one pod each) and none is orphaned, and kubectl agrees with ListAgentRuntimes and
// the survivor's active-session list.
import {
  CreateAgentRuntimeCommand,
  GetAgentRuntimeCommand,
  ListAgentRuntimesCommand,
} from '@aws-sdk/client-bedrock-agentcore-control';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntimeClient } from '../client.js';
import { sessionHash } from '../sessions/backends/kubernetes/pod-spec.js';
import { type TestCluster, startTestCluster, until } from '../test-support/k8s/test-cluster.js';
import { ROLE_ARN, fixtureUri, invokeJson, sdkClients, sessionId } from '../test-support.js';

const LEASE_S = 2;

let cluster: TestCluster;
const kubectl = (...args: string[]) => cluster.kubectl(...args);
const replica = (name: string) =>
  cluster.replicaProcess(name, {
    AGENTRT_K8S_LEASE_S: String(LEASE_S),
    AGENTRT_MAX_CONCURRENT_STARTS: '64',
  });

interface PodRow {
  metadata: { name: string; labels: Record<string, string> };
}
const pods = async (selector = 'app.kubernetes.io/managed-by=agentrt') =>
  (JSON.parse(await kubectl('get', 'pods', '-l', selector, '-o', 'json')) as { items: PodRow[] }).items;

beforeAll(async () => {
  cluster = await startTestCluster({ kubelet: true });
}, 60_000);
afterAll(async () => {
  await cluster?.close();
});

describe('a replica killed in the middle of 20 session starts', () => {
  it('leaves, once the other reconciled, one pod per live session and no orphan', async () => {
    const [a, b] = await Promise.all([replica('runtime-a'), replica('runtime-b')]);
    const sdkA = sdkClients(a.url, 'us-east-1', 'AKIDLOCAL', 1);
    const sdkB = sdkClients(b.url);
    const created = await sdkB.control.send(
      new CreateAgentRuntimeCommand({
        agentRuntimeName: 'survivor',
        agentRuntimeArtifact: { containerConfiguration: { containerUri: fixtureUri('counter') } },
        roleArn: ROLE_ARN,
        networkConfiguration: { networkMode: 'PUBLIC' },
      }),
    );
    const id = created.agentRuntimeId!;
    const arn = created.agentRuntimeArn!;
    for (const sdk of [sdkA, sdkB])
      expect(
        (
          await until(
            () => sdk.control.send(new GetAgentRuntimeCommand({ agentRuntimeId: id })).catch(() => undefined),
            (r) => r?.status === 'READY',
            20_000,
          )
        )?.status,
      ).toBe('READY');

    // Three sessions live on B.
    const onB = ['b-one', 'b-two', 'b-three'].map((label) => sessionId(label));
    for (const sid of onB) expect((await invokeJson(sdkB.data, arn, sid, {})).count).toBe(1);

    // Twenty session starts on A; A is killed once some of their pods exist.
    const onA = Array.from({ length: 20 }, (_, i) => sessionId(`a-start-${i}`));
    const starts = onA.map((sid) => invokeJson(sdkA.data, arn, sid, {}).catch((e: unknown) => e));
    const ofA = 'agentrt.dev/replica';
    await until(
      async () => (await pods()).filter((p) => p.metadata.labels[ofA]?.startsWith('runtime-a-')).length,
      (n) => n >= 5,
      30_000,
    );
    a.child.kill('SIGKILL');
    await Promise.all(starts);
    const leftByA = (await pods()).filter((p) => p.metadata.labels[ofA]?.startsWith('runtime-a-')).length;
    expect(leftByA).toBeGreaterThan(0);

    // B leads once A's Lease lapses, then reaps A's pods once A's heartbeat has lapsed too.
    const after = await until(
      () => pods(),
      (items) => items.every((p) => !p.metadata.labels[ofA]?.startsWith('runtime-a-')),
      12 * LEASE_S * 1000,
    );
    const live = await createRuntimeClient({ url: b.url }).activeSessions();
    expect(live.map((s) => s.sessionId).sort()).toEqual([...onB].sort());
    expect(after.map((p) => p.metadata.labels['agentrt.dev/session-hash']).sort()).toEqual(
      onB.map((sid) => sessionHash(sid)).sort(),
    );
    expect(await pods(`agentrt.dev/runtime=${id}`)).toHaveLength(onB.length);
    // The sessions on B still answer, from their own pods.
    for (const sid of onB) expect((await invokeJson(sdkB.data, arn, sid, {})).count).toBe(2);

    const listed = await sdkB.control.send(new ListAgentRuntimesCommand({}));
    const rows = JSON.parse(await kubectl('get', 'agentruntimes', '-o', 'json')) as {
      items: { spec: { id: string } }[];
    };
    expect(rows.items.map((r) => r.spec.id)).toEqual(listed.agentRuntimes?.map((r) => r.agentRuntimeId));
    expect(
      JSON.parse(await kubectl('get', 'lease', 'agentrt-leader', '-o', 'json')).spec.holderIdentity,
    ).toBe('runtime-b');
    for (const sdk of [sdkA, sdkB]) {
      sdk.control.destroy();
      sdk.data.destroy();
    }
  }, 120_000);
});
