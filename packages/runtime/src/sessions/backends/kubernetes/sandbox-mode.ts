// The `kubernetes` session backend in `agent-sandbox` mode (AGENTRT_K8S_MODE=agent-sandbox): the
// same sessions as kubernetes-sigs/agent-sandbox objects, for clusters running its controller. Per
// runtime version a SandboxTemplate (pods mode's pod, no session in it) and a SandboxWarmPool the
// Lease holder's keeper sizes from every replica's claims (warm-keeper.ts); per session a
// SandboxClaim, which the controller binds to a warm-pool sandbox it adopts (launch type warm) or
// to one it makes (cold). The session is reached
// at the pod the claim's sandbox names, from informer caches; stop deletes the claim (keeping its
// session storage: sandbox-storage.ts).
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { type RuntimeConfig } from '../../../config.js';
import { type Logger } from '../../../logger.js';
import { parseRuntimeArn } from '../../../control/arn.js';
import { type SessionBackend, type SessionTarget, type SharedSession } from '../../backend.js';
import { ClaimWorker, type ClaimWorkerOptions } from './claim-worker.js';
import { loadKubeConfig, podCommand } from './kube-client.js';
import { type PodCache, createPodCache } from './pod-cache.js';
import { type ReapCandidate, activityWriter, createSessionReaper } from './session-reaper.js';
import { ANNOTATIONS, LABELS, labelValue, podSettingsOf, sessionHash } from './pod-spec.js';
import { type SandboxCache, createSandboxCache } from './sandbox-cache.js';
import { type SandboxObjects, createSandboxObjects } from './sandbox-objects.js';
import { keepStorage, resetStorage } from './sandbox-storage.js';
import { clusterStorage } from './storage-reaper.js';
import {
  SANDBOX_KEYS,
  type SandboxObject,
  conditionTrue,
  nameHash,
  storageClaimOf,
  warmPoolName,
} from './sandbox-spec.js';
import {
  type ClusterDemand,
  type ClusterPools,
  createClusterDemand,
  createWarmKeeper,
  poolKey,
} from './warm-keeper.js';

/** A session's claim another replica made, found in the claim cache. */
export interface FoundClaim extends SharedSession {
  worker: ClaimWorker;
}

/** The live claim of the session (by its labels, the id checked in its annotation); of several, the newest. */
function claimOf(cache: SandboxCache, runtimeId: string, sessionId: string): SandboxObject | undefined {
  const runtime = labelValue(runtimeId);
  const hash = sessionHash(sessionId);
  return cache.claims
    .all()
    .filter(
      (c) =>
        c.metadata.labels?.[LABELS.runtime] === runtime &&
        c.metadata.labels?.[LABELS.sessionHash] === hash &&
        c.metadata.annotations?.[ANNOTATIONS.sessionId] === sessionId &&
        !c.metadata.deletionTimestamp,
    )
    .sort((a, b) => createdMs(b) - createdMs(a))[0];
}

const createdMs = (o: SandboxObject) => new Date(o.metadata.creationTimestamp ?? 0).getTime();

/**
 * The SandboxWarmPools as the keeper sizes them (the controller makes their sandboxes). A runtime
 * whose version changed loses its older pools; a deleted one all of them.
 */
function clusterPoolsOf(objects: SandboxObjects): ClusterPools {
  const kept = new Map<string, number>();
  return {
    keep: (target, replicas, worker) => objects.resize(target, replicas, worker),
    async prune(targets) {
      const now = new Map(targets.map((t) => [t.runtime.id, t.version.version]));
      const gone = [...kept].filter(([runtimeId, version]) => now.get(runtimeId) !== version);
      for (const [runtimeId] of gone) kept.delete(runtimeId);
      for (const [runtimeId, version] of now) kept.set(runtimeId, version);
      await Promise.all(gone.map(([runtimeId]) => objects.drop(runtimeId, now.get(runtimeId))));
    },
  };
}

/** Ready, unclaimed warm sandboxes of the targets' pools. */
function warmCount(cache: SandboxCache, targets: SessionTarget[]): number {
  const pools = new Set(targets.map((t) => nameHash(warmPoolName(t))));
  return cache.sandboxes
    .all()
    .filter(
      (sandbox) =>
        pools.has(sandbox.metadata.labels?.[SANDBOX_KEYS.warmPool] ?? '') &&
        !sandbox.metadata.deletionTimestamp &&
        conditionTrue(sandbox, 'Ready'),
    ).length;
}

/** The reaper's view of the sessions: Ready claims bound to a pod, not being deleted. */
function claimCandidates(
  cache: SandboxCache,
  pods: PodCache,
  deleteClaim: (name: string) => Promise<void>,
): ReapCandidate[] {
  return cache.claims.all().flatMap((claim) => {
    if (claim.metadata.deletionTimestamp || !conditionTrue(claim, 'Ready')) return [];
    const sandbox = cache.sandboxes.get(claim.status?.sandbox?.name ?? '');
    const pod = pods.get(sandbox?.metadata.annotations?.[SANDBOX_KEYS.podName] ?? '');
    if (!pod) return [];
    const tcp = pod.spec?.containers[0]?.readinessProbe?.tcpSocket !== undefined;
    const remove = () => deleteClaim(claim.metadata.name);
    return [{ object: claim, kind: 'claim' as const, podIP: pod.status?.podIP, tcp, remove }];
  });
}

/** Feeds `demand` from the claim cache: each claim made, whichever replica made it. */
function hearClaims(cache: SandboxCache, demand: ClusterDemand, then: () => void): void {
  const counted = new Set<string>();
  cache.claims.onChange((claim, deleted) => {
    const name = claim.metadata.name;
    if (deleted) return void counted.delete(name);
    if (counted.has(name)) return;
    counted.add(name);
    const labels = claim.metadata.labels ?? {};
    demand.heard(poolKey(labels[LABELS.runtime] ?? '', labels[LABELS.version] ?? ''), createdMs(claim));
    then();
  });
}

export function createSandboxBackend(
  config: Readonly<RuntimeConfig>,
  logger: Logger,
): SessionBackend & { name: 'kubernetes'; writes: { value: number } } {
  const kc = loadKubeConfig(config);
  const core = kc.makeApiClient(CoreV1Api);
  const settings = podSettingsOf(config, {
    namespace: config.kubernetesNamespace,
    runtimeClassName: config.kubernetesRuntimeClass || undefined,
  });
  const { namespace } = settings;
  const pods = createPodCache(kc, core, namespace, logger);
  const cache = createSandboxCache(kc, namespace, logger);
  const writes = { value: 0 };
  const objects = createSandboxObjects(kc.makeApiClient(CustomObjectsApi), settings, writes);
  const demand = createClusterDemand(config.warmPoolSize, config.warmPoolMax);
  let targets: () => SessionTarget[] = () => [];
  const activity = activityWriter(cache.claims, (name, atMs) => objects.noteActivity(name, atMs));
  const deleteClaim = async (name: string) => {
    const storage = storageClaimOf(cache.claims.get(name));
    if (storage) await keepStorage(core, namespace, storage, writes);
    await objects.deleteClaim(name);
  };
  const workerOf = (claim: string, healthCheck: 'ping' | 'connect', logs?: ClaimWorkerOptions['logs']) =>
    new ClaimWorker({ claim, namespace, core, pods, cache, healthCheck, deleteClaim, logs });
  /** How the claim's pod is probed (its readiness probe: TCP for MCP agents). */
  const probeOf = (claim: SandboxObject): 'ping' | 'connect' => {
    const sandbox = cache.sandboxes.get(claim.status?.sandbox?.name ?? '');
    const pod = pods.get(sandbox?.metadata.annotations?.[SANDBOX_KEYS.podName] ?? '');
    return pod?.spec?.containers[0]?.readinessProbe?.tcpSocket ? 'connect' : 'ping';
  };
  const started = (worker: ClaimWorker) => ({
    worker,
    exec: podCommand(kc, namespace, () => worker.podName ?? worker.id),
  });
  const storage = clusterStorage({ core, namespace, pods, writes }, config.sessionStorageIdleS);
  return {
    name: 'kubernetes',
    writes,
    holdMs: config.kubernetesHoldMs,
    runsImages: true,
    keepsWarmPool: true,
    async start(request) {
      if (!request.sessionId) throw new Error('agent-sandbox mode: warm sandboxes are its SandboxWarmPools');
      await cache.ready().catch(() => undefined);
      if (!request.beside)
        await resetStorage(core, namespace, { ...request, sessionId: request.sessionId }, writes);
      const { name, adopted } = await objects.claim(
        request.target,
        request.sessionId,
        request,
        request.beside,
      );
      // A joined claim's output is logged by the replica that made it.
      const logs = adopted ? undefined : { kubeConfig: kc, logger: request.logger };
      return { ...started(workerOf(name, request.healthCheck, logs)), adopted };
    },
    find(runtimeId, sessionId): FoundClaim | undefined {
      const claim = claimOf(cache, runtimeId, sessionId);
      if (!claim) return undefined;
      const worker = workerOf(claim.metadata.name, probeOf(claim));
      return {
        ...started(worker),
        version: Number(claim.metadata.labels?.[LABELS.version]),
        ready: worker.podName !== undefined && conditionTrue(claim, 'Ready'),
        warm: worker.launchType() === 'warm',
        createdAtMs: createdMs(claim),
      };
    },
    sessions: () =>
      cache.claims.all().flatMap((claim) => {
        const runtimeId = parseRuntimeArn(
          claim.metadata.annotations?.[ANNOTATIONS.runtimeArn] ?? '',
        )?.runtimeId;
        const sessionId = claim.metadata.annotations?.[ANNOTATIONS.sessionId];
        return runtimeId && sessionId && !claim.metadata.deletionTimestamp ? [{ runtimeId, sessionId }] : [];
      }),
    touch: (worker) => activity.touch(worker.id),
    warmCount: (runtimeId) =>
      warmCount(
        cache,
        targets().filter((t) => t.runtime.id === runtimeId),
      ),
    dropStorage: storage.dropStorage,
    sharedJobs(input) {
      targets = input.targets;
      const keeper = createWarmKeeper(clusterPoolsOf(objects), demand, input);
      hearClaims(cache, demand, () => keeper.kick());
      const candidates = () => claimCandidates(cache, pods, deleteClaim);
      const reaper = createSessionReaper({ candidates, intervalMs: input.intervalMs, logger: input.logger });
      return [keeper, reaper, ...storage.jobs(input)];
    },
    close: () => {
      activity.close();
      return Promise.all([cache.close(), pods.close()]).then(() => undefined);
    },
  };
}
