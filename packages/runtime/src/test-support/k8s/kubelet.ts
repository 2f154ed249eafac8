// A kubelet for tests (never shipped): it schedules unbound pods onto its node, watches the pods
// bound to it (an informer of @kubernetes/client-node against the API server, test or real), and
// runs each one as a real worker through a local session backend (process-group: the container's
// image must be a `file://` directory the runtime's artifact rules can start). Each pod gets its own
// loopback address (127.0.x.y) with its container port forwarded to the worker, so the pods really
// serve HTTP at podIP:8080. It reports phase, the Ready condition, podIP and container states,
// writes the events a kubelet writes, mounts a pod's persistentVolumeClaim (pod-volumes.ts), and
// answers pods/log and pods/exec for the API server (pod-io.ts).
import { mkdirSync, rmSync } from 'node:fs';
import {
  type AddressInfo,
  type NetConnectOpts,
  type Server,
  type Socket,
  connect,
  createServer,
} from 'node:net';
import { join } from 'node:path';
import { type Writable } from 'node:stream';
import {
  CoreV1Api,
  KubeConfig,
  type V1Pod,
  PatchStrategy,
  makeInformer,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { createLogger } from '../../logger.js';
import { launchOf, type LaunchSpec } from '../../sessions/artifact.js';
import { type SessionBackend, type SessionTarget, type StartedWorker } from '../../sessions/backend.js';
import { SECURE_PATH } from '../../sessions/helpers.js';
import { type KubeApiServer } from './api-server.js';
import { type KubeObject, timestamp } from './objects.js';
import { ContainerLog, execIn } from './pod-io.js';
import { type ExecOptions, type LogOptions, type PodRuntime } from './pod-runtime.js';
import { VolumeError, podStorage, targetWith } from './pod-volumes.js';

export interface KubeletOptions {
  api: KubeApiServer;
  kubeconfig: string;
  nodeName?: string;
  /** Where each pod's folder (its HOME and TMPDIR) is made. */
  dataDir: string;
  backend: SessionBackend;
  /** How long a container may take to answer its readiness probe (default 60 s). */
  readyTimeoutMs?: number;
}

export interface Kubelet {
  readonly nodeName: string;
  /** Pods running on it now. */
  running(): number;
  /**
   * Fault: for `ms`, pod `name`'s open connections are cut and new ones are refused (`refuse`: its
   * listener closed, as while a pod's address does not route yet) or taken and dropped once the
   * request came in (`reset`). The counter says how many requests other than `/ping` probes (the
   * runtime's health pings) the fault took.
   */
  cut(name: string, ms: number, how: 'refuse' | 'reset'): { taken: number };
  close(): Promise<void>;
}

interface RunningPod {
  name: string;
  started: StartedWorker | undefined;
  forward: Server | undefined;
  /** Listens at the pod's address again (after `cut`). */
  relisten?: () => Promise<Server>;
  log: ContainerLog;
  dir: string;
  stopped: boolean;
}

/**
 * What the local backends read of a version (session storage, network mode, the telemetry relay's
 * identity): a pod carries none of it, so a node's sandboxes get the plain defaults (and the pod's
 * claim as session storage).
 */
const NODE_TARGET = {
  runtime: { id: 'pod', arn: 'pod', name: 'pod' },
  version: { config: { environmentVariables: {}, networkConfiguration: { networkMode: 'PUBLIC' } } },
} as unknown as SessionTarget;

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const container = (pod: V1Pod) => pod.spec?.containers[0];

class TestKubelet implements PodRuntime {
  private readonly core: CoreV1Api;
  private readonly pods = new Map<string, RunningPod>();
  /**
   * Pod IPs are 127.<block>.x.y: a random block per kubelet, so kubelets of test files running side
   * by side never hand out the same address (a taken one is skipped).
   */
  private readonly ipBlock = 1 + Math.floor(Math.random() * 254);
  private nextIp = 1;
  private readonly informer;

  constructor(
    readonly nodeName: string,
    private readonly options: KubeletOptions,
  ) {
    const kc = new KubeConfig();
    kc.loadFromFile(options.kubeconfig);
    this.core = kc.makeApiClient(CoreV1Api);
    this.informer = makeInformer(kc, '/api/v1/pods', () => this.core.listPodForAllNamespaces());
    this.informer.on('add', (pod) => void this.seen(pod));
    this.informer.on('update', (pod) => void this.seen(pod));
    this.informer.on('delete', (pod) => void this.gone(pod));
    // client-node stops on a cut connection: a kubelet keeps watching, from where it was.
    this.informer.on('error', () => setTimeout(() => void this.informer.start().catch(() => undefined), 200));
  }

  start(): Promise<void> {
    this.options.api.attachNode(this.nodeName, this);
    return this.informer.start();
  }

  running(): number {
    return this.pods.size;
  }

  cut(name: string, ms: number, how: 'refuse' | 'reset'): { taken: number } {
    const running = [...this.pods.values()].find((p) => p.name === name);
    if (!running?.forward || !running.relisten) throw new Error(`pod ${name} does not serve on this node`);
    const taken = { taken: 0 };
    const address = running.forward.address() as AddressInfo;
    running.forward.close();
    (running.forward as Server & { cut: () => void }).cut();
    running.forward = undefined;
    // `reset`: the address answers, and drops each connection once its request's first bytes came.
    const dropper =
      how === 'reset'
        ? createServer((socket) => {
            socket.once('data', (head: Buffer) => {
              if (!/^GET \/ping /.test(head.toString('latin1'))) taken.taken++;
              socket.resetAndDestroy();
            });
          }).listen(address.port, address.address)
        : undefined;
    setTimeout(() => {
      dropper?.close();
      if (running.stopped) return;
      void running.relisten!().then((server) => {
        if (running.stopped) server.close();
        else running.forward = server;
      });
    }, ms).unref();
    return taken;
  }

  private async seen(pod: V1Pod): Promise<void> {
    const { name, namespace, uid } = pod.metadata ?? {};
    if (!name || !namespace || !uid) return;
    if (!pod.spec?.nodeName) return this.bind(name, namespace);
    if (pod.spec.nodeName !== this.nodeName || this.pods.has(uid) || pod.status?.phase !== 'Pending') return;
    const dir = join(this.options.dataDir, uid);
    const running: RunningPod = {
      name,
      started: undefined,
      forward: undefined,
      dir,
      stopped: false,
      log: new ContainerLog(),
    };
    this.pods.set(uid, running);
    await this.run(pod, running).catch((error: unknown) =>
      this.fail(pod, String((error as Error).message ?? error)),
    );
  }

  /** The scheduler's part: every unbound pod goes to this node. */
  private async bind(name: string, namespace: string): Promise<void> {
    const body = { spec: { nodeName: this.nodeName } };
    await this.core.patchNamespacedPod({ name, namespace, body }, merge).catch(() => undefined);
    await this.event(
      { metadata: { name, namespace } } as V1Pod,
      'Normal',
      'Scheduled',
      `Successfully assigned ${namespace}/${name} to ${this.nodeName}`,
    );
  }

  private async launchOf(pod: V1Pod): Promise<LaunchSpec> {
    const image = container(pod)?.image ?? '';
    if (!image.startsWith('file://')) {
      const message = `Failed to pull image "${image}": the test kubelet runs file:// directories only`;
      await this.waiting(pod, 'ErrImagePull', message);
      throw new ImagePullError(message);
    }
    const launch = await launchOf(image, undefined, { engine: 'auto', maxSnapshotBytes: 0 });
    await this.event(pod, 'Normal', 'Pulled', `Container image "${image}" already present on machine`);
    return launch;
  }

  private async run(pod: V1Pod, running: RunningPod): Promise<void> {
    const storage = await podStorage(this.core, pod, {
      deadline: Date.now() + (this.options.readyTimeoutMs ?? 60_000),
      alive: () => !running.stopped,
      warn: (message) => this.event(pod, 'Warning', 'FailedMount', message),
    });
    if (storage && this.options.backend.name === 'process-group')
      throw new VolumeError('this node runs pods as process groups, which mount no volumes');
    const launch = await this.launchOf(pod);
    for (const dir of ['home', 'tmp']) mkdirSync(join(running.dir, dir), { recursive: true, mode: 0o700 });
    const env = Object.fromEntries((container(pod)?.env ?? []).map((e) => [e.name, e.value ?? '']));
    // An image's config would give PATH; a folder's HOME and TMPDIR are the pod's own.
    env.PATH ??= SECURE_PATH;
    Object.assign(env, {
      // As the session manager names them (a sandbox links them into its scratch tmpfs).
      HOME: join(running.dir, 'home'),
      TMPDIR: join(running.dir, 'tmp'),
      HOSTNAME: pod.metadata?.name ?? '',
    });
    const started = await this.options.backend.start({
      id: pod.metadata?.uid as string,
      target: targetWith(NODE_TARGET, storage),
      launch,
      sessionDir: running.dir,
      // The node's backend keeps a session's storage folder per session id: here, per claim.
      sessionId: storage?.claimUid,
      servedSession: () => undefined,
      healthCheck: container(pod)?.readinessProbe?.tcpSocket ? 'connect' : 'ping',
      logger: createLogger({ level: 'error', sink: () => undefined }),
      output: (text) => running.log.write(text),
      env: (port) => ({ ...env, PORT: String(port), HOST: '127.0.0.1' }),
    });
    running.started = started;
    if (running.stopped) return void (await started.worker.stop(0));
    const { socketPath, port } = started.worker;
    const target = socketPath ? { path: socketPath } : { port, host: '127.0.0.1' };
    const { server, podIp } = await this.listenOnNewIp(containerPort(pod), target);
    running.forward = server;
    running.relisten = () => forward(podIp, containerPort(pod), target);
    await this.event(pod, 'Normal', 'Started', `Started container ${container(pod)?.name ?? ''}`);
    // Running first, then the exit (at once if it came already), so an early exit's status is the last.
    if (!started.worker.exited) await this.status(pod, 'Running', podIp, false);
    started.worker.onExit((exit) => {
      running.log.end();
      void this.exited(pod, running, exit.code ?? 137);
    });
    try {
      await started.worker.waitReady(this.options.readyTimeoutMs ?? 60_000, () => running.stopped);
    } catch (error) {
      if (!running.stopped)
        await this.event(
          pod,
          'Warning',
          'Unhealthy',
          `Readiness probe failed: ${(error as Error).message.split('\n')[0] ?? ''}`,
        );
      return;
    }
    // The probe's kept-alive connection would hold a process in the sandbox (its socket bridge's).
    started.worker.agent.destroy();
    if (!running.stopped) await this.status(pod, 'Running', podIp, true);
  }

  /** The pod's address: the next free one of this kubelet's block, its port forwarded to `target`. */
  private async listenOnNewIp(
    port: number,
    target: NetConnectOpts,
  ): Promise<{ server: Server; podIp: string }> {
    for (let tries = 0; ; tries++) {
      const n = this.nextIp++;
      const podIp = `127.${this.ipBlock}.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`;
      try {
        return { server: await forward(podIp, port, target), podIp };
      } catch (error) {
        if ((error as { code?: string }).code !== 'EADDRINUSE' || tries > 50) throw error;
      }
    }
  }

  private async status(pod: V1Pod, phase: string, podIp: string, ready: boolean): Promise<void> {
    const now = timestamp();
    const flag = ready ? 'True' : 'False';
    const status = {
      phase,
      hostIP: '127.0.0.1',
      podIP: podIp,
      podIPs: [{ ip: podIp }],
      startTime: now,
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
        { type: 'Initialized', status: 'True', lastTransitionTime: now },
        { type: 'ContainersReady', status: flag, lastTransitionTime: now },
        { type: 'Ready', status: flag, lastTransitionTime: now },
      ],
      containerStatuses: [containerStatus(pod, ready, { running: { startedAt: now } })],
    };
    await this.patchStatus(pod, status);
  }

  private async waiting(pod: V1Pod, reason: string, message: string): Promise<void> {
    const state = { waiting: { reason, message } };
    await this.event(pod, 'Warning', 'Failed', message);
    await this.patchStatus(pod, {
      phase: 'Pending',
      containerStatuses: [containerStatus(pod, false, state)],
    });
  }

  private async exited(pod: V1Pod, running: RunningPod, code: number): Promise<void> {
    if (running.stopped) return;
    const now = timestamp();
    const terminated = { exitCode: code, reason: code === 0 ? 'Completed' : 'Error', finishedAt: now };
    await this.patchStatus(pod, {
      phase: code === 0 ? 'Succeeded' : 'Failed',
      conditions: [{ type: 'Ready', status: 'False', reason: 'PodCompleted', lastTransitionTime: now }],
      containerStatuses: [containerStatus(pod, false, { terminated })],
    });
  }

  /** A container that could not be made (its artifact unreadable, say): CreateContainerError. */
  private async fail(pod: V1Pod, message: string): Promise<void> {
    if (message.startsWith('Failed to pull')) return; // said already, as ErrImagePull
    await this.waiting(pod, 'CreateContainerError', message);
  }

  private patchStatus(pod: V1Pod, status: Record<string, unknown>): Promise<unknown> {
    const { name, namespace } = pod.metadata as { name: string; namespace: string };
    return this.core
      .patchNamespacedPodStatus({ name, namespace, body: { status } }, merge)
      .catch(() => undefined);
  }

  private event(pod: V1Pod, type: 'Normal' | 'Warning', reason: string, message: string): Promise<unknown> {
    const { name, namespace, uid } = pod.metadata as { name: string; namespace: string; uid?: string };
    const now = new Date();
    const body = {
      metadata: { generateName: `${name}.`, namespace },
      involvedObject: { kind: 'Pod', name, namespace, uid, apiVersion: 'v1' },
      type,
      reason,
      message,
      source: { component: 'kubelet', host: this.nodeName },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    return this.core.createNamespacedEvent({ namespace, body }).catch(() => undefined);
  }

  private async gone(pod: V1Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    const running = this.pods.get(uid);
    if (!running) return;
    running.stopped = true;
    const grace = (pod.spec?.terminationGracePeriodSeconds ?? 30) * 1000;
    running.forward?.close();
    await running.started?.worker.stop(grace);
    rmSync(running.dir, { recursive: true, force: true });
    this.pods.delete(uid);
  }

  private started(pod: KubeObject): StartedWorker {
    const started = this.pods.get(pod.metadata.uid)?.started;
    if (!started) throw new Error(`container of pod ${pod.metadata.name} is not running`);
    return started;
  }

  logs(pod: KubeObject, options: LogOptions, out: Writable): Promise<void> {
    this.started(pod);
    return Promise.resolve(this.pods.get(pod.metadata.uid)?.log.serve(options, out));
  }

  exec(pod: KubeObject, options: ExecOptions): Promise<number> {
    return execIn(this.started(pod), options);
  }

  async close(): Promise<void> {
    await this.informer.stop();
    await Promise.all(
      [...this.pods.values()].map(async (running) => {
        running.stopped = true;
        running.forward?.close();
        await running.started?.worker.stop(0);
      }),
    );
    this.pods.clear();
  }
}

class ImagePullError extends Error {
  override name = 'ImagePullError';
}

/** The status of the pod's one container. */
function containerStatus(pod: V1Pod, ready: boolean, state: Record<string, unknown>) {
  const { name = '', image = '' } = container(pod) ?? {};
  return { name, image, imageID: '', ready, restartCount: 0, started: 'running' in state, state };
}

function containerPort(pod: V1Pod): number {
  return container(pod)?.ports?.[0]?.containerPort ?? 8080;
}

/** Listens on podIp:port and pipes each connection to the worker (its loopback port, or its sandbox's socket). */
function forward(podIp: string, port: number, target: NetConnectOpts): Promise<Server> {
  const open = new Set<Socket>();
  const server = createServer((socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    const upstream = connect(target);
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  /** Cuts the open connections (`refuse`). */
  Object.assign(server, { cut: () => open.forEach((socket) => socket.destroy()) });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, podIp, () => resolve(server));
  });
}

/** Starts a kubelet for node `nodeName` (default `agentrt-test-node`) that runs pods as local workers. */
export async function startKubelet(options: KubeletOptions): Promise<Kubelet> {
  const kubelet = new TestKubelet(options.nodeName ?? 'agentrt-test-node', options);
  await kubelet.start();
  return kubelet;
}
