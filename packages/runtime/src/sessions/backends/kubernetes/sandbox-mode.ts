// The `kubernetes` session backend in `agent-sandbox` mode (AGENTRT_K8S_MODE=agent-sandbox): the
// same sessions as kubernetes-sigs/agent-sandbox objects, for clusters running its controller. Per
// runtime version a SandboxTemplate (pods mode's pod, no session in it) and a SandboxWarmPool sized
// from the session manager's demand; per session a SandboxClaim, which the controller binds to a
// warm-pool sandbox it adopts (launch type warm) or to one it makes (cold). The session is reached
// at the pod the claim's sandbox names, from informer caches; stop deletes the claim.
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { type RuntimeConfig } from '../../../config.js';
import { type Logger } from '../../../logger.js';
import { type ClusterWarmPool, type SessionBackend, type StartedWorker } from '../../backend.js';
import { ClaimWorker, type ClaimWorkerOptions } from './claim-worker.js';
import { loadKubeConfig, podCommand } from './kube-client.js';
import { createPodCache } from './pod-cache.js';
import { ANNOTATIONS, LABELS, labelValue, podSettingsOf, sessionHash } from './pod-spec.js';
import { type SandboxCache, createSandboxCache } from './sandbox-cache.js';
import { type SandboxObjects, createSandboxObjects } from './sandbox-objects.js';
import { SANDBOX_KEYS, type SandboxObject, conditionTrue } from './sandbox-spec.js';

export interface SandboxBackend extends SessionBackend {
  find(runtimeId: string, sessionId: string): FoundClaim | undefined;
  claim(podName: string, sessionId: string): Promise<boolean>;
  readonly clusterPool: ClusterWarmPool;
  readonly writes: { value: number };
  close(): Promise<void>;
}

/** A session's claim another replica made, found in the claim cache. */
export interface FoundClaim extends StartedWorker {
  worker: ClaimWorker;
  version: number;
  ready: boolean;
  warm: boolean;
  createdAtMs: number;
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

/** The session manager's view of the SandboxWarmPools: sized by its demand, counted from the cache. */
function clusterPoolOf(objects: SandboxObjects, cache: SandboxCache, logger: Logger): ClusterWarmPool {
  return {
    resize: (target, replicas, worker) =>
      void objects.resize(target, replicas, worker).catch((error: unknown) =>
        logger.warn('kubernetes: the warm pool could not be sized', {
          runtimeId: target.runtime.id,
          replicas,
          error: (error as Error).message,
        }),
      ),
    drop: (runtimeId, keep) =>
      objects
        .drop(runtimeId, keep)
        .catch((error: unknown) =>
          logger.warn('kubernetes: warm pools not deleted', { runtimeId, error: (error as Error).message }),
        ),
    count: (runtimeId) =>
      cache.sandboxes.all().filter((sandbox) => {
        const pool = objects.poolRuntime(sandbox.metadata.labels?.[SANDBOX_KEYS.warmPool] ?? '');
        if (!pool || (runtimeId !== undefined && pool !== runtimeId)) return false;
        return !sandbox.metadata.deletionTimestamp && conditionTrue(sandbox, 'Ready');
      }).length,
  };
}

export function createSandboxBackend(config: Readonly<RuntimeConfig>, logger: Logger): SandboxBackend {
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
  const deleteClaim = (name: string) => objects.deleteClaim(name);
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
  return {
    name: 'kubernetes',
    writes,
    clusterPool: clusterPoolOf(objects, cache, logger),
    async start(request) {
      if (!request.sessionId) throw new Error('agent-sandbox mode: warm sandboxes are its SandboxWarmPools');
      await cache.ready().catch(() => undefined);
      const claim = await objects.claim(request.target, request.sessionId, request);
      const logs = { kubeConfig: kc, logger: request.logger };
      return started(workerOf(claim, request.healthCheck, logs));
    },
    find(runtimeId, sessionId) {
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
    // A warm sandbox is adopted by the controller for a claim: the session manager never claims one.
    claim: () => Promise.resolve(true),
    close: () => Promise.all([cache.close(), pods.close()]).then(() => undefined),
  };
}
