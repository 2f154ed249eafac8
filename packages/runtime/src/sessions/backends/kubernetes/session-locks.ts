// Pods mode's per-session claim, as agent-sandbox's SandboxClaim is (one claim per session id,
// bound to one sandbox): the replica that starts a new session first makes the session's Lease
// (create-only, named as the session's cold pod), starts its pod (a warm one it claims, or a cold
// one) and names that pod on the Lease, which the pod then owns (the garbage collector deletes the
// Lease with the pod). A replica that finds the Lease made joins the pod it names once it is
// named: two replicas racing on one session id get one pod, warm or cold. A Lease whose pod is gone,
// or that no pod was named on within `staleMs` (AGENTRT_K8S_SESSION_LEASE_MS; its replica died),
// is taken over with the resourceVersion it was read at (409: another replica took it first).
import {
  CoordinationV1Api,
  type CoreV1Api,
  type KubeConfig,
  type V1Lease,
  V1MicroTime,
  type V1Pod,
} from '@kubernetes/client-node';
import { apiFailure, statusOf } from './kube-client.js';
import { ANNOTATIONS, LABELS, MANAGED_BY, sessionPodName } from './pod-spec.js';

/** How often a replica waiting for the holder's pod reads the Lease again. */
const POLL_MS = 100;

/** This replica starts the session (`lease`), or another did: its pod (`pod`) serves it. */
export type SessionClaim = { lease: V1Lease } | { pod: V1Pod };

export interface SessionLocks {
  take(runtimeId: string, sessionId: string): Promise<SessionClaim>;
  /** Names the session's pod on its Lease; the pod owns the Lease from then on. */
  bind(lease: V1Lease, podName: string): Promise<void>;
  /** Deletes a Lease no pod was started for (the start failed): the next start need not wait. */
  release(lease: V1Lease): Promise<void>;
}

export interface SessionLocksOptions {
  kc: KubeConfig;
  core: CoreV1Api;
  namespace: string;
  writes: { value: number };
  /** How long a Lease may name no pod before another replica takes it over. */
  staleMs: number;
}

/** Whether the pod serves the session still: not deleted, not ended, annotated with its id. */
const serves = (pod: V1Pod, sessionId: string) =>
  !pod.metadata?.deletionTimestamp &&
  pod.metadata?.annotations?.[ANNOTATIONS.sessionId] === sessionId &&
  !['Failed', 'Succeeded'].includes(pod.status?.phase ?? '');

export function createSessionLocks({
  kc,
  core,
  namespace,
  writes,
  staleMs,
}: SessionLocksOptions): SessionLocks {
  const api = kc.makeApiClient(CoordinationV1Api);
  const unclaimed = (name: string, held?: V1Lease): V1Lease => ({
    metadata: { ...held?.metadata, name, labels: { [LABELS.managedBy]: MANAGED_BY }, ownerReferences: [] },
    spec: { acquireTime: new V1MicroTime(Date.now()) },
  });
  /** Writes the Lease (create-only, or over the one read); none when another replica wrote first. */
  const write = async (name: string, held?: V1Lease): Promise<V1Lease | undefined> => {
    writes.value++;
    const body = unclaimed(name, held);
    const sent = held
      ? api.replaceNamespacedLease({ name, namespace, body })
      : api.createNamespacedLease({ namespace, body });
    return sent.catch((error: unknown) => {
      if (statusOf(error) === 409 || statusOf(error) === 404) return undefined;
      throw apiFailure(`claiming session Lease ${name}`, error);
    });
  };
  const read = <T>(reading: Promise<T>, what: string) =>
    reading.catch((error: unknown) => {
      if (statusOf(error) === 404) return undefined;
      throw apiFailure(`reading ${what}`, error);
    });
  /** The pod the held Lease names when it serves the session; 'stale' to take over; else 'wait'. */
  const judge = async (held: V1Lease, sessionId: string): Promise<V1Pod | 'stale' | 'wait'> => {
    const holder = held.spec?.holderIdentity;
    if (holder) {
      const pod = await read(core.readNamespacedPod({ name: holder, namespace }), `pod ${holder}`);
      return pod && serves(pod, sessionId) ? pod : 'stale';
    }
    const since = new Date(held.spec?.acquireTime ?? held.metadata?.creationTimestamp ?? 0).getTime();
    return Date.now() - since > staleMs ? 'stale' : 'wait';
  };

  return {
    async take(runtimeId, sessionId) {
      const name = sessionPodName(runtimeId, sessionId);
      for (;;) {
        const made = await write(name);
        if (made) return { lease: made };
        const held = await read(api.readNamespacedLease({ name, namespace }), `session Lease ${name}`);
        const verdict = held ? await judge(held, sessionId) : 'gone';
        if (typeof verdict === 'object') return { pod: verdict };
        const taken = verdict === 'stale' ? await write(name, held) : undefined;
        if (taken) return { lease: taken };
        if (verdict === 'wait') await new Promise((r) => setTimeout(r, POLL_MS));
      }
    },
    async bind(lease, podName) {
      const name = lease.metadata?.name ?? '';
      const pod = await core.readNamespacedPod({ name: podName, namespace });
      const owner = { apiVersion: 'v1', kind: 'Pod', name: podName, uid: pod.metadata?.uid ?? '' };
      const body: V1Lease = {
        ...lease,
        metadata: { ...lease.metadata, ownerReferences: [owner] },
        spec: { ...lease.spec, holderIdentity: podName },
      };
      writes.value++;
      await api.replaceNamespacedLease({ name, namespace, body }).catch((error: unknown) => {
        throw apiFailure(`naming pod ${podName} on session Lease ${name}`, error);
      });
    },
    async release(lease) {
      const { name = '', resourceVersion } = lease.metadata ?? {};
      writes.value++;
      const body = { preconditions: { resourceVersion } };
      await api.deleteNamespacedLease({ name, namespace, body }).catch(() => undefined); // stale after staleMs anyway
    },
  };
}
