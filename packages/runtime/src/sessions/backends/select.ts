// Which backend runs a session's worker: the one AGENTRT_SESSIONS names for every session (a
// cluster's), else by the artifact — a process (bwrap or a bare process group), or a container
// image on docker or podman.
import { type RuntimeConfig } from '../../config.js';
import { type Logger } from '../../logger.js';
import { type LaunchSpec } from '../artifact.js';
import { type SessionBackend, type SharedJob, type SharedJobInput } from '../backend.js';
import { type Isolation } from '../isolation.js';
import { WorkerStartError } from '../worker.js';
import { createBwrapBackend } from './bwrap.js';
import { createDockerBackend } from './docker.js';
import { createKubernetesBackend } from './kubernetes/kubernetes.js';
import { createPodmanBackend } from './podman.js';
import { createProcessGroupBackend } from './process-group.js';

export interface Backends {
  /** The backend every session runs on, when the configuration names one (AGENTRT_SESSIONS). */
  readonly shared: SessionBackend | undefined;
  /** The backend of a worker launched as `launch`. */
  of(launch: LaunchSpec): SessionBackend;
  /** Removes what an earlier run left of the backends' workers. */
  sweep(): Promise<void>;
  /**
   * Runs the shared backend's shared jobs while `leader` leads (no Lease: here, now); the jobs,
   * for `close` to stop.
   */
  runSharedJobs(
    leader: { whileLeading(job: SharedJob): void } | undefined,
    input: SharedJobInput,
  ): SharedJob[];
}

export function selectBackends(options: {
  config: Readonly<RuntimeConfig>;
  isolation: Isolation;
  instrumentPath: () => string | undefined;
  logger: Logger;
}): Backends {
  const { config, isolation, instrumentPath, logger } = options;
  const shared = config.sessions === 'kubernetes' ? createKubernetesBackend(config, logger) : undefined;
  const docker = createDockerBackend();
  // Rootful podman: its session containers get egress rules and a relay bridged in from outside.
  const podman = isolation.hostIds
    ? createPodmanBackend({ config, hostIds: isolation.hostIds, cgroups: isolation.cgroups })
    : undefined;
  const process =
    isolation.mode === 'bwrap'
      ? createBwrapBackend({ config, isolation, instrumentPath })
      : createProcessGroupBackend(isolation);
  return {
    shared,
    of(launch) {
      if (shared) return shared;
      if (launch.kind === 'process') return process;
      if (launch.engine === 'docker') return docker;
      if (!podman)
        throw new WorkerStartError(
          `${launch.image} runs on podman, whose session containers need a root runtime with the bwrap sandbox available (their egress rules and telemetry relay are set up from outside)`,
        );
      return podman;
    },
    runSharedJobs(leader, input) {
      const jobs = shared?.sharedJobs?.(input) ?? [];
      for (const job of jobs)
        if (leader) leader.whileLeading(job);
        else job.start();
      return jobs;
    },
    async sweep() {
      await podman
        ?.sweep?.()
        .catch((error: unknown) =>
          logger.warn('podman: could not remove earlier containers', { error: String(error) }),
        );
    },
  };
}
