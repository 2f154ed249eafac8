// What two runtime replicas on one test API server and test kubelet share, through the AWS SDK and
// kubectl: one warm pool, kept by the Lease holder alone and claimed by either (a warm pod is never
// claimed twice, however many claims race); one pod when both start the same new session at the
// same moment, cold or warm (the session's Lease: the second joins the first's pod); and one list of the live sessions, whichever
// replica started them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntimeClient } from '../../../client.js';
import { type TestCluster, startTestCluster, until } from '../../../test-support/k8s/test-cluster.js';
import { type TestRuntime, createReady, invokeJson, sessionId } from '../../../test-support.js';
import { LABELS, labelValue, sessionPodName, sessionSelector } from './pod-spec.js';

let cluster: TestCluster;
let a: TestRuntime;
let b: TestRuntime;

const WARM = 3;

beforeAll(async () => {
  cluster = await startTestCluster({ kubelet: true });
  // Warm pools sized by demand alone (floor 0): a runtime nobody started sessions of has none.
  const options = { leaseSeconds: 2, warmPoolSize: 0, warmPoolMax: WARM, pingIntervalMs: 500 };
  a = await cluster.replica('runtime-a', options);
  b = await cluster.replica('runtime-b', options);
}, 60_000);
afterAll(async () => {
  await cluster?.close();
});

interface PodRow {
  metadata: { name: string; labels: Record<string, string>; annotations: Record<string, string> };
  status?: { conditions?: { type: string; status: string }[] };
}
const podsWhere = async (selector: string) =>
  (JSON.parse(await cluster.kubectl('get', 'pods', '-l', selector, '-o', 'json')) as { items: PodRow[] })
    .items;
const ready = (p: PodRow) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
const warmPods = (runtimeId: string) =>
  podsWhere(`${LABELS.runtime}=${labelValue(runtimeId)},${LABELS.pool}=warm`);
const leaderName = async () =>
  (
    JSON.parse(await cluster.kubectl('get', 'lease', 'agentrt-leader', '-o', 'json')) as {
      spec: { holderIdentity: string };
    }
  ).spec.holderIdentity;

describe('the warm pool of two replicas', () => {
  it('is kept by the Lease holder alone, claimed by either, and no warm pod is claimed twice', async () => {
    const runtime = await createReady(a.control, 'shared_pool', 'counter');
    const id = runtime.agentRuntimeId!;
    const arn = runtime.agentRuntimeArn!;
    // Demand: three sessions, one on A, two on B; the leader hears them all (a pool of three).
    for (const [i, r] of [a, b, b].entries()) await invokeJson(r.data, arn, sessionId(`demand-${i}`), {});
    const full = await until(
      () => warmPods(id),
      (p) => p.filter(ready).length === WARM,
      20_000,
    );
    expect(full.filter(ready)).toHaveLength(WARM);
    // One keeper: after a few more of its passes, still the pool's size (not one pool per replica),
    // every warm pod made by the leader.
    await new Promise((r) => setTimeout(r, 1500));
    const kept = await warmPods(id);
    expect(kept).toHaveLength(WARM);
    const leader = await leaderName();
    for (const pod of kept) expect(pod.metadata.labels[LABELS.replica]).toMatch(new RegExp(`^${leader}-`));

    // The replica that does not lead claims a warm pod too.
    const follower = leader === 'runtime-a' ? b : a;
    const first = sessionId('claimed-by-follower');
    expect((await invokeJson(follower.data, arn, first, {})).count).toBe(1);
    const claimed = follower.server.sessions().find((s) => s.sessionId === first);
    expect(claimed?.warm).toBe(true);
    expect(kept.map((p) => p.metadata.name)).toContain(claimed?.worker?.podName);

    // Refilled by the keeper, then twice as many new sessions as warm pods at once, half on each.
    await until(
      () => warmPods(id),
      (p) => p.filter(ready).length === WARM,
      20_000,
    );
    const burst = Array.from({ length: 2 * WARM }, (_, i) => sessionId(`burst-${i}`));
    const answers = await Promise.all(burst.map((sid, i) => invokeJson((i % 2 ? a : b).data, arn, sid, {})));
    // Each session its own worker: a pod claimed twice would answer its second session with 2.
    expect(answers.map((r) => r.count)).toEqual(burst.map(() => 1));
    const podsOfBurst = await Promise.all(burst.map((sid) => podsWhere(sessionSelector(id, sid))));
    expect(podsOfBurst.map((p) => p.length)).toEqual(burst.map(() => 1));
    const names = podsOfBurst.map((p) => p[0]!.metadata.name);
    expect(new Set(names).size).toBe(burst.length);
    podsOfBurst.forEach((p, i) =>
      expect(p[0]!.metadata.annotations['agentrt.dev/session-id']).toBe(burst[i]),
    );
    const warmOnes = [a, b].flatMap((r) =>
      r.server.sessions().filter((s) => burst.includes(s.sessionId) && s.warm && !s.adopted),
    );
    expect(warmOnes.length).toBeGreaterThan(0);
    expect(warmOnes.length).toBeLessThanOrEqual(WARM);
  }, 90_000);
});

describe('the same new session started on both replicas at the same moment', () => {
  it('makes one pod, which answers both', async () => {
    for (let round = 0; round < 2; round++) {
      // A new runtime each round: no demand yet, no warm pod, both starts go cold.
      const runtime = await createReady(b.control, `cold_race_${round}`, 'counter');
      const id = runtime.agentRuntimeId!;
      const arn = runtime.agentRuntimeArn!;
      expect(await warmPods(id)).toHaveLength(0);
      const sid = sessionId(`race-${round}`);
      const [onA, onB] = await Promise.all([
        invokeJson(a.data, arn, sid, {}),
        invokeJson(b.data, arn, sid, {}),
      ]);
      const pods = await podsWhere(sessionSelector(id, sid));
      expect(pods).toHaveLength(1);
      // One worker's memory answered both (two pods would answer 1 and 1).
      expect([onA.count, onB.count].sort()).toEqual([1, 2]);
      expect(a.server.sessions().find((s) => s.sessionId === sid)?.worker?.podName).toBe(
        pods[0]!.metadata.name,
      );
      expect(b.server.sessions().find((s) => s.sessionId === sid)?.worker?.podName).toBe(
        pods[0]!.metadata.name,
      );
    }
  }, 90_000);
});

describe('the same new session started on both replicas at the same moment, warm pods ready', () => {
  it('takes one warm pod, which answers both', async () => {
    const runtime = await createReady(a.control, 'warm_race', 'counter');
    const id = runtime.agentRuntimeId!;
    const arn = runtime.agentRuntimeArn!;
    for (const [i, r] of [a, b, a].entries())
      await invokeJson(r.data, arn, sessionId(`warm-demand-${i}`), {});
    for (let round = 0; round < 3; round++) {
      // Two ready warm pods at least: each replica could claim its own.
      await until(
        () => warmPods(id),
        (p) => p.filter(ready).length >= 2,
        20_000,
      );
      const sid = sessionId(`warm-race-${round}`);
      const [onA, onB] = await Promise.all([
        invokeJson(a.data, arn, sid, {}),
        invokeJson(b.data, arn, sid, {}),
      ]);
      const pods = await podsWhere(sessionSelector(id, sid));
      expect(pods.map((p) => p.metadata.name)).toHaveLength(1);
      expect(pods[0]!.metadata.labels[LABELS.slot]).toBeDefined(); // a warm pod, claimed
      // The session's Lease names that pod and is owned by it (deleted with it).
      const lease = JSON.parse(
        await cluster.kubectl('get', 'lease', sessionPodName(id, sid), '-o', 'json'),
      ) as {
        metadata: { ownerReferences: { kind: string; name: string }[] };
        spec: { holderIdentity: string };
      };
      expect(lease.spec.holderIdentity).toBe(pods[0]!.metadata.name);
      expect(lease.metadata.ownerReferences).toMatchObject([{ kind: 'Pod', name: pods[0]!.metadata.name }]);
      expect([onA.count, onB.count].sort()).toEqual([1, 2]);
      for (const r of [a, b])
        expect(r.server.sessions().find((s) => s.sessionId === sid)?.worker?.podName).toBe(
          pods[0]!.metadata.name,
        );
    }
  }, 120_000);
});

describe('the live sessions', () => {
  it('are listed by every replica, also those it never served', async () => {
    const runtime = await createReady(a.control, 'listed', 'counter');
    const arn = runtime.agentRuntimeArn!;
    const onA = [sessionId('listed-1'), sessionId('listed-2')];
    for (const sid of onA) await invokeJson(a.data, arn, sid, {});
    const listedByB = await until(
      async () => (await createRuntimeClient({ url: b.server.url }).activeSessions()).map((s) => s.sessionId),
      (l) => onA.every((sid) => l.includes(sid)),
      5000,
    );
    expect(listedByB).toEqual(expect.arrayContaining(onA));
  }, 60_000);

  it("do not count against another replica's session cap", async () => {
    const c = await cluster.replica('runtime-c', { maxSessions: 2 });
    const runtime = await createReady(a.control, 'capped', 'counter');
    const arn = runtime.agentRuntimeArn!;
    for (const label of ['cap-1', 'cap-2']) await invokeJson(a.data, arn, sessionId(label), {});
    const listed = await until(
      async () => (await createRuntimeClient({ url: c.server.url }).activeSessions()).map((s) => s.sessionId),
      (l) => l.includes(sessionId('cap-2')),
      5000,
    );
    expect(listed).toEqual(expect.arrayContaining([sessionId('cap-1'), sessionId('cap-2')]));
    // C lists more sessions than its cap of 2, none of them its own: it still starts two.
    for (const label of ['cap-3', 'cap-4'])
      expect((await invokeJson(c.data, arn, sessionId(label), {})).count).toBe(1);
    const over = await invokeJson(c.data, arn, sessionId('cap-5'), {}).catch((e: unknown) => e);
    expect((over as Error).name).toBe('ServiceQuotaExceededException');
  }, 60_000);
});
