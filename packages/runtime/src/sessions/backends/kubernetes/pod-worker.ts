// A session's pod as the session manager's Worker: reached at podIP:8080 (read from the pod cache),
// ready when the pod's Ready condition is True, ended when the pod ends or is deleted. Its start
// failures name the pod's events and last log lines.
import { Agent } from 'node:http';
import { connect } from 'node:net';
import { type CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { type Logger } from '../../../logger.js';
import { type Worker, type WorkerExit, WorkerStartError } from '../../worker.js';
import { type PingState, pingOver } from '../../worker-probe.js';
import { ClusterWorker } from './cluster-worker.js';
import { type PodCache, isReady, podFailure } from './pod-cache.js';
import { followPodLog } from './pod-log.js';
import { POD_PORT } from './pod-spec.js';

export interface PodWorkerOptions {
  name: string;
  namespace: string;
  core: CoreV1Api;
  cache: PodCache;
  healthCheck: 'ping' | 'connect';
  /** How the session got it: a claimed warm pod, or one made for it. */
  launch?: 'warm' | 'cold' | undefined;
  /**
   * Where the pod's output goes once it runs (pods/log followed); none for a pod another replica
   * made, whose output that replica logs.
   */
  logs?: { kubeConfig: KubeConfig; logger: Logger } | undefined;
}

const LOG_LINES = 20;

export class PodWorker extends ClusterWorker implements Worker {
  readonly agent = new Agent({ keepAlive: true, maxSockets: 64 });
  host: string | undefined;
  exited: WorkerExit | undefined;
  private output = '';
  private readonly unfollow: () => void;
  private logger: Logger | undefined;
  private log: { stop(): void } | undefined;

  constructor(private readonly options: PodWorkerOptions) {
    super();
    // A pod made by another replica (or already known) has its address in the cache now.
    this.host = options.cache.get(options.name)?.status?.podIP;
    this.logger = options.logs?.logger;
    this.unfollow = options.cache.follow(options.name, (pod, deleted) => {
      if (pod.status?.podIP) this.host = pod.status.podIP;
      if (this.host && !deleted) this.followLog();
      const failure = podFailure(pod);
      if (deleted || (failure && !failure.startsWith('its '))) this.exit(pod, deleted);
      return this.exited !== undefined;
    });
  }

  get id(): string {
    return this.options.name;
  }

  get podName(): string {
    return this.options.name;
  }

  launchType(): 'warm' | 'cold' | undefined {
    return this.options.launch;
  }

  /** Once the pod runs (it has an address): its output into the runtime's log. */
  private followLog(): void {
    const { logs, namespace, name } = this.options;
    if (this.log || !logs) return;
    this.log = followPodLog({
      kubeConfig: logs.kubeConfig,
      namespace,
      name,
      container: 'agent',
      logger: () => this.logger ?? logs.logger,
      alive: () => this.exited === undefined,
    });
  }

  private exit(pod: V1Pod, deleted: boolean): void {
    if (this.exited) return;
    const code = pod.status?.containerStatuses?.[0]?.state?.terminated?.exitCode;
    this.exited = {
      code: code ?? (deleted ? 143 : 1),
      signal: deleted && code === undefined ? 'SIGTERM' : null,
    };
    this.agent.destroy();
    this.log?.stop();
    this.notifyExit(this.exited);
  }

  /** Resolves once the pod is Ready; rejects with its events and last log lines when it cannot be. */
  async waitReady(timeoutMs: number, cancelled?: () => boolean): Promise<void> {
    const { cache, name } = this.options;
    const outcome = await new Promise<string | undefined>((resolve) => {
      const timer = setTimeout(
        () =>
          resolve(`Runtime initialization time exceeded: pod ${name} was not Ready within ${timeoutMs} ms`),
        timeoutMs,
      );
      const check = (pod: V1Pod | undefined, deleted: boolean): boolean => {
        const failure = pod && !deleted && !isReady(pod) ? podFailure(pod) : undefined;
        const reason = deleted
          ? `pod ${name} was deleted before it was Ready`
          : pod && (isReady(pod) ? null : failure && `pod ${name}: ${failure}`);
        if (reason === undefined && !cancelled?.()) return false;
        clearTimeout(timer);
        if (pod?.status?.podIP) this.host = pod.status.podIP;
        resolve(reason ?? (cancelled?.() ? 'the start was cancelled' : undefined));
        return true;
      };
      if (!check(cache.get(name), false)) cache.follow(name, check);
    });
    if (outcome === undefined) return;
    await this.readOutput();
    throw new WorkerStartError(`${outcome}.\n${await this.describe()}`);
  }

  /** The pod's events, for a start failure. */
  private async describe(): Promise<string> {
    const { core, namespace, name } = this.options;
    const events = await core
      .listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` })
      .then((list) => list.items.map((e) => `${e.type ?? ''} ${e.reason ?? ''}: ${e.message ?? ''}`))
      .catch((error: unknown) => [`(events unavailable: ${String(error)})`]);
    return `Events:\n${events.join('\n') || '(none)'}\nLast output:\n${this.output || '(none)'}`;
  }

  private async readOutput(): Promise<void> {
    const { core, namespace, name } = this.options;
    this.output = await core
      .readNamespacedPodLog({ name, namespace, tailLines: LOG_LINES })
      .catch(() => this.output);
  }

  ping(timeoutMs = 2000): Promise<PingState> {
    const host = this.host;
    if (!host) return Promise.reject(new Error(`pod ${this.options.name} has no IP yet`));
    if (this.options.healthCheck === 'ping') return pingOver({ host, port: POD_PORT }, this.agent, timeoutMs);
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port: POD_PORT, timeout: timeoutMs });
      socket.once('connect', () => {
        socket.destroy();
        resolve({ status: 'Healthy' });
      });
      socket.once('timeout', () => socket.destroy(new Error('connect timed out')));
      socket.once('error', reject);
    });
  }

  lastOutput(): string {
    return this.output;
  }

  async exitedWithin(ms: number): Promise<boolean> {
    if (this.exited) return true;
    const done = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.onExit(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    await this.readOutput();
    return done;
  }

  /** Deletes the pod (grace `graceMs`) and resolves once the watch saw it go. */
  async stop(graceMs: number): Promise<WorkerExit> {
    const { core, namespace, name } = this.options;
    if (this.exited && this.options.cache.get(name) === undefined) return this.exited;
    const gracePeriodSeconds = Math.ceil(graceMs / 1000);
    await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds }).catch((error: unknown) => {
      if ((error as { code?: number }).code !== 404) throw error;
    });
    if (!this.options.cache.get(name)) this.exit({} as V1Pod, true);
    await this.exitedWithin(graceMs + 10_000);
    this.unfollow();
    return this.exited ?? { code: null, signal: 'SIGKILL' };
  }

  tagLogs(fields: Record<string, unknown>): void {
    if (this.logger) this.logger = this.logger.child(fields);
  }
}
