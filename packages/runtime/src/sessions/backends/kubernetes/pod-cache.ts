// The router's view of session pods: an informer (list, then watch from its resourceVersion) of the
// pods agentrt manages in its namespace, so a session's pod, its IP and its readiness are read from
// memory, never polled (informer-cache.ts).
import { type CoreV1Api, type KubeConfig, type V1Pod, makeInformer } from '@kubernetes/client-node';
import { parseRuntimeArn } from '../../../control/arn.js';
import { type Logger } from '../../../logger.js';
import { type InformerCache, createInformerCache } from './informer-cache.js';
import { ANNOTATIONS, LABELS, MANAGED_BY, labelValue, sessionHash } from './pod-spec.js';

export interface PodCache extends InformerCache<V1Pod> {
  /**
   * The live pod serving session `sessionId` of runtime `runtimeId`, whichever replica made or
   * claimed it: looked up by its labels (runtime, session hash), its annotation checked against
   * the id; of several (a worker being replaced), the newest. Read from memory, never from the API.
   */
  session(runtimeId: string, sessionId: string): V1Pod | undefined;
  /** Every live session a pod serves, whichever replica made or claimed it. */
  sessions(): { runtimeId: string; sessionId: string }[];
}

export function createPodCache(kc: KubeConfig, core: CoreV1Api, namespace: string, logger: Logger): PodCache {
  const selector = `${LABELS.managedBy}=${MANAGED_BY}`;
  const list = () => core.listNamespacedPod({ namespace, labelSelector: selector });
  const informer = makeInformer(kc, `/api/v1/namespaces/${namespace}/pods`, list, selector);
  /** Pod names by (runtime label, session hash label): the router's index. */
  const bySession = new Map<string, Set<string>>();
  const index = (pod: V1Pod, deleted: boolean) => {
    const labels = pod.metadata?.labels ?? {};
    const hash = labels[LABELS.sessionHash];
    const name = pod.metadata?.name ?? '';
    if (!hash) return; // an unclaimed warm pod: no session reaches it (a claim adds the label)
    const key = sessionKey(labels[LABELS.runtime] ?? '', hash);
    const names = bySession.get(key) ?? new Set<string>();
    if (deleted) names.delete(name);
    else names.add(name);
    if (names.size === 0) bySession.delete(key);
    else bySession.set(key, names);
  };
  const cache = createInformerCache(informer, { namespace, logger, what: 'pod', onEvent: index });
  return {
    ...cache,
    session(runtimeId, sessionId) {
      const names = bySession.get(sessionKey(labelValue(runtimeId), sessionHash(sessionId))) ?? [];
      let found: V1Pod | undefined;
      for (const name of names) {
        const pod = cache.get(name);
        if (!pod || pod.metadata?.deletionTimestamp) continue;
        if (pod.metadata?.annotations?.[ANNOTATIONS.sessionId] !== sessionId) continue;
        if (!found || createdMs(pod) >= createdMs(found)) found = pod;
      }
      return found;
    },
    sessions: () =>
      cache.all().flatMap((pod) => {
        const { labels = {}, annotations = {}, deletionTimestamp } = pod.metadata ?? {};
        const runtimeId = parseRuntimeArn(annotations[ANNOTATIONS.runtimeArn] ?? '')?.runtimeId;
        const sessionId = annotations[ANNOTATIONS.sessionId];
        if (!labels[LABELS.sessionHash] || deletionTimestamp || !runtimeId || !sessionId) return [];
        if (pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded') return [];
        return [{ runtimeId, sessionId }];
      }),
  };
}

const sessionKey = (runtimeLabel: string, hash: string) => `${runtimeLabel}\u0000${hash}`;
const createdMs = (pod: V1Pod) => new Date(pod.metadata?.creationTimestamp ?? 0).getTime();

export function isReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

/** The pod's end, or why it cannot start (an image pull failure), once it is known. */
export function podFailure(pod: V1Pod): string | undefined {
  const phase = pod.status?.phase;
  const state = pod.status?.containerStatuses?.[0]?.state;
  const waiting = state?.waiting?.reason;
  if (waiting === 'ErrImagePull' || waiting === 'ImagePullBackOff' || waiting === 'InvalidImageName')
    return `its image cannot be pulled (${waiting}: ${state?.waiting?.message ?? ''})`;
  if (waiting === 'CreateContainerError' || waiting === 'CreateContainerConfigError')
    return `its container cannot be created (${waiting}: ${state?.waiting?.message ?? ''})`;
  if (phase === 'Failed' || phase === 'Succeeded') {
    const code = state?.terminated?.exitCode;
    return `worker exited with ${code === undefined ? 'no exit code' : `code ${code}`} before answering /ping (pod phase ${phase})`;
  }
  return undefined;
}
