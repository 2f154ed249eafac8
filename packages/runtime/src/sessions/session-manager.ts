import { randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type RuntimeConfig } from '../config.js';
import { RuntimeApiError, notFound } from '../errors.js';
import { type Logger } from '../logger.js';
import { type LaunchSpec, launchOf, pinOptionsOf } from './artifact.js';
import { createWarmPool } from './warm-pool.js';
import { type CommandSpawn, type SessionBackend, type SessionTarget } from './backend.js';
import { createBwrapBackend } from './backends/bwrap.js';
import { createDockerBackend } from './backends/docker.js';
import { type KubernetesBackend, createKubernetesBackend } from './backends/kubernetes/kubernetes.js';
import { createPodmanBackend } from './backends/podman.js';
import { createProcessGroupBackend } from './backends/process-group.js';
import { type Isolation } from './isolation.js';
import { sweepSessionDirs } from './leftovers.js';
import {
  IMAGE_LAUNCH,
  createWorkerEnv,
  healthCheckOf,
  launchAttributes,
  workerAttributes,
} from './worker-launch.js';
import { createSessionTiming } from './session-timing.js';
import { holdStart, startFailure } from './start-outcome.js';
import { type PingState, type Worker, type WorkerExit, WorkerStartError } from './worker.js';

export type { CommandSpawn, SessionTarget } from './backend.js';

/** Hears one step of a session start: its name and wall-clock bounds (epoch ms). */
export type StartPhaseRecorder = (
  phase: string,
  startMs: number,
  endMs: number,
  attributes?: Record<string, string | number | boolean>,
) => void;

export type SessionState = 'starting' | 'ready' | 'stopping';
export type StopReason =
  'idle' | 'max-lifetime' | 'stopped' | 'unhealthy' | 'runtime-deleted' | 'shutdown' | `exited:${string}`;

/** One live session: a dedicated worker pinned to the version it started on. */
export interface Session {
  readonly runtimeId: string;
  readonly sessionId: string;
  readonly version: number;
  state: SessionState;
  worker: Worker | undefined;
  readonly startedAtMs: number;
  lastActivityMs: number;
  inflight: number;
  ping: PingState;
  /** True when it adopted a pre-started worker from the warm pool. */
  warm: boolean;
  /** Set while a fresh worker is being swapped in (`restart`): new calls wait for it. */
  replacing?: Promise<void> | undefined;
  /**
   * Another runtime replica started it (kubernetes: its pod found through the informer). This one
   * serves it and may stop it; its start and its timers are the other's, and a close forgets it.
   */
  adopted?: boolean;
  /** While it starts: resolves once it is ready, rejects with the start's failure (a 424 or 503). */
  starting?: Promise<void> | undefined;
  /** True while the invocation that started it waits for it (another caller meanwhile: 409). */
  startHeld?: boolean;
}

export interface SessionManager {
  /**
   * The ready session for this id, starting a worker on first use. Throws 402/409/424 as the spec
   * says. `phase` hears each step of a start (`queue`, `spawn`, `readiness`, or `warm-pool`) for the
   * runtime's StartSession span.
   */
  acquire(target: SessionTarget, sessionId: string, phase?: StartPhaseRecorder): Promise<Session>;
  /** Marks the end of one invocation on the session (resets its idle clock). */
  release(session: Session): void;
  stop(runtimeId: string, sessionId: string): Promise<void>;
  /**
   * Gives each live session of the runtime a fresh worker (a live artifact's new code), keeping the
   * session: the new worker starts beside the old one, calls arriving meanwhile wait for it, and the
   * old one is stopped, without waiting, once its calls in flight ended. Resolves with how many
   * sessions got one; a worker that fails to start leaves its session on the old one (rejects).
   */
  restart(runtimeId: string, targetOf: (session: Session) => SessionTarget): Promise<number>;
  stopRuntime(runtimeId: string): Promise<void>;
  /** Keeps the version's warm pool (sized from its recent demand); drops pools of other versions. */
  refreshWarmPool(target: SessionTarget): void;
  list(): Session[];
  get(runtimeId: string, sessionId: string): Session | undefined;
  warmCount(runtimeId?: string): number;
  /**
   * How to spawn a one-shot command inside a session's sandbox: the same isolation wrapper, working
   * directory, environment and private session dir its worker got.
   */
  commandSpawn(session: Session, argv: string[], timeoutS?: number): CommandSpawn;
  close(): Promise<void>;
}

export interface SessionManagerOptions {
  config: Readonly<RuntimeConfig>;
  isolation: Isolation;
  logger: Logger;
  /** The runtime's own origin once it listens, for `AGENTCORE_RUNTIME_URL` in A2A workers. */
  origin?: () => string;
  /**
   * Kubernetes sessions with several replicas: the Lease whose holder alone runs the idle and
   * lifetime reaper of every session pod (none: this replica runs it).
   */
  leader?: { whileLeading(job: { start(): void; stop(): void }): void } | undefined;
}

/** `restart` waits this long for a session's calls in flight on the old worker before swapping. */
const DRAIN_MS = 10_000;

export function createSessionManager({
  config,
  isolation,
  logger,
  origin,
  leader,
}: SessionManagerOptions): SessionManager {
  const sessions = new Map<string, Session>();
  const launched = createWorkerEnv({ config, logger, origin });
  /** How long a call waits for its session's pod to start (kubernetes); a local start is waited out. */
  const holdMs = config.sessions === 'kubernetes' ? config.kubernetesHoldMs : undefined;
  const { workerEnv } = launched;
  /** How to run a command beside each live worker (its backend's exec). */
  const execs = new WeakMap<Worker, (argv: string[], timeoutS?: number) => CommandSpawn>();
  const backends = {
    docker: createDockerBackend(),
    // Rootful podman: its session containers get egress rules and a relay bridged in from outside.
    podman: isolation.hostIds
      ? createPodmanBackend({ config, hostIds: isolation.hostIds, cgroups: isolation.cgroups })
      : undefined,
    process:
      isolation.mode === 'bwrap'
        ? createBwrapBackend({ config, isolation, instrumentPath: launched.instrumentPath })
        : createProcessGroupBackend(isolation),
  };
  // AGENTRT_SESSIONS=kubernetes: every session is a pod, whatever its artifact.
  const kubernetes: KubernetesBackend | undefined =
    config.sessions === 'kubernetes' ? createKubernetesBackend(config, logger) : undefined;
  // Idle and lifetime stops of every session pod: one replica's (the Lease holder's) job.
  const reaper = kubernetes?.reaper?.(config.pingIntervalMs, logger.child({ component: 'session-reaper' }));
  if (reaper) {
    if (leader) leader.whileLeading(reaper);
    else reaper.start();
  }
  const backendFor = (launch: LaunchSpec): SessionBackend => {
    if (kubernetes) return kubernetes;
    if (launch.kind === 'process') return backends.process;
    if (launch.engine === 'docker') return backends.docker;
    if (!backends.podman)
      throw new WorkerStartError(
        `${launch.image} runs on podman, whose session containers need a root runtime with the bwrap sandbox available (their egress rules and telemetry relay are set up from outside)`,
      );
    return backends.podman;
  };
  const sessionsRoot = join(config.dataDir, 'sessions');
  // Sessions start once what an earlier run left is gone (a stale volume mount included).
  const swept = Promise.all([
    sweepSessionDirs(sessionsRoot, logger),
    backends.podman
      ?.sweep?.()
      .catch((error: unknown) =>
        logger.warn('podman: could not remove earlier containers', { error: String(error) }),
      ),
  ]);
  let closing = false;
  const starting = new Set<Promise<void>>();

  // Booting workers compete for CPU; past a few at once they only slow each other down (and each
  // polls /ping), so starts beyond the limit wait their turn.
  let startsRunning = 0;
  const startQueue: (() => void)[] = [];
  const withStartSlot = async <T>(fn: () => Promise<T>): Promise<T> => {
    if (startsRunning >= config.maxConcurrentStarts) await new Promise<void>((r) => startQueue.push(r));
    else startsRunning++;
    try {
      return await fn();
    } finally {
      const next = startQueue.shift();
      if (next) next();
      else startsRunning--;
    }
  };

  const keyOf = (runtimeId: string, sessionId: string) => `${runtimeId}\u0000${sessionId}`;

  /**
   * The session of this id known here, or — kubernetes — the one another replica started: its pod,
   * found in the informer cache by the session's labels, becomes a session here too (the same pod
   * answers, so the same session memory). It ends when its pod ends, whoever deleted it.
   */
  const lookup = (runtimeId: string, sessionId: string): Session | undefined => {
    const key = keyOf(runtimeId, sessionId);
    const known = sessions.get(key);
    if (known || !kubernetes) return known;
    const found = kubernetes.find(runtimeId, sessionId);
    if (!found) return undefined;
    const session: Session = {
      runtimeId,
      sessionId,
      version: found.version,
      state: found.ready ? 'ready' : 'starting',
      worker: found.worker,
      startedAtMs: found.createdAtMs,
      lastActivityMs: Date.now(),
      inflight: 0,
      ping: { status: 'Unknown' },
      warm: found.warm,
      adopted: true,
    };
    sessions.set(key, session);
    execs.set(found.worker, found.exec);
    watchExit(session, found.worker);
    if (!found.ready)
      session.starting = found.worker.waitReady(config.startTimeoutMs).then(
        () => {
          session.state = 'ready';
          session.starting = undefined;
        },
        (error: unknown) => {
          // Its replica answers for a failed start and deletes the pod: this one forgets it.
          if (sessions.get(key) === session) sessions.delete(key);
          throw startFailure(error);
        },
      );
    return session;
  };

  /**
   * Spawns a worker for the version through its backend; resolves once it is spawned (not yet
   * ready). `sessionId` is known for a direct start and learnt later (`adopt`) by a warm-pool worker.
   */
  const startWorker = async (target: SessionTarget, tag: Record<string, string>, sessionId?: string) => {
    const containerUri =
      target.version.config.agentRuntimeArtifact.containerConfiguration?.containerUri ?? '';
    // A pod runs the version's image as the cluster pulls it: nothing is resolved on this host.
    const launch: LaunchSpec = kubernetes
      ? IMAGE_LAUNCH(target)
      : await launchOf(containerUri, target.version.artifact, pinOptionsOf(config));
    await swept;
    const id = randomUUID();
    const sessionDir = join(sessionsRoot, id);
    mkdirSync(sessionDir, { recursive: true, mode: 0o700 });
    chmodSync(sessionDir, 0o700);
    mkdirSync(join(sessionDir, 'tmp'), { recursive: true });
    mkdirSync(join(sessionDir, 'home'), { recursive: true });
    let servedSession = sessionId;
    const started = await backendFor(launch).start({
      id,
      target,
      launch,
      sessionDir,
      sessionId,
      servedSession: () => servedSession,
      healthCheck: healthCheckOf(target),
      logger: logger.child({
        runtimeId: target.runtime.id,
        runtimeArn: target.runtime.arn,
        workerId: id,
        ...tag,
      }),
      env: (port, relayed) => workerEnv(target, launch, port, sessionDir, relayed),
    });
    const { worker } = started;
    execs.set(worker, started.exec);
    worker.onExit(() => rmSync(sessionDir, { recursive: true, force: true }));
    const adopt = (sid: string) => {
      servedSession = sid;
    };
    return { worker, sessionDir, adopt, seal: started.seal };
  };

  /**
   * Starts a worker and waits for its `/ping`. bwrap sometimes fails to bring up the new network
   * namespace's loopback when many are created at once (RTM_NEWADDR answered ECHILD); that start is
   * retried, up to three times, since nothing of the session ran yet.
   */
  const startReady = async (
    target: SessionTarget,
    tag: Record<string, string>,
    sessionId: string | undefined,
    onWorker: (started: Awaited<ReturnType<typeof startWorker>>) => void,
  ): Promise<Awaited<ReturnType<typeof startWorker>>> => {
    for (let attempt = 1; ; attempt++) {
      const started = await startWorker(target, tag, sessionId);
      onWorker(started);
      try {
        await started.worker.waitReady(config.startTimeoutMs, () => closing);
        started.seal?.();
        return started;
      } catch (error) {
        if (attempt >= 3 || !/bwrap: loopback: Failed/.test(started.worker.lastOutput())) throw error;
        logger.warn('sandbox network setup failed; starting the worker again', { attempt, ...tag });
      }
    }
  };

  /** What a version's pods get of the session manager (env, probe) for a cluster's warm pool template. */
  const podWorkerRequest = (target: SessionTarget) => ({
    env: (port: number, relayed: boolean) =>
      workerEnv(target, IMAGE_LAUNCH(target), port, sessionsRoot, relayed),
    healthCheck: healthCheckOf(target),
  });

  const pool = createWarmPool({
    floor: config.warmPoolSize,
    cap: config.warmPoolMax,
    stopGraceMs: config.stopGraceMs,
    logger,
    closing: () => closing,
    start: (target, onWorker) =>
      withStartSlot(() => startReady(target, { pool: 'warm' }, undefined, onWorker).then(() => undefined)),
    cluster: kubernetes?.clusterPool && {
      pool: kubernetes.clusterPool,
      resize: (target, replicas) =>
        kubernetes.clusterPool?.resize(target, replicas, podWorkerRequest(target)),
    },
  });

  /**
   * A ready warm worker of the version for `sessionId`. A warm pod is claimed in the cluster first
   * (a label patch with its resourceVersion): one another runtime replica took is dropped.
   */
  const claimWarm = async (target: SessionTarget, sessionId: string) => {
    for (let warm = pool.take(target); warm; warm = pool.take(target)) {
      const podName = warm.worker.podName;
      if (!kubernetes || !podName || (await kubernetes.claim(podName, sessionId))) return warm;
      void warm.worker.stop(0);
    }
    return undefined;
  };

  const stopSession = async (session: Session, reason: StopReason): Promise<void> => {
    if (session.state === 'stopping') return;
    session.state = 'stopping';
    timing.forget(session);
    const exit = await session.worker?.stop(config.stopGraceMs);
    sessions.delete(keyOf(session.runtimeId, session.sessionId));
    logger.info('session stopped', {
      runtimeId: session.runtimeId,
      sessionId: session.sessionId,
      reason,
      exitCode: exit?.code,
      signal: exit?.signal,
    });
  };

  const timing = createSessionTiming({
    config,
    touch: kubernetes?.touch?.bind(kubernetes),
    shared: reaper !== undefined,
    stop: stopSession,
  });
  const { monitor, noteActivity } = timing;

  const onWorkerExit = (session: Session) => (exit: WorkerExit) => {
    if (session.state !== 'ready') return;
    const how = exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
    void stopSession(session, `exited:${how}`);
  };
  /** Each session's worker's exit stops the session; a worker swapped out is unsubscribed. */
  const exitWatch = new WeakMap<Session, () => void>();
  const watchExit = (session: Session, worker: Worker) => {
    exitWatch.get(session)?.();
    exitWatch.set(session, worker.onExit(onWorkerExit(session)));
  };

  /** Resolves once `done()` holds, polling, or after `ms` regardless; true if it held. */
  const until = async (done: () => boolean, ms: number): Promise<boolean> => {
    for (const deadline = Date.now() + ms; !done(); await new Promise((r) => setTimeout(r, 5)))
      if (Date.now() > deadline) return false;
    return true;
  };

  /**
   * `restart` of one session: a fresh worker started beside the old one, then swapped in once the
   * calls in flight on the old one ended (new ones wait on `replacing` meanwhile); the old worker
   * is stopped without anyone waiting for its grace period.
   */
  const replaceWorker = async (session: Session, target: SessionTarget): Promise<boolean> => {
    while (session.replacing) await session.replacing;
    const live = () => sessions.get(keyOf(session.runtimeId, session.sessionId)) === session;
    await until(() => session.state !== 'starting' || !live(), config.startTimeoutMs);
    if (session.state !== 'ready' || !live()) return false;
    let swapped!: () => void;
    session.replacing = new Promise<void>((r) => (swapped = r));
    let fresh: Worker | undefined;
    try {
      const tag = { sessionId: session.sessionId };
      const start = withStartSlot(() =>
        startReady(target, tag, session.sessionId, (w) => (fresh = w.worker)),
      ).then(() => undefined);
      starting.add(start); // close() waits for it, then stops the fresh worker with the session
      await start.finally(() => starting.delete(start));
      if (closing) throw new WorkerStartError('The runtime shut down while the session restarted');
      await until(() => session.inflight === 0, DRAIN_MS);
      if (session.state !== 'ready')
        throw new WorkerStartError('the session stopped while its new worker started');
      const old = session.worker;
      session.worker = fresh;
      session.warm = false;
      watchExit(session, fresh!);
      void old?.stop(config.stopGraceMs);
      logger.info('session worker replaced', {
        runtimeId: session.runtimeId,
        sessionId: session.sessionId,
        pid: fresh?.pid,
      });
      return true;
    } catch (error) {
      if (fresh && fresh !== session.worker) void fresh.stop(0);
      throw error;
    } finally {
      session.replacing = undefined;
      swapped();
    }
  };

  /** Gives a new session its worker: a warm one of its version, else one started for it. */
  const launchSession = async (session: Session, target: SessionTarget, phase?: StartPhaseRecorder) => {
    const { sessionId } = session;
    const queuedMs = Date.now();
    const warm = await claimWarm(target, sessionId);
    if (warm) {
      phase?.('warm-pool', queuedMs, Date.now(), {
        ...workerAttributes(warm.worker),
        launch_type: 'warm',
      });
      session.worker = warm.worker;
      session.warm = true;
      warm.adopt(sessionId);
      warm.worker.tagLogs({ sessionId });
      pool.fill(target);
      return;
    }
    await withStartSlot(async () => {
      const spawnMs = Date.now();
      if (spawnMs - queuedMs > 1) phase?.('queue', queuedMs, spawnMs);
      if (closing) throw new WorkerStartError('The runtime shut down while the session was starting');
      let readyMs = spawnMs;
      try {
        await startReady(target, { sessionId }, sessionId, ({ worker }) => {
          session.worker = worker;
          readyMs = Date.now();
          phase?.('spawn', spawnMs, readyMs, {
            ...workerAttributes(worker),
            'agentrt.isolation': kubernetes ? 'kubernetes' : isolation.mode,
            ...(worker.launchType ? {} : { launch_type: 'cold' }),
          });
        });
        session.warm = session.worker?.launchType?.() === 'warm';
      } finally {
        phase?.('readiness', readyMs, Date.now(), launchAttributes(session.worker));
      }
    });
    if (closing) throw new WorkerStartError('The runtime shut down while the session was starting');
    pool.fill(target); // the version's recent demand grew
  };

  return {
    async acquire(target, sessionId, phase) {
      if (closing) throw new RuntimeApiError('RetryableConflictException', 'The runtime is shutting down');
      const key = keyOf(target.runtime.id, sessionId);
      await sessions.get(key)?.replacing; // a fresh worker being swapped in serves this call
      const existing = lookup(target.runtime.id, sessionId);
      if (existing) {
        // A start nobody here waits for (another replica's pod, or one that outlived its caller's
        // hold) is waited for, up to the hold budget.
        if (existing.state === 'starting' && existing.starting && !existing.startHeld)
          await holdStart(existing, existing.starting, holdMs);
        if (existing.state !== 'ready' || existing.worker?.exited)
          throw new RuntimeApiError(
            'RetryableConflictException',
            'Session operation in progress, please retry',
          );
        existing.inflight++;
        noteActivity(existing);
        return existing;
      }
      if (sessions.size >= config.maxSessions)
        throw new RuntimeApiError(
          'ServiceQuotaExceededException',
          `Live session limit reached (maxVms ${config.maxSessions}); stop a session or raise AGENTRT_MAX_SESSIONS`,
        );
      const session: Session = {
        runtimeId: target.runtime.id,
        sessionId,
        version: target.version.version,
        state: 'starting',
        worker: undefined,
        startedAtMs: Date.now(),
        lastActivityMs: Date.now(),
        inflight: 1,
        ping: { status: 'Unknown' },
        warm: false,
      };
      sessions.set(key, session);
      const log = logger.child({ runtimeId: target.runtime.id, sessionId });
      const start = launchSession(session, target, phase);
      starting.add(start);
      session.starting = (async () => {
        try {
          await start;
        } catch (error) {
          sessions.delete(key);
          await session.worker?.stop(0);
          log.warn('session failed to start', {
            error: error instanceof Error ? error.message : String(error),
          });
          throw startFailure(error);
        } finally {
          starting.delete(start);
        }
        if (!session.worker)
          throw new RuntimeApiError('InternalServerException', 'session started without a worker');
        watchExit(session, session.worker);
        session.state = 'ready';
        session.starting = undefined;
        const { idleRuntimeSessionTimeout, maxLifetime } = target.version.config.lifecycleConfiguration;
        monitor(session, idleRuntimeSessionTimeout * 1000, maxLifetime * 1000);
        log.info('session started', {
          version: session.version,
          warm: session.warm,
          pid: session.worker.pid,
          startMs: Date.now() - session.startedAtMs,
        });
      })();
      session.startHeld = true;
      try {
        await holdStart(session, session.starting, holdMs);
      } catch (error) {
        session.inflight = 0; // a 503: the start goes on, nobody is in the session
        throw error;
      } finally {
        session.startHeld = false;
      }
      noteActivity(session);
      return session;
    },
    release(session) {
      session.inflight = Math.max(0, session.inflight - 1);
      session.lastActivityMs = Date.now();
      noteActivity(session);
    },
    async stop(runtimeId, sessionId) {
      const session = lookup(runtimeId, sessionId);
      if (!session) throw notFound(`Session ${sessionId} is not running on runtime ${runtimeId}`);
      if (session.state !== 'ready')
        throw new RuntimeApiError(
          'RetryableConflictException',
          'Session operation in progress, please retry',
        );
      await stopSession(session, 'stopped');
    },
    async restart(runtimeId, targetOf) {
      void pool.dropRuntime(runtimeId); // its warm workers run the code from before
      const live = [...sessions.values()].filter((s) => s.runtimeId === runtimeId);
      const replaced = await Promise.all(live.map((s) => replaceWorker(s, targetOf(s))));
      return replaced.filter(Boolean).length;
    },
    async stopRuntime(runtimeId) {
      const doomed = [...sessions.values()].filter((s) => s.runtimeId === runtimeId);
      await Promise.all([
        ...doomed.map((s) => stopSession(s, 'runtime-deleted')),
        pool.dropRuntime(runtimeId),
      ]);
    },
    refreshWarmPool: (target) => pool.refresh(target),
    list: () => [...sessions.values()],
    get: lookup,
    warmCount: (runtimeId) => pool.count(runtimeId),
    commandSpawn(session, argv, timeoutS) {
      const exec = session.worker && execs.get(session.worker);
      if (!exec)
        throw notFound(`Session ${session.sessionId} has no running worker on runtime ${session.runtimeId}`);
      return exec(argv, timeoutS);
    },
    async close() {
      closing = true;
      reaper?.stop();
      await Promise.allSettled([...starting]);
      await Promise.all([
        // Another replica's session lives on without this one.
        ...[...sessions.values()]
          .filter((s) => !s.adopted)
          .map((s) =>
            s.state === 'stopping' ? s.worker?.stop(config.stopGraceMs) : stopSession(s, 'shutdown'),
          ),
        pool.close(),
      ]);
      await kubernetes?.close();
    },
  };
}
