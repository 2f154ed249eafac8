// What the multi-replica tests share: a test API server with the agentrt.dev CRDs and a namespace,
// a kubeconfig for it, kubectl against it, optionally a test kubelet whose pods really serve, and
// runtime replicas on it (in this process, or as `dist/main.js` processes as deploy/k8s runs them);
// and what the agent-sandbox mode's tests share: the agent-sandbox CRDs, a test kubelet and the test
// agent-sandbox controller.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { type RuntimeServerOptions } from '../../config.js';
import { type SessionBackend } from '../../sessions/backend.js';
import { type TestRuntime, startRuntime } from '../../test-support.js';
import { type KubeApiServer, startKubeApiServer } from './api-server.js';
import { writeKubeconfig } from './kubeconfig.js';
import { type Kubelet, startKubelet } from './kubelet.js';
import { nodeBackend } from './node-backend.js';
import { type SandboxController, startSandboxController } from './sandbox-controller.js';

const run = promisify(execFile);
const RUNTIME_DIR = resolve(fileURLToPath(import.meta.url), '../../../..');
const CRDS = resolve(RUNTIME_DIR, '../../deploy/k8s/crds');

export interface TestClusterOptions {
  namespace?: string;
  /** Start a test kubelet, so session pods run (default false: the control store only). */
  kubelet?: boolean;
}

/** A runtime replica started as its own process: its URL once it listens. */
export interface ReplicaProcess {
  child: ChildProcess;
  url: string;
}

export interface TestCluster {
  api: KubeApiServer;
  kubeconfig: string;
  namespace: string;
  kubelet: Kubelet | undefined;
  core: CoreV1Api;
  /** `kubectl -n <namespace> …` against the test API server: its stdout. */
  kubectl(...args: string[]): Promise<string>;
  /** A replica in this process on the cluster's control store (and its sessions, with a kubelet). */
  replica(name: string, options?: RuntimeServerOptions): Promise<TestRuntime>;
  /** A replica as deploy/k8s/runtime.yaml runs it: `dist/main.js` with the cluster in its env. */
  replicaProcess(name: string, env?: Record<string, string>): Promise<ReplicaProcess>;
  /** Kills the replica processes, closes the in-process replicas, the kubelet and the API server. */
  close(): Promise<void>;
}

export async function startTestCluster(options: TestClusterOptions = {}): Promise<TestCluster> {
  const namespace = options.namespace ?? 'agentrt';
  const api = await startKubeApiServer();
  for (const plural of ['agentruntimes', 'agentruntimeversions', 'agentruntimeendpoints'])
    api.applyYaml(`${CRDS}/agentrt.dev_${plural}.yaml`);
  const kubeconfig = writeKubeconfig(api.url);
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const kubelet = options.kubelet ? await startNodeKubelet(api, kubeconfig, nodeBackend()) : undefined;
  const runtimes: TestRuntime[] = [];
  const children: ChildProcess[] = [];
  const sessions = options.kubelet ? { sessions: 'kubernetes' as const } : {};
  return {
    api,
    kubeconfig,
    namespace,
    kubelet,
    core,
    kubectl: async (...args) =>
      (await run('kubectl', ['-n', namespace, ...args], { env: { ...process.env, KUBECONFIG: kubeconfig } }))
        .stdout,
    async replica(name, overrides = {}) {
      const runtime = await startRuntime({
        controlStore: 'kubernetes',
        kubernetesNamespace: namespace,
        kubeconfig,
        replicaName: name,
        fileArtifacts: 'live', // the fixture folder is where every replica runs it (no per-replica snapshot)
        ...sessions,
        ...overrides,
      });
      runtimes.push(runtime);
      return runtime;
    },
    async replicaProcess(name, env = {}) {
      const child = spawn(process.execPath, [join(RUNTIME_DIR, 'dist/main.js')], {
        env: {
          ...process.env,
          KUBECONFIG: kubeconfig,
          AGENTRT_SESSIONS: options.kubelet ? 'kubernetes' : 'local',
          AGENTRT_CONTROL_STORE: 'kubernetes',
          AGENTRT_K8S_NAMESPACE: namespace,
          AGENTRT_K8S_POD_NAME: name,
          AGENTRT_RUNTIME_HOST: '127.0.0.1',
          AGENTRT_RUNTIME_PORT: '0',
          AGENTRT_DATA_DIR: mkdtempSync(join(tmpdir(), `agentrt-${name}-`)),
          OTEL_EXPORTER_OTLP_ENDPOINT: '',
          ...env,
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
      const url = await new Promise<string>((done, fail) => {
        let out = '';
        child.stdout!.on('data', (chunk: Buffer) => {
          out += chunk.toString('utf8');
          const listening = /"msg":"runtime listening".*?"url":"([^"]+)"/.exec(out);
          if (listening) done(listening[1]!);
        });
        child.once('exit', (code) => fail(new Error(`${name} exited (${code}) before listening:\n${out}`)));
      });
      return { child, url };
    },
    async close() {
      for (const child of children) child.kill('SIGKILL');
      await Promise.all(runtimes.map((r) => r.close()));
      await kubelet?.close();
      await api.close();
    },
  };
}

/** A test API server with the agent-sandbox CRDs, a test kubelet and the test agent-sandbox controller. */
export interface SandboxCluster {
  api: KubeApiServer;
  kubeconfig: string;
  kubelet: Kubelet;
  controller: SandboxController;
  /** `kubectl get <kind> -l <selector> -o json` against the test API server: the items. */
  kubectlGet<T>(kind: string, selector: string): Promise<T[]>;
  /** `kubectl …` against the test API server: its stdout. */
  kubectl(...args: string[]): Promise<string>;
  /** Closes the controller, the kubelet and the API server. */
  close(): Promise<void>;
}

/** Starts a {@link SandboxCluster}; its kubelet runs pods on `backend` (default: the node's). */
export async function startSandboxCluster(backend: SessionBackend = nodeBackend()): Promise<SandboxCluster> {
  const api = await startKubeApiServer();
  for (const file of readdirSync(CRDS).filter((f) => f.includes('agents.x-k8s.io')))
    api.applyYaml(join(CRDS, file));
  const kubeconfig = writeKubeconfig(api.url);
  const kubelet = await startNodeKubelet(api, kubeconfig, backend);
  const controller = await startSandboxController({ kubeconfig });
  const kubectl = async (...args: string[]) =>
    (await run('kubectl', args, { env: { ...process.env, KUBECONFIG: kubeconfig } })).stdout;
  return {
    api,
    kubeconfig,
    kubelet,
    controller,
    kubectl,
    async kubectlGet<T>(kind: string, selector: string) {
      const stdout = await kubectl('get', kind, '-l', selector, '-o', 'json');
      return (JSON.parse(stdout) as { items: T[] }).items;
    },
    async close() {
      await controller.close();
      await kubelet.close();
      await api.close();
    },
  };
}

/** A test kubelet against `api` running pods on `backend`, its node's data in a folder of its own. */
function startNodeKubelet(api: KubeApiServer, kubeconfig: string, backend: SessionBackend): Promise<Kubelet> {
  return startKubelet({ api, kubeconfig, dataDir: mkdtempSync(join(tmpdir(), 'agentrt-kubelet-')), backend });
}

/** Reads until `ok` holds or `ms` passed (then the last value, for the test's own expect). */
export async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value) || Date.now() > end) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}
