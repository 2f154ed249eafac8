// The leader's reconcile of session pods on the test API server: a runtime process (a real child
// process, heartbeat from dist) killed with SIGKILL leaves pods; once its heartbeat lapses they are
// deleted, and a live replica's are kept; the same for SandboxClaims (agent-sandbox mode). kubectl
// counts what is left.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../logger.js';
import { podSettingsOf, sessionPod } from '../sessions/backends/kubernetes/pod-spec.js';
import { sandboxClaim } from '../sessions/backends/kubernetes/sandbox-spec.js';
import { type SessionTarget } from '../sessions/backend.js';
import { type KubeApiServer, startKubeApiServer } from '../test-support/k8s/api-server.js';
import { writeKubeconfig } from '../test-support/k8s/kubeconfig.js';
import { runtimeRecord, versionRecord } from './store/store-contract.test-util.js';
import { createReplicaHeartbeat, reapOrphans } from './orphan-reaper.js';

const run = promisify(execFile);
const RUNTIME_DIR = resolve(fileURLToPath(import.meta.url), '../../..');
const CRDS = resolve(RUNTIME_DIR, '../../deploy/k8s/crds');
const NAMESPACE = 'agentrt';
const TIMING = { leaseDurationMs: 1000, renewDeadlineMs: 600, retryMs: 100 };
const logger = createLogger({ level: 'error', sink: () => undefined });

let api: KubeApiServer;
let kubeconfig: string;
let kubeConfig: KubeConfig;
let child: ChildProcess | undefined;

beforeAll(async () => {
  api = await startKubeApiServer();
  kubeconfig = writeKubeconfig(api.url);
  kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfig);
  await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NAMESPACE } } });
});
afterAll(async () => {
  child?.kill('SIGKILL');
  await api?.close();
});

const runtime = runtimeRecord('reaped');
const target: SessionTarget = { runtime, version: versionRecord(runtime.id, 1) };
const settings = (replica: string) =>
  podSettingsOf(
    {
      sessionMemoryMb: 256,
      sessionVcpus: 1,
      sessionDiskMb: 64,
      sessionStorageMb: 64,
      replicaInstance: replica,
    },
    { namespace: NAMESPACE },
  );

/** Session pods of `replica`, as its kubernetes backend makes them (warm slots among them). */
async function podsOf(replica: string, sessions: number) {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  for (let i = 0; i < sessions; i++)
    await core.createNamespacedPod({
      namespace: NAMESPACE,
      body: sessionPod({
        target,
        for:
          i === 0
            ? { kind: 'warm', slot: replica.charCodeAt(8) }
            : { kind: 'session', sessionId: `${replica}-session-${i}-${'0'.repeat(33)}` },
        env: {},
        healthCheck: 'ping',
        settings: settings(replica),
      }),
    });
}

async function objectNames(kind: string, selector: string): Promise<string[]> {
  const { stdout } = await run('kubectl', ['-n', NAMESPACE, 'get', kind, '-l', selector, '-o', 'name'], {
    env: { ...process.env, KUBECONFIG: kubeconfig },
  });
  return stdout.split('\n').filter(Boolean);
}

const podNames = (selector: string) => objectNames('pods', selector);

describe('orphan reaper', () => {
  it('deletes the pods of a replica killed with SIGKILL once its heartbeat lapses, and keeps a live one', async () => {
    const live = createReplicaHeartbeat({
      kubeConfig,
      namespace: NAMESPACE,
      instance: 'replica-a-1',
      logger,
      ...TIMING,
    });
    try {
      const script = `
        import { KubeConfig } from '@kubernetes/client-node';
        import { createReplicaHeartbeat } from './dist/control/orphan-reaper.js';
        import { createLogger } from './dist/logger.js';
        const kubeConfig = new KubeConfig();
        kubeConfig.loadFromFile(process.env.KUBECONFIG);
        const h = createReplicaHeartbeat({ kubeConfig, namespace: '${NAMESPACE}', instance: 'replica-b-1',
          logger: createLogger({ level: 'error', sink: () => {} }), ...${JSON.stringify(TIMING)} });
        setInterval(() => { if (h.isLeader()) process.stdout.write('alive\\n'); }, 50);`;
      child = spawn(process.execPath, ['--input-type=module', '-e', script], {
        cwd: RUNTIME_DIR,
        env: { ...process.env, KUBECONFIG: kubeconfig },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let childAlive = false;
      child.stdout!.on('data', () => (childAlive = true));
      for (let i = 0; i < 200 && !(childAlive && live.isLeader()); i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(childAlive && live.isLeader()).toBe(true);
      await podsOf('replica-a-1', 3);
      await podsOf('replica-b-1', 4);

      // Both alive: nothing is reaped.
      expect(await reapOrphans({ kubeConfig, namespace: NAMESPACE, logger, podGraceMs: 0 })).toEqual({
        pods: [],
        claims: [],
        replicas: [],
      });
      child.kill('SIGKILL');
      // Within its lease (and the 2× margin) it still counts as alive.
      expect((await reapOrphans({ kubeConfig, namespace: NAMESPACE, logger, podGraceMs: 0 })).pods).toEqual(
        [],
      );
      await new Promise((r) => setTimeout(r, 2 * TIMING.leaseDurationMs + 500));
      const reaped = await reapOrphans({ kubeConfig, namespace: NAMESPACE, logger, podGraceMs: 0 });
      expect(reaped.pods).toHaveLength(4);
      expect(reaped.replicas).toEqual(['replica-b-1']);
      expect(await podNames('agentrt.dev/replica=replica-b-1')).toEqual([]);
      expect(await podNames('agentrt.dev/replica=replica-a-1')).toHaveLength(3);
      expect(await podNames('app.kubernetes.io/managed-by=agentrt')).toHaveLength(3);
      // A second pass finds nothing more.
      expect(await reapOrphans({ kubeConfig, namespace: NAMESPACE, logger, podGraceMs: 0 })).toEqual({
        pods: [],
        claims: [],
        replicas: [],
      });
    } finally {
      await live.close();
    }
  });

  it('leaves a pod younger than the grace alone (its replica may not have written its heartbeat yet)', async () => {
    await podsOf('replica-c-1', 2);
    // replica-a's released heartbeat goes now; its pods, like replica-c's, wait for the grace.
    expect(await reapOrphans({ kubeConfig, namespace: NAMESPACE, logger, podGraceMs: 60_000 })).toEqual({
      pods: [],
      claims: [],
      replicas: ['replica-a-1'],
    });
    expect(await podNames('agentrt.dev/replica=replica-c-1')).toHaveLength(2);
    // Past the grace: replica-c's 2, and replica-a's 3 (it closed above, releasing its heartbeat).
    const reaped = await reapOrphans({ kubeConfig, namespace: NAMESPACE, logger, podGraceMs: 0 });
    expect(reaped.pods).toHaveLength(5);
    expect(await podNames('app.kubernetes.io/managed-by=agentrt')).toEqual([]);
  });

  it('deletes the SandboxClaims (agent-sandbox mode) of a replica whose heartbeat is gone, and keeps a live one’s', async () => {
    for (const file of readdirSync(CRDS).filter((f) => f.includes('agents.x-k8s.io')))
      api.applyYaml(join(CRDS, file));
    const live = createReplicaHeartbeat({
      kubeConfig,
      namespace: NAMESPACE,
      instance: 'replica-e-1',
      logger,
      ...TIMING,
    });
    try {
      for (let i = 0; i < 100 && !live.isLeader(); i++) await new Promise((r) => setTimeout(r, 50));
      const custom = kubeConfig.makeApiClient(CustomObjectsApi);
      const claim = (replica: string, i: number) =>
        custom.createNamespacedCustomObject({
          group: 'extensions.agents.x-k8s.io',
          version: 'v1beta1',
          namespace: NAMESPACE,
          plural: 'sandboxclaims',
          body: sandboxClaim(target, `${replica}-session-${i}-${'0'.repeat(33)}`, settings(replica)),
        });
      for (const i of [1, 2]) await claim('replica-e-1', i);
      for (const i of [1, 2, 3]) await claim('replica-f-1', i);
      const reaped = await reapOrphans({ kubeConfig, namespace: NAMESPACE, logger, podGraceMs: 0 });
      expect(reaped.claims).toHaveLength(3);
      expect(await objectNames('sandboxclaims', 'agentrt.dev/replica=replica-f-1')).toEqual([]);
      expect(await objectNames('sandboxclaims', 'agentrt.dev/replica=replica-e-1')).toHaveLength(2);
    } finally {
      await live.close();
    }
  });
});
