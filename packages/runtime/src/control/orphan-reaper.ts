import { createHash } from 'node:crypto';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type V1Lease,
} from '@kubernetes/client-node';
import { type Logger } from '../logger.js';
import { LABELS, MANAGED_BY, labelValue } from '../sessions/backends/kubernetes/pod-spec.js';
import {
  EXTENSIONS_GROUP,
  SANDBOX_VERSION,
  type SandboxObject,
} from '../sessions/backends/kubernetes/sandbox-spec.js';
import { type LeaderElection, type LeaderElectionOptions, createLeaderElection } from './leader-lease.js';

/** The label of every replica heartbeat Lease. */
const HEARTBEAT = 'agentrt.dev/heartbeat';

/** The heartbeat Lease of one runtime process (`replicaInstance`). */
export function heartbeatLeaseName(instance: string): string {
  return `agentrt-replica-${createHash('sha256').update(instance).digest('hex').slice(0, 16)}`;
}

/**
 * This runtime process's heartbeat: a Lease of its own it holds (and renews) while it lives, as a
 * kubelet's node Lease says its node is alive. A process killed with SIGKILL stops renewing it.
 */
export function createReplicaHeartbeat(
  options: Omit<LeaderElectionOptions, 'name' | 'labels' | 'identity'> & { instance: string },
): LeaderElection {
  return createLeaderElection({
    ...options,
    identity: options.instance,
    name: heartbeatLeaseName(options.instance),
    labels: { [HEARTBEAT]: 'true', [LABELS.replica]: labelValue(options.instance) },
  });
}

export interface ReapOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  logger: Logger;
  /** A heartbeat is alive while renewed within this many of its lease durations (clock skew margin). */
  graceLeases?: number;
  /** Pods and claims younger than this are never reaped (their replica's heartbeat may not be written yet). */
  podGraceMs?: number;
}

const ignoreMissing = (error: unknown) => {
  if (!(error instanceof ApiException && error.code === 404)) throw error;
};

/** The replicas (label values) whose heartbeat is renewed, and the heartbeat Leases that lapsed. */
function liveness(leases: V1Lease[], nowMs: number, grace: number) {
  const alive = new Set<string>();
  const lapsed: V1Lease[] = [];
  for (const lease of leases) {
    const replica = lease.metadata?.labels?.[LABELS.replica] ?? '';
    const renewedMs = new Date(lease.spec?.renewTime as unknown as string).getTime();
    const durationMs = (lease.spec?.leaseDurationSeconds ?? 0) * 1000;
    if (lease.spec?.holderIdentity && renewedMs + grace * durationMs > nowMs) alive.add(replica);
    else lapsed.push(lease);
  }
  return { alive, lapsed };
}

/** The objects (pods, claims) made by a replica not alive, older than the grace: their names. */
function orphansOf(
  items: { metadata?: { name?: string; labels?: Record<string, string>; creationTimestamp?: unknown } }[],
  alive: Set<string>,
  nowMs: number,
  graceMs: number,
): string[] {
  return items
    .filter((item) => {
      const replica = item.metadata?.labels?.[LABELS.replica] ?? '';
      const ageMs = nowMs - new Date((item.metadata?.creationTimestamp as string) ?? nowMs).getTime();
      return !alive.has(replica) && ageMs > graceMs;
    })
    .map((item) => item.metadata?.name ?? '');
}

const REPLICA_OBJECTS = `${LABELS.managedBy}=${MANAGED_BY},${LABELS.replica}`;
const CLAIMS = { group: EXTENSIONS_GROUP, version: SANDBOX_VERSION, plural: 'sandboxclaims' };

/** The SandboxClaims replicas made (agent-sandbox mode); none where its CRD is not installed. */
async function replicaClaims(api: CustomObjectsApi, namespace: string) {
  const list = await api
    .listNamespacedCustomObject({ ...CLAIMS, namespace, labelSelector: REPLICA_OBJECTS })
    .catch((error: unknown) => {
      ignoreMissing(error);
      return { items: [] };
    });
  return (list as { items: SandboxObject[] }).items;
}

/**
 * One pass of the leader's reconcile: deletes every session pod (warm ones too) and SandboxClaim
 * (agent-sandbox mode: its sandbox and pod follow) made by a runtime process whose heartbeat Lease
 * lapsed or is gone — a replica killed mid-start leaves sessions no live replica serves — then
 * those heartbeat Leases. An object younger than the grace is left alone: its replica may be
 * starting and its heartbeat not written yet.
 */
export async function reapOrphans(
  options: ReapOptions,
): Promise<{ pods: string[]; claims: string[]; replicas: string[] }> {
  const { namespace, logger } = options;
  const grace = options.graceLeases ?? 2;
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const custom = options.kubeConfig.makeApiClient(CustomObjectsApi);
  const coordination = options.kubeConfig.makeApiClient(CoordinationV1Api);
  const nowMs = Date.now();
  const leases = await coordination.listNamespacedLease({ namespace, labelSelector: `${HEARTBEAT}=true` });
  const { alive, lapsed } = liveness(leases.items, nowMs, grace);
  const podGraceMs = options.podGraceMs ?? 30_000;
  const pods = await core.listNamespacedPod({ namespace, labelSelector: REPLICA_OBJECTS });
  const names = orphansOf(pods.items, alive, nowMs, podGraceMs);
  const claims = orphansOf(await replicaClaims(custom, namespace), alive, nowMs, podGraceMs);
  await Promise.all([
    ...names.map((name) => core.deleteNamespacedPod({ name, namespace }).catch(ignoreMissing)),
    ...claims.map((name) =>
      custom.deleteNamespacedCustomObject({ ...CLAIMS, namespace, name }).catch(ignoreMissing),
    ),
  ]);
  const replicas = lapsed.map((l) => l.metadata?.labels?.[LABELS.replica] ?? '');
  await Promise.all(
    lapsed.map((l) =>
      coordination.deleteNamespacedLease({ name: l.metadata!.name!, namespace }).catch(ignoreMissing),
    ),
  );
  if (names.length + claims.length + replicas.length > 0)
    logger.info('orphans reaped', { pods: names, claims, replicas });
  return { pods: names, claims, replicas };
}

/** Runs `reapOrphans` every `intervalMs` while `leader` leads (always, for a single replica: no leader). */
export function reapWhileLeading(
  leader: LeaderElection | undefined,
  options: ReapOptions & { intervalMs: number },
): () => void {
  let timer: NodeJS.Timeout | undefined;
  const pass = () =>
    void reapOrphans(options).catch((error: unknown) =>
      options.logger.warn('orphan reap failed', { error: (error as Error).message }),
    );
  const job = {
    start: () => {
      pass();
      timer = setInterval(pass, options.intervalMs);
      timer.unref();
    },
    stop: () => clearInterval(timer),
  };
  if (leader) leader.whileLeading(job);
  else job.start();
  return job.stop;
}
