// The `kubernetes` session backend (AGENTRT_SESSIONS=kubernetes), `pods` mode: one pod per session
// from the version's pod spec (pod-spec.ts), reached at its pod IP from an informer cache. A new
// session first claims a warm pod (warm-pods.ts: any replica's, kept by the Lease holder); else its
// pod is made under a name hashed from the session: two replicas starting the same new session at
// once make one pod, the second (409) joins it. A new session's start is arbitrated across replicas
// by its Lease (session-locks.ts): one replica claims a warm pod or makes the pod, the others join it.
import { randomBytes } from 'node:crypto';
import {
  CoreV1Api,
  PatchStrategy,
  type V1PersistentVolumeClaim,
  type V1Pod,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { type RuntimeConfig } from '../../../config.js';
import { type Logger } from '../../../logger.js';
import { type SessionBackend, type WorkerRequest, sessionStorageMount } from '../../backend.js';
import { containerEnv } from '../../container-env.js';
import { apiFailure, loadKubeConfig, podCommand, statusOf } from './kube-client.js';
import { type PodCache, createPodCache, isReady } from './pod-cache.js';
import { activityWriter, createSessionReaper, reapCandidates } from './session-reaper.js';
import {
  ANNOTATIONS,
  LABELS,
  POD_PORT,
  type PodSettings,
  labelValue,
  podSettingsOf,
  sessionPod,
  sessionStorageClaim,
} from './pod-spec.js';
import { PodWorker } from './pod-worker.js';
import { createSandboxBackend } from './sandbox-mode.js';
import { createClusterDemand, createWarmKeeper } from './warm-keeper.js';
import { createSessionLocks } from './session-locks.js';
import { clusterStorage, touchStorage } from './storage-reaper.js';
import { createWarmPods } from './warm-pods.js';

export interface KubernetesBackend extends SessionBackend {
  readonly name: 'kubernetes';
  /** API writes made (creates, patches, deletes): bench figures. */
  readonly writes: { value: number };
}

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** The backend in the configured mode (AGENTRT_K8S_MODE): `pods`, or `agent-sandbox` (sandbox-mode.ts). */
export function createKubernetesBackend(config: Readonly<RuntimeConfig>, logger: Logger): KubernetesBackend {
  return config.kubernetesMode === 'agent-sandbox'
    ? createSandboxBackend(config, logger)
    : createPodsBackend(config, logger);
}

/** `pods` mode: agentrt's own session pods and warm pods. */
function createPodsBackend(config: Readonly<RuntimeConfig>, logger: Logger): KubernetesBackend {
  const kc = loadKubeConfig(config);
  const core = kc.makeApiClient(CoreV1Api);
  const settings: PodSettings = podSettingsOf(config, {
    namespace: config.kubernetesNamespace,
    runtimeClassName: config.kubernetesRuntimeClass || undefined,
  });
  const { namespace } = settings;
  const cache: PodCache = createPodCache(kc, core, namespace, logger);
  const writes = { value: 0 };
  const activity = activityWriter(cache, (name, atMs) => {
    writes.value++;
    const body = { metadata: { annotations: { [ANNOTATIONS.lastActivityMs]: String(atMs) } } };
    return core.patchNamespacedPod({ name, namespace, body }, merge);
  });
  const warm = createWarmPods({ cache, core, settings, writes, logger });
  const locks = createSessionLocks({
    kc,
    core,
    namespace,
    writes,
    staleMs: config.kubernetesSessionLeaseMs,
  });
  const demand = createClusterDemand(config.warmPoolSize, config.warmPoolMax);

  /**
   * Makes the session's pod. Its name is the session's: when taken by the session's live pod
   * (another replica started the same session a moment before) that pod is joined; when taken by
   * one being deleted, or for a second worker beside the first (`beside`), the pod is made under the
   * name and a random suffix.
   */
  const create = async (request: WorkerRequest & { sessionId: string }) => {
    const env = containerEnv(request.env(POD_PORT, false), request.target.runtime.name);
    const for_ = { kind: 'session' as const, sessionId: request.sessionId };
    const pod = sessionPod({
      target: request.target,
      for: for_,
      env,
      healthCheck: request.healthCheck,
      settings,
    });
    await cache.ready().catch(() => undefined);
    if (sessionStorageMount(request.target))
      await createStorage(sessionStorageClaim(request.target, request.sessionId, settings));
    const name = pod.metadata?.name ?? '';
    const made = await createPod(pod);
    if (made || request.beside) return coldPod(made ?? (await createPod(suffixed(pod), true))!, false);
    const existing = await core.readNamespacedPod({ name, namespace }).catch(() => undefined);
    const same = existing?.metadata?.annotations?.[ANNOTATIONS.sessionId] === request.sessionId;
    if (same && !existing?.metadata?.deletionTimestamp) return coldPod(name, true);
    return coldPod((await createPod(suffixed(pod), true))!, false);
  };

  /** The session's storage claim, made at its first start and kept across its stops (409: made already, noted as used). */
  const createStorage = async (claim: V1PersistentVolumeClaim) => {
    writes.value++;
    const name = claim.metadata?.name ?? '';
    const made = await core
      .createNamespacedPersistentVolumeClaim({ namespace, body: claim })
      .catch((error: unknown) => {
        if (statusOf(error) !== 409) throw apiFailure(`creating PersistentVolumeClaim ${name}`, error);
      });
    if (!made) await touchStorage(core, namespace, name, writes); // kept from an earlier start: used again
  };

  /** Creates the pod: its name, or none when the name is taken (409) and `strict` is not set. */
  const createPod = async (pod: V1Pod, strict = false): Promise<string | undefined> => {
    writes.value++;
    try {
      const made = await core.createNamespacedPod({ namespace, body: pod });
      return made.metadata?.name as string;
    } catch (error) {
      if (statusOf(error) !== 409 || strict)
        throw apiFailure(`creating pod ${pod.metadata?.name ?? ''}`, error);
      return undefined;
    }
  };

  const exec = (name: string) => podCommand(kc, namespace, () => name);

  const workerOf = (
    name: string,
    launch: 'warm' | 'cold',
    healthCheck: 'ping' | 'connect',
    podLogger?: Logger,
  ) =>
    new PodWorker({
      name,
      namespace,
      core,
      cache,
      healthCheck,
      launch,
      logs: podLogger && { kubeConfig: kc, logger: podLogger },
    });

  /** The new session's pod: a ready warm pod claimed for it, else one made for it. */
  const startPod = async (request: WorkerRequest & { sessionId: string }): Promise<StartedPod> => {
    const claimed = await warm.claim(request.target, request.sessionId);
    return claimed ? { name: claimed, launch: 'warm', adopted: false } : create(request);
  };

  /** The started worker on the session's pod: a joined pod's output is logged by the replica that made it. */
  const startedOn = (pod: StartedPod, request: WorkerRequest) => ({
    worker: workerOf(pod.name, pod.launch, request.healthCheck, pod.adopted ? undefined : request.logger),
    exec: exec(pod.name),
    adopted: pod.adopted,
  });
  const storage = clusterStorage({ core, namespace, pods: cache, writes }, config.sessionStorageIdleS);

  return {
    name: 'kubernetes',
    writes,
    holdMs: config.kubernetesHoldMs,
    runsImages: true,
    keepsWarmPool: true,
    async start(request) {
      const { sessionId, beside } = request;
      if (!sessionId) throw new Error('pods mode: warm pods are made by the warm pool keeper');
      if (beside) return startedOn(await create({ ...request, sessionId }), request);
      const claim = await locks.take(request.target.runtime.id, sessionId);
      if ('pod' in claim) return startedOn({ ...launchOf(claim.pod), adopted: true }, request);
      const pod = await startPod({ ...request, sessionId }).catch(async (error: unknown) => {
        await locks.release(claim.lease);
        throw error;
      });
      await locks.bind(claim.lease, pod.name);
      return startedOn(pod, request);
    },
    find(runtimeId, sessionId) {
      const pod = cache.session(runtimeId, sessionId);
      const name = pod?.metadata?.name;
      if (!pod || !name) return undefined;
      const probe = pod.spec?.containers[0]?.readinessProbe;
      const { launch } = launchOf(pod);
      return {
        worker: workerOf(name, launch, probe?.tcpSocket ? 'connect' : 'ping'),
        exec: exec(name),
        version: Number(pod.metadata?.labels?.[LABELS.version]),
        ready: isReady(pod),
        warm: launch === 'warm',
        createdAtMs: new Date(pod.metadata?.creationTimestamp ?? Date.now()).getTime(),
      };
    },
    sessions: () => cache.sessions(),
    touch: (worker) => worker.podName && activity.touch(worker.podName),
    warmCount: (runtimeId) => warm.count(labelValue(runtimeId)),
    dropStorage: storage.dropStorage,
    sharedJobs(input) {
      const keeper = createWarmKeeper(warm, demand, input);
      warm.hear(demand, () => keeper.kick());
      const reaper = createSessionReaper({
        candidates: () => reapCandidates(cache, core, namespace),
        intervalMs: input.intervalMs,
        logger: input.logger,
      });
      return [keeper, reaper, ...storage.jobs(input)];
    },
    close: async () => {
      activity.close();
      await cache.close();
    },
  };
}

/** A session's pod as started: its name, how it was launched, and whether another replica made it. */
interface StartedPod {
  name: string;
  launch: 'warm' | 'cold';
  adopted: boolean;
}

const coldPod = (name: string, adopted: boolean): StartedPod => ({ name, launch: 'cold', adopted });

/** A live pod's name and launch: a warm-pool slot's pod was claimed warm. */
const launchOf = (pod: V1Pod) => ({
  name: pod.metadata?.name ?? '',
  launch: pod.metadata?.labels?.[LABELS.slot] !== undefined ? ('warm' as const) : ('cold' as const),
});

const suffixed = (pod: V1Pod): V1Pod => ({
  ...pod,
  metadata: { ...pod.metadata, name: `${pod.metadata?.name ?? ''}-${randomBytes(3).toString('hex')}` },
});
