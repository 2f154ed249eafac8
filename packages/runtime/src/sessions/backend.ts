import { type Readable } from 'node:stream';
import { type RuntimeRecord, type VersionRecord } from '../control/store.js';
import { type Logger } from '../logger.js';
import { type LaunchSpec } from './artifact.js';
import { type CommandCgroup } from './cgroups.js';
import { type Worker } from './worker.js';

/** A runtime version sessions are started for. */
export interface SessionTarget {
  runtime: RuntimeRecord;
  version: VersionRecord;
}

/** A command a backend runs itself, without a helper process (pods/exec from the runtime). */
export interface CommandRun {
  stdout: Readable;
  stderr: Readable;
  /** Resolves with its exit code (128 + the signal's number when killed); rejects if it could not start. */
  exitCode: Promise<number>;
  /** Ends it at once. */
  kill(): void;
}

/** A command wrapped in a session's isolation, ready for `spawnHelper` (or run by its backend: `run`). */
export interface CommandSpawn {
  /** Helpers by absolute path, ending with the shell that takes `env` from ENV_FD. */
  argv: string[];
  cwd: string;
  /** The worker's environment, handed over on ENV_FD. */
  env: Record<string, string>;
  /** The command's own cgroup inside the session's (joined before anything runs); none without cgroups. */
  cgroup: CommandCgroup | undefined;
  /** Set when the backend runs it itself; `argv` is then what it runs, for the record. */
  run?: (() => CommandRun) | undefined;
}

/** One session's worker to start, as the lifecycle above the backends decided it. */
export interface WorkerRequest {
  /** Names the worker, its folder and its cgroup. */
  id: string;
  target: SessionTarget;
  launch: LaunchSpec;
  /** The worker's private folder (`<data dir>/sessions/<id>`), made before and removed after it. */
  sessionDir: string;
  /** The session it serves when known at start; a warm-pool worker learns it later (servedSession). */
  sessionId: string | undefined;
  servedSession: () => string | undefined;
  /** `/ping` for HTTP, A2A and AG-UI containers; a TCP connect for MCP ones. */
  healthCheck: 'ping' | 'connect';
  logger: Logger;
  /** Hears the worker's raw output as it comes, both streams (a node keeps it as the pod's log). */
  output?: ((text: string) => void) | undefined;
  /**
   * The worker's environment for its `PORT`: `relayed` when its telemetry goes through a
   * session relay (the only OTLP endpoint a sandbox reaches), else straight to the collector.
   */
  env: (port: number, relayed: boolean) => Record<string, string>;
}

/** A started (not yet ready) worker and how to run commands beside it. */
export interface StartedWorker {
  worker: Worker;
  /**
   * InvokeAgentRuntimeCommand: `argv` in the worker's session, as its user, with its environment.
   * `timeoutS`: where a backend cannot kill what the command started itself, it has it killed then.
   */
  exec(argv: string[], timeoutS?: number): CommandSpawn;
  /** Called once the worker answered its first probe. */
  seal?: (() => void) | undefined;
}

/**
 * One way of running a session's worker — a process group, a bubblewrap sandbox, a container. The
 * session lifecycle (acquire, warm pool, idle and lifetime stops, health) is the session manager's
 * and the same for all; a backend starts a worker, and the Worker it returns is how the runtime
 * reaches it, probes it, reads its usage and stops it.
 */
export interface SessionBackend {
  readonly name: 'process-group' | 'bwrap' | 'docker' | 'podman' | 'kubernetes';
  /** Removes what a runtime that was killed left of this backend's workers (before any session starts). */
  sweep?(): Promise<void>;
  start(request: WorkerRequest): Promise<StartedWorker>;
}

/**
 * A warm pool its cluster keeps (agent-sandbox's SandboxWarmPool: the controller makes the warm
 * sandboxes, a session's claim adopts one). The session manager only sizes it from its demand.
 */
export interface ClusterWarmPool {
  /** Makes the version's pool (and what it needs) on first use and sets its size. */
  resize(target: SessionTarget, replicas: number, worker: Pick<WorkerRequest, 'env' | 'healthCheck'>): void;
  /** Deletes the runtime's pools, but the one of version `keep`. */
  drop(runtimeId: string, keep?: number): Promise<void>;
  /** Ready, unclaimed warm sandboxes of the runtime's pools (all runtimes: undefined). */
  count(runtimeId?: string): number;
}

/** The `mountPath` of the version's sessionStorage filesystem, if it has one. */
export function sessionStorageMount(target: SessionTarget): string | undefined {
  for (const entry of target.version.config.filesystemConfigurations ?? []) {
    const storage = (entry as { sessionStorage?: { mountPath?: unknown } } | null)?.sessionStorage;
    if (typeof storage?.mountPath === 'string') return storage.mountPath.replace(/\/+$/, '');
  }
  return undefined;
}
