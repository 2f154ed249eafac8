// A new session's Lease (session-locks.ts) when the replica that made it is gone or still serving,
// on the test API server and test kubelet: a Lease a replica made and died before naming a pod is
// taken over once it is older than AGENTRT_K8S_SESSION_LEASE_MS, and the session served from
// exactly one pod; a Lease naming a live pod of the session is joined, however old; one naming a
// pod that is gone is taken over at once. Driven through the AWS SDK, kubectl and client-node.
import { CoordinationV1Api, KubeConfig, type V1Lease, V1MicroTime } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestCluster, startTestCluster } from '../../../test-support/k8s/test-cluster.js';
import { type TestRuntime, createReady, invokeJson, sessionId } from '../../../test-support.js';
import { LABELS, MANAGED_BY, sessionPodName, sessionSelector } from './pod-spec.js';
import { createSessionLocks } from './session-locks.js';

/** The bound under test: well above a pod start here, well below the hold budget and test timeout. */
const STALE_MS = 4_000;

let cluster: TestCluster;
let replica: TestRuntime;
let leases: CoordinationV1Api;
let kc: KubeConfig;

beforeAll(async () => {
  cluster = await startTestCluster({ kubelet: true });
  replica = await cluster.replica('runtime-b', {
    kubernetesSessionLeaseMs: STALE_MS,
    kubernetesHoldMs: 40_000,
    leaseSeconds: 2,
  });
  kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfig);
  leases = kc.makeApiClient(CoordinationV1Api);
}, 60_000);
afterAll(async () => {
  await cluster?.close();
});

const namespace = () => cluster.namespace;

/** The session's Lease as a replica makes it before it names a pod (session-locks.ts `unclaimed`). */
const leaseOfDeadReplica = (runtimeId: string, sid: string, holder?: string): V1Lease => ({
  metadata: { name: sessionPodName(runtimeId, sid), labels: { [LABELS.managedBy]: MANAGED_BY } },
  spec: { acquireTime: new V1MicroTime(Date.now()), ...(holder ? { holderIdentity: holder } : {}) },
});

const podsOf = async (runtimeId: string, sid: string) =>
  (
    JSON.parse(await cluster.kubectl('get', 'pods', '-l', sessionSelector(runtimeId, sid), '-o', 'json')) as {
      items: { metadata: { name: string; resourceVersion: string } }[];
    }
  ).items;

const readLease = (name: string) => leases.readNamespacedLease({ name, namespace: namespace() });

describe("a session's Lease left by a replica that died mid-start", () => {
  it('holds the session back until it is older than the bound, then is taken over: one pod serves', async () => {
    const runtime = await createReady(replica.control, 'stale_lease', 'counter');
    const id = runtime.agentRuntimeId!;
    const sid = sessionId('stale-lease');
    const body = leaseOfDeadReplica(id, sid);
    await leases.createNamespacedLease({ namespace: namespace(), body });
    const began = Date.now();
    const answer = await invokeJson(replica.data, runtime.agentRuntimeArn!, sid, {});
    const waited = Date.now() - began;
    expect(answer.count).toBe(1);
    // Not before the bound (it counts from the Lease's acquireTime, set just before `began`).
    expect(waited).toBeGreaterThanOrEqual(STALE_MS - 500);
    const pods = await podsOf(id, sid);
    expect(pods).toHaveLength(1);
    const lease = await readLease(body.metadata!.name!);
    expect(lease.spec?.holderIdentity).toBe(pods[0]!.metadata.name);
    expect(lease.metadata?.ownerReferences?.map((o) => o.name)).toEqual([pods[0]!.metadata.name]);
    // The session is served from that pod from then on.
    expect((await invokeJson(replica.data, runtime.agentRuntimeArn!, sid, {})).count).toBe(2);
    expect(await podsOf(id, sid)).toHaveLength(1);
  }, 90_000);
});

describe("a session's Lease, read by a replica starting the same session", () => {
  const locks = (staleMs: number) =>
    createSessionLocks({ kc, core: cluster.core, namespace: namespace(), writes: { value: 0 }, staleMs });

  it('is joined when it names a live pod of the session, however old the Lease is', async () => {
    const runtime = await createReady(replica.control, 'live_lease', 'counter');
    const id = runtime.agentRuntimeId!;
    const sid = sessionId('live-lease');
    expect((await invokeJson(replica.data, runtime.agentRuntimeArn!, sid, {})).count).toBe(1);
    const [pod] = await podsOf(id, sid);
    const name = sessionPodName(id, sid);
    const before = await readLease(name);
    expect(before.spec?.holderIdentity).toBe(pod!.metadata.name);
    // A bound of 1 ms: any Lease without a named, serving pod would be taken over.
    await new Promise((r) => setTimeout(r, 20));
    const claim = await locks(1).take(id, sid);
    expect('pod' in claim && claim.pod.metadata?.name).toBe(pod!.metadata.name);
    expect((await readLease(name)).metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    expect((await invokeJson(replica.data, runtime.agentRuntimeArn!, sid, {})).count).toBe(2);
    expect(await podsOf(id, sid)).toHaveLength(1);
  }, 60_000);

  it('is taken over at once when the pod it names is gone, and not before the bound when it names none', async () => {
    const sid = sessionId('gone-pod');
    const runtimeId = 'gone_pod-0123456789';
    const name = sessionPodName(runtimeId, sid);
    await leases.createNamespacedLease({
      namespace: namespace(),
      body: leaseOfDeadReplica(runtimeId, sid, `${name}-deleted`),
    });
    const began = Date.now();
    const claim = await locks(60_000).take(runtimeId, sid);
    expect(Date.now() - began).toBeLessThan(5_000);
    expect('lease' in claim && claim.lease.spec?.holderIdentity).toBeFalsy();
    // That Lease now names no pod: another start waits the bound out, then takes it over.
    const other = locks(1_500);
    const second = Date.now();
    const taken = await other.take(runtimeId, sid);
    expect(Date.now() - second).toBeGreaterThanOrEqual(1_000);
    expect('lease' in taken).toBe(true);
    if ('lease' in claim && 'lease' in taken)
      expect(Number(taken.lease.metadata?.resourceVersion)).toBeGreaterThan(
        Number(claim.lease.metadata?.resourceVersion),
      );
  }, 30_000);
});
