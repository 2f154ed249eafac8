// Idle timeout and maximum lifetime of every session pod, whichever replica started or serves it:
// one replica does it (the Lease holder; the only replica when there is no Lease), reading the pods
// from its informer cache. A session's lifetime counts from its pod's creation (a warm pod: from its
// claim); its idle time from the last invocation any replica wrote on the pod
// (agentrt.dev/last-activity-ms, see `activityGraceMs`), or the worker's own /ping
// time_of_last_update when later; a HealthyBusy worker is never idle. Agent-sandbox's CRDs have no
// idle timeout: this is agentrt's.
import { Agent } from 'node:http';
import { type CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { parseRuntimeArn } from '../../../control/arn.js';
import { type Logger } from '../../../logger.js';
import { pingOver } from '../../worker.js';
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

export interface SessionReaperOptions {
  cache: PodCache;
  core: CoreV1Api;
  namespace: string;
  intervalMs: number;
  logger: Logger;
}

const number = (pod: V1Pod, key: string): number | undefined => {
  const value = Number(pod.metadata?.annotations?.[key]);
  return Number.isFinite(value) && pod.metadata?.annotations?.[key] !== undefined ? value : undefined;
};

/** Why the session pod must go now, if it must (its /ping asked only once it looks idle). */
async function verdict(
  pod: V1Pod,
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
  if (nowMs - activeMs < limitMs || !pod.status?.podIP) return undefined;
  const probe = pod.spec?.containers[0]?.readinessProbe;
  if (probe?.tcpSocket) return 'idle'; // an MCP server has no /ping to say it is busy
  const ping = await pingOver({ host: pod.status.podIP, port: POD_PORT }, agent, 2000).catch(() => undefined);
  if (!ping || ping.status === 'HealthyBusy') return undefined; // unhealthy: its replica's pings stop it
  const updatedMs = ping.timeOfLastUpdateMs ?? 0;
  return nowMs - Math.max(activeMs, updatedMs) >= limitMs ? 'idle' : undefined;
}

/** The reaper as a leader job: `start` when this replica leads, `stop` when it no longer does. */
export function createSessionReaper(options: SessionReaperOptions): { start(): void; stop(): void } {
  const { cache, core, namespace, logger } = options;
  const agent = new Agent({ keepAlive: false });
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  const reap = async (pod: V1Pod, reason: string) => {
    const name = pod.metadata?.name as string;
    await core.deleteNamespacedPod({ name, namespace }).catch((error: unknown) => {
      if ((error as { code?: number }).code !== 404) throw error;
    });
    const arn = pod.metadata?.annotations?.[ANNOTATIONS.runtimeArn] ?? '';
    logger.info('session stopped', {
      runtimeId: parseRuntimeArn(arn)?.runtimeId ?? pod.metadata?.labels?.[LABELS.runtime],
      sessionId: pod.metadata?.annotations?.[ANNOTATIONS.sessionId],
      reason,
      pod: name,
    });
  };
  const pass = async () => {
    const nowMs = Date.now();
    const live = cache
      .all()
      .filter((p) => p.metadata?.labels?.[LABELS.sessionHash] && !p.metadata.deletionTimestamp && isReady(p));
    await Promise.all(
      live.map(async (pod) => {
        const reason = await verdict(pod, nowMs, agent);
        if (reason) await reap(pod, reason);
      }),
    );
  };
  const tick = () => {
    if (!running) return;
    void pass()
      .catch((error: unknown) =>
        logger.warn('session reaper pass failed', { error: (error as Error).message }),
      )
      .finally(() => {
        if (running) timer = setTimeout(tick, options.intervalMs);
      });
  };
  return {
    start() {
      running = true;
      tick();
    },
    stop() {
      running = false;
      clearTimeout(timer);
    },
  };
}
