// A session's SandboxClaim as the session manager's Worker (agent-sandbox mode). The controller
// binds the claim to a sandbox — a warm-pool one it adopts, or one it makes — and the sandbox's
// pod serves the session: once the claim names its sandbox and the sandbox its pod (annotation
// agents.x-k8s.io/pod-name), a PodWorker reaches that pod. Ready is the claim's Ready condition,
// which the controller forwards from the sandbox's; stop deletes the claim (its sandbox and pod
// go with it, by owner references).
import { Agent } from 'node:http';
import { type CoreV1Api } from '@kubernetes/client-node';
import { type Worker, type WorkerExit, WorkerStartError } from '../../worker.js';
import { type PingState } from '../../worker-probe.js';
import { ClusterWorker } from './cluster-worker.js';
import { type PodCache } from './pod-cache.js';
import { PodWorker, type PodWorkerOptions } from './pod-worker.js';
import { type SandboxCache } from './sandbox-cache.js';
import { SANDBOX_KEYS, type SandboxObject, conditionTrue } from './sandbox-spec.js';

export interface ClaimWorkerOptions {
  claim: string;
  namespace: string;
  core: CoreV1Api;
  pods: PodCache;
  cache: SandboxCache;
  healthCheck: 'ping' | 'connect';
  /** Deletes the claim (404: already gone). */
  deleteClaim(name: string): Promise<void>;
  /** Where the pod's output goes (pods/log followed); none for a claim another replica made. */
  logs?: PodWorkerOptions['logs'];
}

interface Binding {
  podName: string;
  launch: 'warm' | 'cold';
}

/** The sandbox the claim is bound to, once the controller wrote it on both objects. */
function bindingOf(claim: SandboxObject | undefined, cache: SandboxCache): Binding | undefined {
  const name = claim?.status?.sandbox?.name || claim?.metadata.annotations?.[SANDBOX_KEYS.sandboxName];
  const sandbox = name ? cache.sandboxes.get(name) : undefined;
  const owner = sandbox?.metadata.ownerReferences?.find((o) => o.controller);
  const podName = sandbox?.metadata.annotations?.[SANDBOX_KEYS.podName];
  if (!podName || owner?.uid !== claim?.metadata.uid) return undefined;
  const launch = sandbox?.metadata.labels?.[SANDBOX_KEYS.launchType] === 'warm' ? 'warm' : 'cold';
  return { podName, launch };
}

/** The claim's Ready condition as a sentence (the controller's reason and message). */
function readiness(claim: SandboxObject | undefined): string {
  const ready = claim?.status?.conditions?.find((c) => c.type === 'Ready');
  return ready
    ? `Ready=${ready.status} (${ready.reason ?? ''}: ${ready.message ?? ''})`
    : 'no Ready condition yet';
}

export class ClaimWorker extends ClusterWorker implements Worker {
  private pod: PodWorker | undefined;
  private launched: 'warm' | 'cold' | undefined;
  private gone: WorkerExit | undefined;
  private fields: Record<string, unknown> = {};
  private readonly idleAgent = new Agent({ keepAlive: true, maxSockets: 64 });

  /** A claim already bound (another replica's session) is reached at once. */
  constructor(private readonly options: ClaimWorkerOptions) {
    super();
    const binding = bindingOf(options.cache.claims.get(options.claim), options.cache);
    if (binding) this.bind(binding);
  }

  private bind(binding: Binding): PodWorker {
    this.launched = binding.launch;
    const { namespace, core, pods, healthCheck, logs } = this.options;
    const pod = new PodWorker({ name: binding.podName, namespace, core, cache: pods, healthCheck, logs });
    pod.tagLogs(this.fields);
    pod.onExit((exit) => this.exit(exit));
    this.pod = pod;
    return pod;
  }

  get id(): string {
    return this.options.claim;
  }
  get podName(): string | undefined {
    return this.pod?.podName;
  }
  get host(): string | undefined {
    return this.pod?.host;
  }
  get agent(): Agent {
    return this.pod?.agent ?? this.idleAgent;
  }
  get exited(): WorkerExit | undefined {
    return this.gone ?? this.pod?.exited;
  }
  launchType(): 'warm' | 'cold' | undefined {
    return this.launched;
  }

  private exit(exit: WorkerExit): void {
    this.gone ??= exit;
    this.notifyExit(this.gone);
  }

  /** Binds (claim → sandbox → pod), then waits for the pod and the claim to be Ready. */
  async waitReady(timeoutMs: number, cancelled?: () => boolean): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const binding = await this.until(timeoutMs, cancelled, (claim) => bindingOf(claim, this.options.cache));
    if (typeof binding === 'string')
      throw await this.failure(`${binding}: not bound to a sandbox with a pod`);
    const pod = this.pod ?? this.bind(binding);
    // The pod's own failure (its events and last output) with what the claim says.
    await pod.waitReady(Math.max(1, deadline - Date.now()), cancelled).catch((error: Error) => {
      const claim = this.options.cache.claims.get(this.options.claim);
      throw new WorkerStartError(`claim ${this.options.claim}, ${readiness(claim)}: ${error.message}`, {
        cause: error,
      });
    });
    const ready = await this.until(deadline - Date.now(), cancelled, (claim) =>
      conditionTrue(claim, 'Ready') ? true : undefined,
    );
    if (typeof ready === 'string') throw await this.failure(`${ready}: its pod is Ready, the claim is not`);
  }

  /**
   * Resolves with what `check` finds on the claim (and its sandbox) once it finds something, or
   * with why it never did: the deadline, the claim's deletion, a cancelled start.
   */
  private until<T>(
    timeoutMs: number,
    cancelled: (() => boolean) | undefined,
    check: (claim: SandboxObject | undefined) => T | undefined,
  ): Promise<T | string> {
    const { cache, claim: name } = this.options;
    return new Promise((resolve) => {
      let sandbox = { name: '', stop: () => undefined as unknown };
      let finished = false;
      const done = (outcome: T | string) => {
        finished = true;
        clearTimeout(timer);
        stopClaim();
        sandbox.stop();
        resolve(outcome);
      };
      const timer = setTimeout(
        () => done(`Runtime initialization time exceeded: claim ${name} after ${Math.max(0, timeoutMs)} ms`),
        Math.max(0, timeoutMs),
      );
      const look = (deleted = false): boolean => {
        if (finished) return true;
        follow();
        const claim = cache.claims.get(name);
        if (deleted) done(`claim ${name} was deleted before it was Ready`);
        else if (cancelled?.()) done('the start was cancelled');
        else {
          const found = check(claim);
          if (found === undefined) return false;
          done(found);
        }
        return true;
      };
      // The sandbox side of a binding (its pod-name annotation) can come after the claim's.
      const follow = () => {
        const next = this.sandboxOf();
        if (next === sandbox.name) return;
        sandbox.stop();
        sandbox = { name: next, stop: cache.sandboxes.follow(next, () => look()) };
      };
      const stopClaim = cache.claims.follow(name, (_claim, deleted) => look(deleted));
      look();
    });
  }

  private sandboxOf(): string {
    const claim = this.options.cache.claims.get(this.options.claim);
    return (
      claim?.status?.sandbox?.name ||
      claim?.metadata.annotations?.[SANDBOX_KEYS.sandboxName] ||
      this.options.claim
    );
  }

  /** A start failure naming the claim's Ready condition and the events of the claim, its sandbox and pod. */
  private async failure(reason: string): Promise<WorkerStartError> {
    const claim = this.options.cache.claims.get(this.options.claim);
    const names = [this.options.claim, this.sandboxOf(), this.pod?.podName].filter(
      (n, i, all): n is string => !!n && all.indexOf(n) === i,
    );
    const events = await Promise.all(names.map((n) => this.events(n)));
    return new WorkerStartError(
      `${reason}; claim ${readiness(claim)}.\nEvents:\n${events.flat().join('\n') || '(none)'}`,
    );
  }

  private events(name: string): Promise<string[]> {
    const { core, namespace } = this.options;
    return core
      .listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` })
      .then((list) =>
        list.items.map(
          (e) =>
            `${e.involvedObject.kind ?? ''} ${name}: ${e.type ?? ''} ${e.reason ?? ''}: ${e.message ?? ''}`,
        ),
      )
      .catch((error: unknown) => [`(events of ${name} unavailable: ${String(error)})`]);
  }

  ping(timeoutMs?: number): Promise<PingState> {
    if (!this.pod) return Promise.reject(new Error(`claim ${this.options.claim} has no pod yet`));
    return this.pod.ping(timeoutMs);
  }

  lastOutput(): string {
    return this.pod?.lastOutput() ?? '';
  }

  async exitedWithin(ms: number): Promise<boolean> {
    if (this.pod) return this.pod.exitedWithin(ms);
    return this.exited !== undefined;
  }

  /** Deletes the claim; resolves once its pod is gone (the controller's owner references take it). */
  async stop(graceMs: number): Promise<WorkerExit> {
    await this.options.deleteClaim(this.options.claim);
    if (!this.pod) this.exit({ code: 143, signal: 'SIGTERM' });
    await this.pod?.exitedWithin(graceMs + 10_000);
    this.idleAgent.destroy();
    return this.exited ?? { code: null, signal: 'SIGKILL' };
  }

  /** Fields for the pod's log lines (the pod may not be bound yet). */
  tagLogs(fields: Record<string, unknown>): void {
    this.fields = { ...this.fields, ...fields };
    this.pod?.tagLogs(fields);
  }
}
