// The warm-pool keeper of a cluster's sessions, as a shared job (the Lease holder runs it, one
// replica at a time). Demand is read from the cluster, not from one replica: every replica's cache
// sees each session start (a pod made or claimed, a SandboxClaim made), so whichever replica leads
// sizes each version's pool from every replica's starts, with the local pool's rule (warm-demand.ts).
// What "a pool" is belongs to the mode: warm pods agentrt makes (pods mode, warm-pods.ts), or a
// SandboxWarmPool whose controller makes them (agent-sandbox mode).
import {
  type SessionTarget,
  type SharedJob,
  type SharedJobInput,
  type WorkerRequest,
  sessionStorageMount,
} from '../../backend.js';
import { DEMAND_WINDOW_MS, createWarmDemand } from '../../warm-demand.js';
import { labelValue } from './pod-spec.js';
import { periodicJob } from '../../periodic-job.js';

export type VersionWorker = Pick<WorkerRequest, 'env' | 'healthCheck'>;

/** One mode's warm pools, as the keeper sizes them. */
export interface ClusterPools {
  /** Brings the version's pool to `replicas` warm workers. */
  keep(target: SessionTarget, replicas: number, worker: VersionWorker): Promise<void>;
  /** Removes the pools of every version but `kept` (a runtime's older versions, deleted runtimes). */
  prune(kept: SessionTarget[]): Promise<void>;
}

/** A version's key in the demand record: its runtime and version labels. */
export const poolKey = (runtimeLabel: string, version: number | string): string =>
  `${runtimeLabel}#${version}`;
export const targetKey = (target: SessionTarget): string =>
  poolKey(labelValue(target.runtime.id), target.version.version);

/**
 * The demand every replica's cache hears: `heard(key, atMs)` for each session start. A start older
 * than the demand window (the first list after a replica starts) is not demand any more.
 */
export function createClusterDemand(floor: number, cap: number) {
  const demand = createWarmDemand(floor, cap);
  return {
    heard(key: string, atMs: number): void {
      if (Date.now() - atMs < DEMAND_WINDOW_MS) demand.record(key, Math.min(atMs, Date.now()));
    },
    target: (key: string) => demand.target(key),
  };
}

export type ClusterDemand = ReturnType<typeof createClusterDemand>;

/**
 * The keeper: every `intervalMs` while it runs (and soon after each session start it hears), each
 * live version's pool is sized to its demand and the pools of other versions go. Versions with
 * sessionStorage get none: their storage is per session, which a warm worker does not know yet.
 */
export function createWarmKeeper(
  pools: ClusterPools,
  demand: ClusterDemand,
  input: SharedJobInput,
): SharedJob & { kick(): void } {
  const pass = async () => {
    const targets = input.targets().filter((t) => !sessionStorageMount(t));
    await Promise.all(targets.map((t) => pools.keep(t, demand.target(targetKey(t)), input.worker(t))));
    await pools.prune(targets);
  };
  // `kick`: a session started somewhere, so its version's pool refills now rather than at the next pass.
  return periodicJob('warm pool keeper', pass, input.intervalMs, input.logger);
}
