// Faults of the kubernetes session backend, on the test API server and test kubelet: the API
// server unreachable (503 ServiceException that says so, live sessions keep serving, new ones start
// once it is back), watches cut or compacted (the pod cache resumes or relists), a ResourceQuota
// that refuses the pod, a pod that never becomes Ready (424 with its events and last log lines) and
// an image that cannot be pulled. Real runtime, real AWS SDK clients, real pods.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RuntimeClientError } from '@aws-sdk/client-bedrock-agentcore';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../logger.js';
import { type KubeApiServer, startKubeApiServer } from '../../../test-support/k8s/api-server.js';
import { type Kubelet, startKubelet } from '../../../test-support/k8s/kubelet.js';
import { nodeBackend } from '../../../test-support/k8s/node-backend.js';
import { writeKubeconfig } from '../../../test-support/k8s/kubeconfig.js';
import {
  type TestRuntime,
  createReady,
  invokeJson,
  sdkClients,
  sessionId,
  startRuntime,
} from '../../../test-support.js';
import { resolveRuntimeConfig } from '../../../config.js';
import { type SessionTarget } from '../../backend.js';
import { createKubernetesBackend } from './kubernetes.js';

let api: KubeApiServer;
let kubelet: Kubelet;
let kubeconfig: string;
let rt: TestRuntime;
let core: CoreV1Api;

beforeAll(async () => {
  api = await startKubeApiServer();
  kubeconfig = writeKubeconfig(api.url);
  kubelet = await startKubelet({
    api,
    kubeconfig,
    dataDir: mkdtempSync(join(tmpdir(), 'agentrt-kubelet-')),
    backend: nodeBackend(),
  });
  rt = await startRuntime({ sessions: 'kubernetes', kubeconfig, startTimeoutMs: 4000 });
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  core = kc.makeApiClient(CoreV1Api);
});
afterAll(async () => {
  await rt?.close();
  await kubelet?.close();
  await api?.close();
});

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: { name: string; message: string; $metadata?: { httpStatusCode?: number } }) => error,
  );

describe('kubernetes backend faults', () => {
  it('answers 503 while the API server is unreachable, keeps live sessions, and recovers', async () => {
    const runtime = await createReady(rt.control, 'k8s_unreachable', 'counter');
    const arn = runtime.agentRuntimeArn!;
    const live = sessionId('k8s-live');
    expect((await invokeJson(rt.data, arn, live, {})).count).toBe(1);
    await api.suspend();
    // The pod is dialled directly: its session does not need the API server.
    expect((await invokeJson(rt.data, arn, live, {})).count).toBe(2);
    const { data } = sdkClients(rt.server.url, 'us-east-1', 'AKIDLOCAL', 1);
    const down = await failureOf(invokeJson(data, arn, sessionId('k8s-new'), {}));
    expect(down.$metadata?.httpStatusCode).toBe(503);
    expect(down.name).toBe('ServiceException');
    expect(down.message).toMatch(/API server is unreachable, retry/);
    await api.resume();
    expect((await invokeJson(rt.data, arn, sessionId('k8s-new'), {})).count).toBe(1);
    expect((await invokeJson(rt.data, arn, live, {})).count).toBe(3);
  }, 60_000);

  it('starts sessions after its watch was cut and after the API server compacted past it', async () => {
    const runtime = await createReady(rt.control, 'k8s_watch', 'counter');
    api.dropWatches();
    expect((await invokeJson(rt.data, runtime.agentRuntimeArn!, sessionId('k8s-after-drop'), {})).count).toBe(
      1,
    );
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { generateName: 'noise-' } },
    });
    api.store.compact();
    api.dropWatches();
    expect((await invokeJson(rt.data, runtime.agentRuntimeArn!, sessionId('k8s-after-410'), {})).count).toBe(
      1,
    );
  }, 60_000);

  it('answers 424 naming the quota when the namespace refuses another pod', async () => {
    const runtime = await createReady(rt.control, 'k8s_quota', 'counter');
    const used = (await core.listNamespacedPod({ namespace: 'default' })).items.length;
    await core.createNamespacedResourceQuota({
      namespace: 'default',
      body: { metadata: { name: 'sessions' }, spec: { hard: { pods: String(used) } } },
    });
    try {
      const refused = await failureOf(
        invokeJson(rt.data, runtime.agentRuntimeArn!, sessionId('k8s-over-quota'), {}),
      );
      expect(refused).toBeInstanceOf(RuntimeClientError);
      expect(refused.message).toMatch(
        /\(403\): pods is forbidden: exceeded quota: sessions, requested: pods=1/,
      );
    } finally {
      await core.deleteNamespacedResourceQuota({ name: 'sessions', namespace: 'default' });
    }
  }, 60_000);

  it('answers 424 with the pod events and last log lines when it never becomes Ready', async () => {
    const runtime = await createReady(rt.control, 'k8s_never_ready', 'slow-start', {
      environmentVariables: { START_DELAY_MS: '60000' },
    });
    const failed = await failureOf(invokeJson(rt.data, runtime.agentRuntimeArn!, sessionId('k8s-never'), {}));
    expect(failed).toBeInstanceOf(RuntimeClientError);
    expect(failed.message).toMatch(
      /Runtime initialization time exceeded: pod agentrt-s-[0-9a-f]{32} was not Ready within 4000 ms/,
    );
    expect(failed.message).toMatch(/Events:\n(.*\n)*Normal Started: Started container agent/);
    expect(failed.message).toMatch(/Last output:\n(.*\n)*.*slow-start: warming up for 60000 ms/);
    expect(rt.server.sessions().some((s) => s.sessionId === sessionId('k8s-never'))).toBe(false);
    const left = await core.listNamespacedPod({
      namespace: 'default',
      labelSelector: 'app.kubernetes.io/component=session',
    });
    expect(
      left.items.filter(
        (p) => p.metadata?.annotations?.['agentrt.dev/session-id'] === sessionId('k8s-never'),
      ),
    ).toEqual([]);
  }, 60_000);

  it('runs session pods under AGENTRT_K8S_RUNTIME_CLASS, with the pod spec’s guarantees', async () => {
    const gvisor = await startRuntime({
      sessions: 'kubernetes',
      kubeconfig,
      kubernetesRuntimeClass: 'gvisor',
    });
    try {
      const runtime = await createReady(gvisor.control, 'k8s_gvisor', 'counter');
      await invokeJson(gvisor.data, runtime.agentRuntimeArn!, sessionId('k8s-gvisor'), {});
      const pods = await core.listNamespacedPod({
        namespace: 'default',
        labelSelector: 'app.kubernetes.io/component=session',
      });
      const pod = pods.items.find(
        (p) => p.metadata?.annotations?.['agentrt.dev/session-id'] === sessionId('k8s-gvisor'),
      );
      expect(pod?.spec?.runtimeClassName).toBe('gvisor');
      expect(pod?.spec?.containers[0]?.securityContext).toMatchObject({
        runAsNonRoot: true,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
    } finally {
      await gvisor.close();
    }
  }, 60_000);

  it('fails a start whose image cannot be pulled, with the kubelet’s reason', async () => {
    const config = resolveRuntimeConfig(
      { dataDir: mkdtempSync(join(tmpdir(), 'agentrt-k8s-')), kubeconfig },
      {},
    );
    const backend = createKubernetesBackend(config, createLogger({ level: 'error', sink: () => undefined }));
    const target = {
      runtime: {
        id: 'pull-0000000001',
        name: 'pull',
        arn: 'arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/pull-0000000001',
      },
      version: {
        version: 1,
        config: {
          agentRuntimeArtifact: { containerConfiguration: { containerUri: 'registry.invalid/agent:1' } },
          networkConfiguration: { networkMode: 'PUBLIC' },
          lifecycleConfiguration: { idleRuntimeSessionTimeout: 900, maxLifetime: 28800 },
        },
      },
    } as unknown as SessionTarget;
    const started = await backend.start({
      id: 'pull',
      target,
      launch: { kind: 'image', image: 'registry.invalid/agent:1', engine: 'podman' },
      sessionDir: '/nonexistent',
      sessionId: sessionId('k8s-pull'),
      servedSession: () => sessionId('k8s-pull'),
      healthCheck: 'ping',
      logger: createLogger({ level: 'error', sink: () => undefined }),
      env: (port) => ({ PORT: String(port) }),
    });
    const error = await started.worker.waitReady(20_000).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(
      /its image cannot be pulled \(ErrImagePull: Failed to pull image "registry.invalid\/agent:1"/,
    );
    expect(error?.message).toMatch(/Warning Failed: Failed to pull image/);
    await started.worker.stop(0);
    await backend.close?.();
  }, 60_000);
});
