import { type RuntimeConfig } from '../config.js';
import { type Logger } from '../logger.js';
import { type LeaderElection, createLeaderElection } from './leader-lease.js';
import { createReplicaHeartbeat, reapWhileLeading } from './orphan-reaper.js';
import { kubeConfigOf } from './store/open-store.js';

/** The timing of every Lease a replica holds, from `leaseSeconds` (client-go's 15/10/2 s ratios). */
export interface LeaseTiming {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryMs: number;
}

export function leaseTimingOf(config: Readonly<RuntimeConfig>): LeaseTiming {
  const leaseMs = config.leaseSeconds * 1000;
  return { leaseDurationMs: leaseMs, renewDeadlineMs: (leaseMs * 2) / 3, retryMs: (leaseMs * 2) / 15 };
}

/** Shared records, several replicas: work only one of them may do runs on the Lease's holder. */
export function createReplicaLeader(
  config: Readonly<RuntimeConfig>,
  logger: Logger,
  timing: LeaseTiming,
): LeaderElection | undefined {
  if (config.controlStore !== 'kubernetes') return undefined;
  return createLeaderElection({
    kubeConfig: kubeConfigOf(config),
    namespace: config.kubernetesNamespace,
    identity: config.replicaName,
    logger: logger.child({ component: 'leader' }),
    ...timing,
  });
}

export interface ReplicaJobs {
  heartbeat: LeaderElection | undefined;
  stopReaping: (() => void) | undefined;
}

/**
 * Kubernetes sessions: this process says it is alive (its heartbeat Lease), and the leader deletes
 * the pods of processes that stopped saying so (killed mid-start: nobody serves those pods).
 */
export function startReplicaJobs(
  config: Readonly<RuntimeConfig>,
  leader: LeaderElection | undefined,
  logger: Logger,
  timing: LeaseTiming,
): ReplicaJobs {
  if (config.sessions !== 'kubernetes') return { heartbeat: undefined, stopReaping: undefined };
  const heartbeat = createReplicaHeartbeat({
    kubeConfig: kubeConfigOf(config),
    namespace: config.kubernetesNamespace,
    instance: config.replicaInstance,
    logger: logger.child({ component: 'heartbeat' }),
    ...timing,
  });
  const stopReaping = reapWhileLeading(leader, {
    kubeConfig: kubeConfigOf(config),
    namespace: config.kubernetesNamespace,
    logger: logger.child({ component: 'orphan-reaper' }),
    intervalMs: timing.renewDeadlineMs,
    podGraceMs: 2 * timing.leaseDurationMs,
  });
  return { heartbeat, stopReaping };
}
