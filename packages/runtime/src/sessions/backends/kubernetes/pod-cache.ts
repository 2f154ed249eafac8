// The router's view of session pods: an informer (list, then watch from its resourceVersion) of the
// pods agentrt manages in its namespace, so a session's pod, its IP and its readiness are read from
// memory, never polled. A cut watch is resumed from where it was; a 410 relists (client-node).
import { type CoreV1Api, type KubeConfig, type V1Pod, makeInformer } from '@kubernetes/client-node';
import { type Logger } from '../../../logger.js';
import { ANNOTATIONS, LABELS, MANAGED_BY, labelValue, sessionHash } from './pod-spec.js';

type Listener = (pod: V1Pod, deleted: boolean) => void;

export interface PodCache {
  get(name: string): V1Pod | undefined;
  /**
   * The live pod serving session `sessionId` of runtime `runtimeId`, whichever replica made or
   * claimed it: looked up by its labels (runtime, session hash), its annotation checked against
   * the id; of several (a worker being replaced), the newest. Read from memory, never from the API.
   */
  session(runtimeId: string, sessionId: string): V1Pod | undefined;
  all(): V1Pod[];
  /** Calls `listener` on every change of pod `name` until it returns true or the call it returns is made. */
  follow(name: string, listener: (pod: V1Pod, deleted: boolean) => boolean): () => void;
  /** Resolves once the first list is in. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** Restart delay after the watch failed (API server unreachable): doubled up to 5 s. */
const RETRY_MS = { first: 200, max: 5000 };

export function createPodCache(kc: KubeConfig, core: CoreV1Api, namespace: string, logger: Logger): PodCache {
  const selector = `${LABELS.managedBy}=${MANAGED_BY}`;
  const list = () => core.listNamespacedPod({ namespace, labelSelector: selector });
  const informer = makeInformer(kc, `/api/v1/namespaces/${namespace}/pods`, list, selector);
  const listeners = new Map<string, Set<Listener>>();
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
  let closed = false;
  let retry = RETRY_MS.first;
  const emit = (pod: V1Pod, deleted: boolean) => {
    retry = RETRY_MS.first;
    index(pod, deleted);
    for (const listener of listeners.get(pod.metadata?.name ?? '') ?? []) listener(pod, deleted);
  };
  informer.on('add', (pod) => emit(pod, false));
  informer.on('update', (pod) => emit(pod, false));
  informer.on('delete', (pod) => emit(pod, true));
  informer.on('error', (error: unknown) => {
    if (closed) return;
    logger.warn('kubernetes: pod watch failed; resuming', { error: String(error), retryMs: retry });
    setTimeout(() => void informer.start().catch(() => undefined), retry).unref();
    retry = Math.min(retry * 2, RETRY_MS.max);
  });
  const started = informer.start();
  return {
    get: (name) => informer.get(name, namespace),
    session(runtimeId, sessionId) {
      const names = bySession.get(sessionKey(labelValue(runtimeId), sessionHash(sessionId))) ?? [];
      let found: V1Pod | undefined;
      for (const name of names) {
        const pod = informer.get(name, namespace);
        if (!pod || pod.metadata?.deletionTimestamp) continue;
        if (pod.metadata?.annotations?.[ANNOTATIONS.sessionId] !== sessionId) continue;
        if (!found || createdMs(pod) >= createdMs(found)) found = pod;
      }
      return found;
    },
    all: () => [...informer.list(namespace)],
    follow(name, listener) {
      const set = listeners.get(name) ?? new Set<Listener>();
      listeners.set(name, set);
      const wrapped: Listener = (pod, deleted) => {
        if (listener(pod, deleted)) stop();
      };
      const stop = () => {
        set.delete(wrapped);
        if (set.size === 0) listeners.delete(name);
      };
      set.add(wrapped);
      return stop;
    },
    ready: () => started,
    async close() {
      closed = true;
      await informer.stop();
    },
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
