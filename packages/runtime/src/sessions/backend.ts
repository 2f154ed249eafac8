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
  /**
   * A second worker of a session whose first still runs (`restart`): a cluster backend makes a new
   * one beside it rather than join the session's existing one.
   */
  beside?: boolean | undefined;
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
  /** Another runtime replica's start of the same session, joined (its pod existed already). */
  adopted?: boolean | undefined;
}

/** A session's worker a cluster backend found in its cache, whichever runtime replica started it. */
export interface SharedSession extends StartedWorker {
  version: number;
  ready: boolean;
  /** A warm worker claimed for the session. */
  warm: boolean;
  createdAtMs: number;
}

/** Work one runtime replica does at a time (the Lease holder's): started and stopped with its lead. */
export interface SharedJob {
  start(): void;
  stop(): void;
}

/** What a backend's shared jobs need of the session manager. */
export interface SharedJobInput {
  /** The runtime versions sessions start on now (each runtime's latest READY version). */
  targets(): SessionTarget[];
  /**
   * The versions of a runtime whose sessions keep their storage (its latest, and those its endpoints
   * serve or move to), or undefined for a runtime this installation does not have: storage of
   * other versions of a runtime it has goes. Not given: no storage is removed.
   */
  storedVersions?: ((runtimeId: string) => number[] | undefined) | undefined;
  /** The environment and probe of a version's workers (for the warm workers a keeper makes). */
  worker(target: SessionTarget): Pick<WorkerRequest, 'env' | 'healthCheck'>;
  /** The warm pool's floor and cap (AGENTRT_WARM_POOL_SIZE, AGENTRT_WARM_POOL_MAX). */
  floor: number;
  cap: number;
  intervalMs: number;
  logger: Logger;
}

/**
 * What a backend whose sessions several runtime replicas share (a cluster) does beyond starting
 * workers. Every part is optional; the session manager asks, never the backend's kind.
 */
export interface SharedSessions {
  /** The live session of this id another replica started or serves, from the backend's cache. */
  find?(runtimeId: string, sessionId: string): SharedSession | undefined;
  /** Every live session the cluster runs (whichever replica started it), from the cache. */
  sessions?(): { runtimeId: string; sessionId: string }[];
  /** Notes an invocation of the session on its worker, for the shared idle reaper. */
  touch?(worker: Worker): void;
  /** How long a call waits for its session's worker to start before a 503 (none: waited out). */
  readonly holdMs?: number | undefined;
  /** Workers run the version's image as the cluster pulls it: nothing is resolved on this host. */
  readonly runsImages?: boolean;
  /**
   * Warm workers are the cluster's: `start` of a session claims one when there is one, and the
   * shared jobs keep the pools; the session manager keeps none of its own.
   */
  readonly keepsWarmPool?: boolean;
  /** Ready, unclaimed warm workers of the runtime. */
  warmCount?(runtimeId: string): number;
  /** Deletes the session storage of a runtime being deleted (its sessions stopped first). */
  dropStorage?(runtimeId: string): Promise<void>;
  /** The jobs one replica at a time runs (the warm-pool keeper, the idle and lifetime reaper). */
  sharedJobs?(input: SharedJobInput): SharedJob[];
  close?(): Promise<void>;
}

/**
 * One way of running a session's worker — a process group, a bubblewrap sandbox, a container. The
 * session lifecycle (acquire, warm pool, idle and lifetime stops, health) is the session manager's
 * and the same for all; a backend starts a worker, and the Worker it returns is how the runtime
 * reaches it, probes it, reads its usage and stops it.
 */
export interface SessionBackend extends SharedSessions {
  readonly name: 'process-group' | 'bwrap' | 'docker' | 'podman' | 'kubernetes';
  /** Removes what a runtime that was killed left of this backend's workers (before any session starts). */
  sweep?(): Promise<void>;
  start(request: WorkerRequest): Promise<StartedWorker>;
}

/** The `mountPath` of the version's sessionStorage filesystem, if it has one. */
export function sessionStorageMount(target: SessionTarget): string | undefined {
  for (const entry of target.version.config.filesystemConfigurations ?? []) {
    const storage = (entry as { sessionStorage?: { mountPath?: unknown } } | null)?.sessionStorage;
    if (typeof storage?.mountPath === 'string') return storage.mountPath.replace(/\/+$/, '');
  }
  return undefined;
}
