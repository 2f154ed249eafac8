// Pods mode's warm pools: warm pods (label agentrt.dev/pool=warm) the keeper makes and deletes on
// the Lease holder, claimed by any replica for a new session with a label patch that carries the
// resourceVersion it read: of two replicas claiming one pod, the API server lets one through and
// the other (409) tries the next ready one.
import { randomInt } from 'node:crypto';
import { type CoreV1Api, PatchStrategy, type V1Pod, setHeaderOptions } from '@kubernetes/client-node';
import { type Logger } from '../../../logger.js';
import { type SessionTarget } from '../../backend.js';
import { containerEnv } from '../../container-env.js';
import { apiFailure, statusOf } from './kube-client.js';
import { type PodCache, isReady } from './pod-cache.js';
import {
  ANNOTATIONS,
  LABELS,
  POD_PORT,
  type PodSettings,
  labelValue,
  sessionHash,
  sessionPod,
} from './pod-spec.js';
import { type ClusterDemand, type ClusterPools, poolKey, targetKey } from './warm-keeper.js';

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export interface WarmPodsOptions {
  cache: PodCache;
  core: CoreV1Api;
  settings: PodSettings;
  writes: { value: number };
  logger: Logger;
}

const keyOfPod = (pod: V1Pod) =>
  poolKey(pod.metadata?.labels?.[LABELS.runtime] ?? '', pod.metadata?.labels?.[LABELS.version] ?? '');
const isWarm = (pod: V1Pod) =>
  pod.metadata?.labels?.[LABELS.pool] === 'warm' && !pod.metadata.deletionTimestamp;

export interface WarmPods extends ClusterPools {
  /** Claims a ready warm pod of the version for the session; its name, or none when none is left. */
  claim(target: SessionTarget, sessionId: string): Promise<string | undefined>;
  /** Ready, unclaimed warm pods of the runtime (its label value). */
  count(runtimeLabel: string): number;
  /** Feeds `demand` from the cache: each pod that became a session's (made for it, or claimed). */
  hear(demand: ClusterDemand, then: () => void): void;
}

export function createWarmPods({ cache, core, settings, writes, logger }: WarmPodsOptions): WarmPods {
  const { namespace } = settings;
  /** Warm pods created but not yet in the cache, per version key: the keeper counts them. */
  const pending = new Map<string, Set<string>>();
  /** Runtime labels of the pools kept here: a runtime gone from the targets loses its warm pods. */
  const known = new Set<string>();
  const warmOf = (key: string) => cache.all().filter((p) => isWarm(p) && keyOfPod(p) === key);

  const make = async (target: SessionTarget, worker: Parameters<WarmPods['keep']>[2], key: string) => {
    const env = containerEnv(worker.env(POD_PORT, false), target.runtime.name);
    const slot = randomInt(2 ** 47); // unique whichever replica leads: a name is never reused
    const pod = sessionPod({
      target,
      for: { kind: 'warm', slot },
      env,
      healthCheck: worker.healthCheck,
      settings,
    });
    const name = pod.metadata?.name ?? '';
    const names = pending.get(key) ?? new Set<string>();
    pending.set(key, names.add(name));
    writes.value++;
    await core.createNamespacedPod({ namespace, body: pod }).catch((error: unknown) => {
      names.delete(name);
      logger.warn('kubernetes: warm pod not made', { pod: name, error: String(error) });
    });
  };

  const remove = async (pod: V1Pod) => {
    writes.value++;
    const name = pod.metadata?.name ?? '';
    await core.deleteNamespacedPod({ name, namespace }).catch((error: unknown) => {
      if (statusOf(error) !== 404) throw apiFailure(`deleting warm pod ${name}`, error);
    });
  };

  // A pod the cache now has is no longer pending.
  cache.onChange((pod) => pending.get(keyOfPod(pod))?.delete(pod.metadata?.name ?? ''));

  return {
    async keep(target, replicas, worker) {
      const key = targetKey(target);
      const warm = warmOf(key);
      const have = warm.length + (pending.get(key)?.size ?? 0);
      const making = Array.from({ length: Math.max(0, replicas - have) }, () => make(target, worker, key));
      // Extra ones go, those not yet ready first.
      const extra = warm
        .sort((a, b) => Number(isReady(a)) - Number(isReady(b)))
        .slice(0, Math.max(0, have - replicas));
      await Promise.all([...making, ...extra.map(remove)]);
    },
    async prune(kept) {
      // Only runtimes this keeper kept pools of: another installation may share the namespace.
      const keys = new Set(kept.map(targetKey));
      for (const t of kept) known.add(labelValue(t.runtime.id));
      const doomed = cache.all().filter((p) => {
        const runtime = p.metadata?.labels?.[LABELS.runtime] ?? '';
        return isWarm(p) && known.has(runtime) && !keys.has(keyOfPod(p));
      });
      await Promise.all(doomed.map(remove));
    },
    async claim(target, sessionId) {
      const ready = warmOf(targetKey(target)).filter(isReady);
      // Replicas start at different pods, so concurrent claims seldom meet on one.
      const first = ready.length > 0 ? randomInt(ready.length) : 0;
      for (const pod of [...ready.slice(first), ...ready.slice(0, first)]) {
        const name = pod.metadata?.name ?? '';
        const body = {
          metadata: {
            resourceVersion: pod.metadata?.resourceVersion,
            labels: { [LABELS.pool]: null, [LABELS.sessionHash]: sessionHash(sessionId) },
            annotations: {
              [ANNOTATIONS.sessionId]: sessionId,
              [ANNOTATIONS.claimedAtMs]: String(Date.now()),
            },
          },
        };
        writes.value++;
        const claimed = await core.patchNamespacedPod({ name, namespace, body }, merge).then(
          () => true,
          (error: unknown) => {
            const status = statusOf(error);
            if (status === 409 || status === 404) return false; // another replica took it, or it went
            throw apiFailure(`claiming warm pod ${name}`, error);
          },
        );
        if (claimed) return name;
      }
      return undefined;
    },
    count: (runtimeLabel) =>
      cache
        .all()
        .filter((p) => isWarm(p) && isReady(p) && p.metadata?.labels?.[LABELS.runtime] === runtimeLabel)
        .length,
    hear(demand, then) {
      const counted = new Set<string>();
      cache.onChange((pod, deleted) => {
        const name = pod.metadata?.name ?? '';
        if (deleted) return void counted.delete(name);
        if (!pod.metadata?.labels?.[LABELS.sessionHash] || counted.has(name)) return;
        counted.add(name);
        const claimedMs = Number(pod.metadata.annotations?.[ANNOTATIONS.claimedAtMs]);
        const atMs = claimedMs || new Date(pod.metadata.creationTimestamp ?? Date.now()).getTime();
        demand.heard(keyOfPod(pod), atMs);
        then();
      });
    },
  };
}
