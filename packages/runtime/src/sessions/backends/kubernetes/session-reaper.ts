// Idle timeout and maximum lifetime of every session, whichever replica started or serves it: one
// replica does it (the Lease holder; the only replica when there is no Lease), reading the
// sessions' objects — pods (pods mode) or SandboxClaims (agent-sandbox mode) — from its informer
// caches. A session's lifetime counts from its object's creation (a warm pod: from its claim); its
// idle time from the last invocation any replica wrote on the object (agentrt.dev/last-activity-ms,
// see `activityGraceMs`), or the worker's own /ping time_of_last_update when later; a HealthyBusy
// worker is never idle. Agent-sandbox's CRDs have no idle timeout: this is agentrt's.
import { Agent } from 'node:http';
import { type CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { parseRuntimeArn } from '../../../control/arn.js';
import { type Logger } from '../../../logger.js';
import { pingOver } from '../../worker-probe.js';
import { type InformerCache } from './informer-cache.js';
import { periodicJob } from '../../periodic-job.js';
import { type PodCache, isReady } from './pod-cache.js';
import { ANNOTATIONS, LABELS, POD_PORT } from './pod-spec.js';

/**
 * How stale the last-activity annotation may be: a replica writes it at most this often per
 * session (a tenth of the idle timeout, 100 ms to 10 s), so the reaper waits this much past the
 * timeout before it counts a session idle (late by at most this, never early).
 */
export function activityGraceMs(idleTimeoutS: number): number {
  return Math.min(10_000, Math.max(100, (idleTimeoutS * 1000) / 10));
}

/** A live, ready session as the reaper sees it: its object's annotations and its pod's address. */
export interface ReapCandidate {
  /** The object that is the session (a pod, a SandboxClaim): deleting it ends the session. */
  object: KubernetesObject;
  kind: 'pod' | 'claim';
  podIP: string | undefined;
  /** An MCP server: probed by TCP, it has no /ping to say it is busy. */
  tcp: boolean;
  remove(): Promise<void>;
}

export interface SessionReaperOptions {
  candidates(): ReapCandidate[];
  intervalMs: number;
  logger: Logger;
}

/** Pods mode's sessions: ready pods with a session, not being deleted. */
export function reapCandidates(cache: PodCache, core: CoreV1Api, namespace: string): ReapCandidate[] {
  return cache
    .all()
    .filter((p) => p.metadata?.labels?.[LABELS.sessionHash] && !p.metadata.deletionTimestamp && isReady(p))
    .map((pod) => ({
      object: pod,
      kind: 'pod' as const,
      podIP: pod.status?.podIP,
      tcp: pod.spec?.containers[0]?.readinessProbe?.tcpSocket !== undefined,
      remove: () =>
        core
          .deleteNamespacedPod({ name: pod.metadata?.name ?? '', namespace })
          .then(() => undefined)
          .catch((error: unknown) => {
            if ((error as { code?: number }).code !== 404) throw error;
          }),
    }));
}

const number = (object: KubernetesObject, key: string): number | undefined => {
  const value = Number(object.metadata?.annotations?.[key]);
  return Number.isFinite(value) && object.metadata?.annotations?.[key] !== undefined ? value : undefined;
};

/** Why the session must go now, if it must (its /ping asked only once it looks idle). */
async function verdict(
  { object: pod, podIP, tcp }: ReapCandidate,
  nowMs: number,
  agent: Agent,
): Promise<'idle' | 'max-lifetime' | undefined> {
  const idleS = number(pod, ANNOTATIONS.idleTimeoutS);
  const maxS = number(pod, ANNOTATIONS.maxLifetimeS);
  const startMs =
    number(pod, ANNOTATIONS.claimedAtMs) ?? new Date(pod.metadata?.creationTimestamp ?? nowMs).getTime();
  if (maxS !== undefined && nowMs - startMs >= maxS * 1000) return 'max-lifetime';
  if (idleS === undefined) return undefined;
  const activeMs = Math.max(startMs, number(pod, ANNOTATIONS.lastActivityMs) ?? 0);
  const limitMs = idleS * 1000 + activityGraceMs(idleS);
  if (nowMs - activeMs < limitMs || !podIP) return undefined;
  if (tcp) return 'idle'; // an MCP server has no /ping to say it is busy
  const ping = await pingOver({ host: podIP, port: POD_PORT }, agent, 2000).catch(() => undefined);
  if (!ping || ping.status === 'HealthyBusy') return undefined; // unhealthy: its replica's pings stop it
  const updatedMs = ping.timeOfLastUpdateMs ?? 0;
  return nowMs - Math.max(activeMs, updatedMs) >= limitMs ? 'idle' : undefined;
}

/** The reaper as a leader job: `start` when this replica leads, `stop` when it no longer does. */
export function createSessionReaper(options: SessionReaperOptions): { start(): void; stop(): void } {
  const { logger } = options;
  const agent = new Agent({ keepAlive: false });
  const reap = async (candidate: ReapCandidate, reason: string) => {
    const { metadata } = candidate.object;
    await candidate.remove();
    const arn = metadata?.annotations?.[ANNOTATIONS.runtimeArn] ?? '';
    logger.info('session stopped', {
      runtimeId: parseRuntimeArn(arn)?.runtimeId ?? metadata?.labels?.[LABELS.runtime],
      sessionId: metadata?.annotations?.[ANNOTATIONS.sessionId],
      reason,
      [candidate.kind]: metadata?.name,
    });
  };
  const pass = async () => {
    const nowMs = Date.now();
    await Promise.all(
      options.candidates().map(async (candidate) => {
        const reason = await verdict(candidate, nowMs, agent);
        if (reason) await reap(candidate, reason);
      }),
    );
  };
  return periodicJob('session reaper', pass, options.intervalMs, logger);
}

/**
 * `touch` of each session object (a pod, a claim), throttled: a write now, or one when the grace
 * since the last has passed.
 */
export function activityWriter<T extends KubernetesObject>(
  cache: InformerCache<T>,
  write: (name: string, atMs: number) => Promise<unknown>,
) {
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
