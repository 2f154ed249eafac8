import {
  ApiException,
  CoordinationV1Api,
  type KubeConfig,
  type V1Lease,
  V1MicroTime,
} from '@kubernetes/client-node';
import { type Logger } from '../logger.js';

/** Work only one replica may do at a time (the warm-pool keeper, the idle reaper). */
export interface LeaderJob {
  /** Called when this replica becomes the leader. */
  start(): void;
  /** Called when it stops being the leader (lost, expired, or closing); must stop the work at once. */
  stop(): void;
}

export interface LeaderElection {
  readonly identity: string;
  isLeader(): boolean;
  /** Runs `job` whenever this replica leads (at once if it leads now). */
  whileLeading(job: LeaderJob): void;
  /** Stops campaigning; a leader stops its jobs and releases the Lease so another takes over at once. */
  close(): Promise<void>;
}

export interface LeaderElectionOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** This replica's name (the pod name): the Lease's holderIdentity. */
  identity: string;
  logger: Logger;
  /** The Lease's name (deploy/k8s/rbac.yaml grants this one). */
  name?: string;
  /** How long a Lease not renewed stays another replica's (default 15 s). */
  leaseDurationMs?: number;
  /** A leader that could not renew for this long stops leading (default 10 s; below leaseDurationMs). */
  renewDeadlineMs?: number;
  /** How often a leader renews and a candidate tries (default 2 s). */
  retryMs?: number;
  /** Labels of the Lease when this candidate creates it. */
  labels?: Record<string, string>;
}

type Attempt = 'leading' | 'held' | 'failed';

/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it: a
 * candidate takes the Lease when it is free, or when its holder has not renewed it for a lease
 * duration *as this replica observed it* (its own clock, so clock skew between replicas does not
 * matter); every write carries the resourceVersion it read, so of two replicas taking an expired
 * Lease at once the API server lets one through (409 for the other). The leader renews every
 * retryMs and stops its jobs once it could not renew for renewDeadlineMs, before any other replica
 * may consider the Lease expired (leaseDurationMs > renewDeadlineMs). A replica that dies
 * (kill -9) stops renewing: another one leads after leaseDurationMs.
 */
export function createLeaderElection(options: LeaderElectionOptions): LeaderElection {
  const { namespace, identity, logger } = options;
  const name = options.name ?? 'agentrt-leader';
  const leaseDurationMs = options.leaseDurationMs ?? 15_000;
  const renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
  const retryMs = options.retryMs ?? 2_000;
  if (renewDeadlineMs >= leaseDurationMs) throw new Error('renewDeadlineMs must be below leaseDurationMs');
  const api = options.kubeConfig.makeApiClient(CoordinationV1Api);
  const jobs: LeaderJob[] = [];
  let leading = false;
  let lastRenewMs = 0;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  /** The holder and renewTime last read, and when (this replica's clock) they last changed. */
  let observed = { record: '', atMs: 0 };

  const spec = (held: V1Lease | undefined, nowMs: number): V1Lease['spec'] => {
    const previous = held?.spec;
    const taken = previous?.holderIdentity !== identity;
    return {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      renewTime: new V1MicroTime(nowMs),
      acquireTime: taken ? new V1MicroTime(nowMs) : previous?.acquireTime,
      // As client-go counts them: every change of holder of an existing Lease (a released one too).
      leaseTransitions: (previous?.leaseTransitions ?? 0) + (previous && taken ? 1 : 0),
    };
  };

  const setLeading = (now: boolean) => {
    if (now === leading) return;
    leading = now;
    logger.info(now ? 'leader: this replica leads' : 'leader: this replica stopped leading', {
      lease: name,
      identity,
    });
    for (const job of jobs) {
      try {
        if (now) job.start();
        else job.stop();
      } catch (error) {
        // A job that fails to start or stop must not keep the others from it.
        logger.error('leader job failed', { error: (error as Error).message });
      }
    }
  };

  const attempt = async (): Promise<Attempt> => {
    const nowMs = Date.now();
    let held: V1Lease | undefined;
    try {
      held = await api.readNamespacedLease({ name, namespace });
    } catch (error) {
      if (!(error instanceof ApiException && error.code === 404)) throw error;
    }
    if (!held) {
      const body: V1Lease = {
        metadata: { name, namespace, ...(options.labels ? { labels: options.labels } : {}) },
        spec: spec(undefined, nowMs),
      };
      await api.createNamespacedLease({ namespace, body });
      return 'leading';
    }
    const holder = held.spec?.holderIdentity ?? '';
    const record = `${holder}\u0000${String(held.spec?.renewTime ?? '')}`;
    if (record !== observed.record) observed = { record, atMs: nowMs };
    const expired = nowMs - observed.atMs >= (held.spec?.leaseDurationSeconds ?? 0) * 1000;
    if (holder && holder !== identity && !expired) return 'held';
    const body: V1Lease = { ...held, spec: spec(held, nowMs) };
    await api.replaceNamespacedLease({ name, namespace, body });
    return 'leading';
  };

  const tick = async () => {
    let result: Attempt;
    try {
      result = await attempt();
    } catch (error) {
      // 409: another replica wrote the Lease first. Anything else: the API server is unreachable.
      const conflict = error instanceof ApiException && error.code === 409;
      if (!conflict)
        logger.warn('leader: lease not renewed', { lease: name, error: (error as Error).message });
      result = conflict ? 'held' : 'failed';
    }
    if (closed) return;
    if (result === 'leading') {
      lastRenewMs = Date.now();
      setLeading(true);
    } else if (result === 'held' || Date.now() - lastRenewMs >= renewDeadlineMs) setLeading(false);
    timer = setTimeout(() => void (ticking = tick()), retryMs);
    timer.unref();
  };
  /** The attempt in flight: close() waits for it, or its renewal would land after the release. */
  let ticking: Promise<void> = tick();

  return {
    identity,
    isLeader: () => leading,
    whileLeading(job) {
      jobs.push(job);
      if (leading) job.start();
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      // A renewal in flight that read the Lease before the release would overwrite it (or the
      // release would meet its 409): the Lease stayed held until it expired (CI, under load).
      await ticking;
      setLeading(false);
      // Release whenever the Lease names this replica — not only while it counted as leading: a
      // renewal slower than the renew deadline (a loaded machine) had stepped it down, and the
      // Lease stayed held until it expired. An empty holder lets the next candidate take it at once.
      try {
        const held = await api.readNamespacedLease({ name, namespace });
        if (held.spec?.holderIdentity === identity)
          await api.replaceNamespacedLease({
            name,
            namespace,
            body: { ...held, spec: { ...held.spec, holderIdentity: '', leaseDurationSeconds: 1 } },
          });
      } catch (error) {
        // Not released: the others wait for the Lease to expire instead.
        logger.warn('leader: lease not released', { lease: name, error: (error as Error).message });
      }
    },
  };
}
