// The `kubernetes` session backend (AGENTRT_SESSIONS=kubernetes), `pods` mode: one pod per session
// from the version's pod spec (pod-spec.ts), reached at its pod IP from an informer cache. A warm
// pod (made for the session manager's warm pool, labelled agentrt.dev/pool=warm) becomes a
// session's by a label patch that carries the resourceVersion it was read at: of two runtime
// replicas claiming it, one gets a 409 and starts another.
import { randomBytes } from 'node:crypto';
import { CoreV1Api, PatchStrategy, type V1Pod, setHeaderOptions } from '@kubernetes/client-node';
import { type RuntimeConfig } from '../../../config.js';
import { type Logger } from '../../../logger.js';
import {
  type ClusterWarmPool,
  type SessionBackend,
  type StartedWorker,
  type WorkerRequest,
} from '../../backend.js';
import { containerEnv } from '../../container-env.js';
import { type Worker } from '../../worker.js';
import { apiFailure, loadKubeConfig, podCommand } from './kube-client.js';
import { type PodCache, createPodCache, isReady } from './pod-cache.js';
import { activityGraceMs, createSessionReaper } from './session-reaper.js';
import {
  ANNOTATIONS,
  LABELS,
  POD_PORT,
  type PodSettings,
  podSettingsOf,
  sessionHash,
  sessionPod,
} from './pod-spec.js';
import { PodWorker } from './pod-worker.js';
import { createSandboxBackend } from './sandbox-mode.js';

/** A session's pod (or claim) found in the informer cache (made or claimed by any runtime replica). */
export interface FoundSession extends StartedWorker {
  worker: Worker;
  version: number;
  ready: boolean;
  /** A warm-pool pod claimed for the session. */
  warm: boolean;
  createdAtMs: number;
}

export interface KubernetesBackend extends SessionBackend {
  /** The live pod of the session, from the informer cache, as a worker to reach it; none: undefined. */
  find(runtimeId: string, sessionId: string): FoundSession | undefined;
  /** Claims the warm pod for `sessionId` (label patch with its resourceVersion); false when another took it. */
  claim(podName: string, sessionId: string): Promise<boolean>;
  /**
   * Notes an invocation of the session on its pod (agentrt.dev/last-activity-ms), for the reaper of
   * whichever replica leads: at most once per `activityGraceMs` per pod, the last one written late.
   */
  touch?(podName: string): void;
  /**
   * The idle and lifetime reaper of every session pod, as a leader job (pods mode; without it each
   * replica's session manager stops its own sessions).
   */
  reaper?(intervalMs: number, logger: Logger): { start(): void; stop(): void };
  /**
   * The warm pool the cluster keeps (agent-sandbox mode: a SandboxWarmPool per version, sized by the
   * session manager's demand); pods mode: none, the session manager keeps warm pods itself.
   */
  readonly clusterPool?: ClusterWarmPool | undefined;
  /** API writes made (creates, patches, deletes): bench figures. */
  readonly writes: { value: number };
  close(): Promise<void>;
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
  const cache: PodCache = createPodCache(kc, core, settings.namespace, logger);
  const writes = { value: 0 };
  const activity = activityWriter(cache, (name, atMs) => {
    writes.value++;
    const body = { metadata: { annotations: { [ANNOTATIONS.lastActivityMs]: String(atMs) } } };
    return core.patchNamespacedPod({ name, namespace: settings.namespace, body }, merge);
  });
  let slot = 0;

  const create = async (request: WorkerRequest) => {
    const env = containerEnv(request.env(POD_PORT, false), request.target.runtime.name);
    const pod = sessionPod({
      target: request.target,
      for: request.sessionId
        ? { kind: 'session', sessionId: request.sessionId }
        : { kind: 'warm', slot: slot++ },
      env,
      healthCheck: request.healthCheck,
      settings,
    });
    // A warm slot's name is per (runtime, version, slot): slots count up, so a name is never reused.
    await cache.ready().catch(() => undefined);
    return createPod(pod);
  };

  /**
   * Creates the pod; when its name is taken (the session's old pod still being replaced, or a warm
   * slot another replica made) it is made once more under the name and a random suffix.
   */
  const createPod = async (pod: V1Pod, retried = false): Promise<string> => {
    writes.value++;
    try {
      const made = await core.createNamespacedPod({ namespace: settings.namespace, body: pod });
      return made.metadata?.name as string;
    } catch (error) {
      const name = pod.metadata?.name ?? '';
      if ((error as { code?: number }).code !== 409 || retried)
        throw apiFailure(`creating pod ${name}`, error);
      const suffix = randomBytes(3).toString('hex');
      return createPod({ ...pod, metadata: { ...pod.metadata, name: `${name}-${suffix}` } }, true);
    }
  };

  const exec = (name: string) => podCommand(kc, settings.namespace, () => name);

  const workerOf = (name: string, healthCheck: 'ping' | 'connect', podLogger?: Logger) =>
    new PodWorker({
      name,
      namespace: settings.namespace,
      core,
      cache,
      healthCheck,
      logs: podLogger && { kubeConfig: kc, logger: podLogger },
    });

  return {
    name: 'kubernetes',
    writes,
    async start(request) {
      const name = await create(request);
      return { worker: workerOf(name, request.healthCheck, request.logger), exec: exec(name) };
    },
    find(runtimeId, sessionId) {
      const pod = cache.session(runtimeId, sessionId);
      const name = pod?.metadata?.name;
      if (!pod || !name) return undefined;
      const probe = pod.spec?.containers[0]?.readinessProbe;
      return {
        worker: workerOf(name, probe?.tcpSocket ? 'connect' : 'ping'),
        exec: exec(name),
        version: Number(pod.metadata?.labels?.[LABELS.version]),
        ready: isReady(pod),
        warm: pod.metadata?.labels?.[LABELS.slot] !== undefined,
        createdAtMs: new Date(pod.metadata?.creationTimestamp ?? Date.now()).getTime(),
      };
    },
    async claim(podName, sessionId) {
      const pod = cache.get(podName);
      if (!pod?.metadata?.resourceVersion) return false;
      const body = {
        metadata: {
          resourceVersion: pod.metadata.resourceVersion,
          labels: { [LABELS.pool]: null, [LABELS.sessionHash]: sessionHash(sessionId) },
          annotations: { [ANNOTATIONS.sessionId]: sessionId, [ANNOTATIONS.claimedAtMs]: String(Date.now()) },
        },
      };
      writes.value++;
      return core.patchNamespacedPod({ name: podName, namespace: settings.namespace, body }, merge).then(
        () => true,
        (error: unknown) => {
          if ((error as { code?: number }).code === 409) return false;
          throw apiFailure(`claiming warm pod ${podName}`, error);
        },
      );
    },
    touch: (podName) => activity.touch(podName),
    reaper: (intervalMs, reaperLogger) =>
      createSessionReaper({ cache, core, namespace: settings.namespace, intervalMs, logger: reaperLogger }),
    close: async () => {
      activity.close();
      await cache.close();
    },
  };
}

/** `touch` of each pod, throttled: a write now, or one when the grace since the last has passed. */
function activityWriter(cache: PodCache, write: (podName: string, atMs: number) => Promise<unknown>) {
  type State = { writtenMs: number; timer?: NodeJS.Timeout | undefined };
  const pods = new Map<string, State>();
  const flush = (podName: string, state: State) => {
    state.timer = undefined;
    state.writtenMs = Date.now();
    void write(podName, state.writtenMs).catch(() => {
      state.writtenMs = 0; // not noted (the pod went, or the API server is away): the next touch writes
    });
  };
  const stateOf = (podName: string): State => {
    const known = pods.get(podName);
    if (known) return known;
    const state: State = { writtenMs: 0 };
    pods.set(podName, state);
    cache.follow(podName, (_pod, deleted) => {
      if (deleted) clearTimeout(state.timer);
      if (deleted) pods.delete(podName);
      return deleted;
    });
    return state;
  };
  return {
    touch(podName: string) {
      const idleS = Number(cache.get(podName)?.metadata?.annotations?.[ANNOTATIONS.idleTimeoutS]);
      if (!Number.isFinite(idleS)) return;
      const state = stateOf(podName);
      if (state.timer) return; // a write is due already, and will carry the latest time
      const waitMs = activityGraceMs(idleS) - (Date.now() - state.writtenMs);
      if (waitMs <= 0) return flush(podName, state);
      state.timer = setTimeout(() => flush(podName, state), waitMs);
      state.timer.unref();
    },
    close() {
      for (const state of pods.values()) clearTimeout(state.timer);
      pods.clear();
    },
  };
}
