// Session storage (filesystemConfigurations[].sessionStorage) on the kubernetes backend, in both
// modes, on the test API server, the test kubelet (each pod a bwrap sandbox, its claim mounted as
// the node's folder for that PVC) and, for agent-sandbox mode, the test controller. A session
// writes a file; after StopRuntimeSession deletes its pod (or claim, sandbox and pod) the next
// invoke runs in a new pod and reads the file back, its scratch gone; another session never sees
// it. kubectl reads the PVCs back: one per session, kept across the stop. After a version update a
// session's storage starts empty (its old version's PVC deleted once no pod mounts it), and a deleted
// runtime's PVCs go (storage-reaper.ts).
import { StopRuntimeSessionCommand } from '@aws-sdk/client-bedrock-agentcore';
import { DeleteAgentRuntimeCommand, GetAgentRuntimeCommand } from '@aws-sdk/client-bedrock-agentcore-control';
import { CoreV1Api, KubeConfig, type V1PersistentVolumeClaim, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteStore } from '../../../control/store/sqlite-store.js';
import { nodeBackend } from '../../../test-support/k8s/node-backend.js';
import { type SandboxCluster, startSandboxCluster } from '../../../test-support/k8s/test-cluster.js';
import {
  type TestRuntime,
  createReady,
  invokeJson,
  sessionId,
  startRuntime,
  stopSession,
  updateReady,
  waitFor,
} from '../../../test-support.js';
import { ANNOTATIONS, LABELS, labelValue, sessionHash, sessionSelector } from './pod-spec.js';
import { SANDBOX_KEYS, type SandboxObject } from './sandbox-spec.js';

const backend = nodeBackend();

let cluster: SandboxCluster;
const kubectlGet = <T>(kind: string, selector: string) => cluster.kubectlGet<T>(kind, selector);

beforeAll(async () => {
  cluster = await startSandboxCluster(backend);
});
afterAll(async () => {
  await cluster?.close();
});

// Process groups mount no volumes: the test kubelet needs bubblewrap (as the hostile suite does).
describe.runIf(backend.name === 'bwrap').each(['pods', 'agent-sandbox'] as const)(
  'session storage, %s mode',
  (mode) => {
    let rt: TestRuntime;
    beforeAll(async () => {
      rt = await startRuntime({
        sessions: 'kubernetes',
        kubernetesMode: mode,
        kubeconfig: cluster.kubeconfig,
      });
    });
    afterAll(async () => {
      await rt?.close();
    });

    it('keeps a session’s files across a stop in its own PVC, and shows them to no other session', async () => {
      const runtime = await createReady(rt.control, `storage_${mode.replace('-', '_')}`, 'hostile', {
        filesystemConfigurations: [{ sessionStorage: { mountPath: '/mnt/workspace' } }],
      });
      const arn = runtime.agentRuntimeArn!;
      const sh = async (session: string, command: string) =>
        (await invokeJson(rt.data, arn, sessionId(session), { sh: command })) as { stdout: string };
      const runtimeLabel = `${LABELS.runtime}=${labelValue(runtime.agentRuntimeId!)}`;
      const sessionLabel = (session: string) =>
        `${runtimeLabel},${LABELS.sessionHash}=${sessionHash(sessionId(session))}`;
      /** The session's pods: by its label (pods mode), or its claim's uid (agent-sandbox mode). */
      const podsOf = async (session: string) => {
        if (mode === 'pods') return kubectlGet<V1Pod>('pods', sessionLabel(session));
        const claims = await kubectlGet<SandboxObject>('sandboxclaims', sessionLabel(session));
        const uids = claims.map((c) => c.metadata.uid);
        return uids.length
          ? kubectlGet<V1Pod>('pods', `${SANDBOX_KEYS.claimUid} in (${uids.join(',')})`)
          : [];
      };
      const claimsOf = (session: string) =>
        kubectlGet<V1PersistentVolumeClaim>(
          'pvc',
          `${runtimeLabel},${LABELS.sessionHash}=${sessionHash(sessionId(session))}`,
        );

      const wrote = await sh(
        'keep-a',
        'echo kept > /mnt/workspace/notes.txt && echo x > "$HOME/scratch" && echo ok',
      );
      expect(wrote.stdout.trim(), JSON.stringify(wrote)).toBe('ok');
      const [firstPod] = await podsOf('keep-a');
      const [pvc] = await claimsOf('keep-a');
      expect(pvc?.spec?.resources?.requests?.storage).toMatch(/Mi$/);
      const volumes = firstPod?.spec?.volumes?.filter((v) => v.persistentVolumeClaim) ?? [];
      expect(volumes.map((v) => v.persistentVolumeClaim?.claimName)).toEqual([pvc?.metadata?.name]);
      if (mode === 'agent-sandbox') {
        const [claim] = await kubectlGet<SandboxObject>(
          'sandboxclaims',
          `${runtimeLabel},${LABELS.sessionHash}=${sessionHash(sessionId('keep-a'))}`,
        );
        expect(claim?.spec?.volumeClaimTemplates).toHaveLength(1);
        expect(pvc?.metadata?.name).toBe(`session-storage-${claim?.metadata.name}`);
        expect(pvc?.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Sandbox', controller: true });
      }

      await rt.data.send(
        new StopRuntimeSessionCommand({ agentRuntimeArn: arn, runtimeSessionId: sessionId('keep-a') }),
      );
      await waitFor(
        async () => (await podsOf('keep-a')).length === 0,
        20_000,
        'the stopped session’s pod gone',
      );
      expect((await claimsOf('keep-a')).map((c) => c.metadata?.uid)).toEqual([pvc?.metadata?.uid]);

      const after = await sh(
        'keep-a',
        'cat /mnt/workspace/notes.txt; cat "$HOME/scratch" 2>/dev/null || echo scratch-gone',
      );
      expect(after.stdout.split('\n').filter(Boolean)).toEqual(['kept', 'scratch-gone']);
      const [secondPod] = await podsOf('keep-a');
      expect(secondPod?.metadata?.uid).not.toBe(firstPod?.metadata?.uid);

      const other = await sh('keep-b', 'ls -A /mnt/workspace; echo listed');
      expect(other.stdout.trim()).toBe('listed');
      const [otherPvc] = await claimsOf('keep-b');
      expect(otherPvc?.metadata?.name).not.toBe(pvc?.metadata?.name);
    });

    it('goes once unused for AGENTRT_SESSION_STORAGE_IDLE_S, unless its session runs', async () => {
      // A runtime of its own: storage unused for 4 s goes (the other runtime's reaper leaves its
      // PVCs alone: it does not have this runtime).
      const idle = await startRuntime({
        sessions: 'kubernetes',
        kubernetesMode: mode,
        kubeconfig: cluster.kubeconfig,
        sessionStorageIdleS: 4,
      });
      try {
        const runtime = await createReady(idle.control, `idle_${mode.replace('-', '_')}`, 'hostile', {
          filesystemConfigurations: [{ sessionStorage: { mountPath: '/mnt/workspace' } }],
        });
        const arn = runtime.agentRuntimeArn!;
        const sh = async (session: string, command: string) =>
          (await invokeJson(idle.data, arn, sessionId(session), { sh: command })) as { stdout: string };
        const pvcOf = async (session: string) =>
          kubectlGet<V1PersistentVolumeClaim>(
            'pvc',
            sessionSelector(runtime.agentRuntimeId!, sessionId(session)),
          );
        for (const session of ['unused', 'busy'])
          expect((await sh(session, 'echo kept > /mnt/workspace/notes.txt && echo ok')).stdout.trim()).toBe(
            'ok',
          );
        await stopSession(idle.data, arn, 'unused');
        await waitFor(async () => (await pvcOf('unused')).length === 0, 30_000, 'the unused PVC deleted');
        // The running session's PVC is older than the bound too, and stays.
        expect(await pvcOf('busy')).toHaveLength(1);
        expect((await sh('busy', 'cat /mnt/workspace/notes.txt')).stdout.trim()).toBe('kept');
        expect((await sh('unused', 'ls -A /mnt/workspace; echo listed')).stdout.trim()).toBe('listed');
        // Stopped after running longer than the bound, its storage counts as used until it stopped.
        await stopSession(idle.data, arn, 'busy');
        await new Promise((r) => setTimeout(r, 1000)); // ten reaper passes
        expect(await pvcOf('busy')).toHaveLength(1);
      } finally {
        await idle.close();
      }
    }, 90_000);

    it.runIf(mode === 'agent-sandbox')(
      'is the same PVC when the session restarts while its earlier claim is still being deleted',
      async () => {
        const runtime = await createReady(rt.control, 'storage_teardown', 'hostile', {
          filesystemConfigurations: [{ sessionStorage: { mountPath: '/mnt/workspace' } }],
        });
        const arn = runtime.agentRuntimeArn!;
        const sid = sessionId('teardown');
        const sh = async (command: string) =>
          (await invokeJson(rt.data, arn, sid, { sh: command })) as { stdout: string };
        expect((await sh('echo kept > /mnt/workspace/notes.txt && echo ok')).stdout.trim()).toBe('ok');
        const selector = sessionSelector(runtime.agentRuntimeId!, sid);
        const claims = () => kubectlGet<SandboxObject>('sandboxclaims', selector);
        const name = (await claims())[0]!.metadata.name;
        // A finalizer holds the deleted claim, as foreground deletion does while its sandbox and pod go.
        const hold = (finalizers: string[] | null) =>
          cluster.kubectl(
            'patch',
            'sandboxclaim',
            name,
            '--type=merge',
            '-p',
            JSON.stringify({ metadata: { finalizers } }),
          );
        await hold(['test.agentrt.dev/hold']);
        const stop = new StopRuntimeSessionCommand({ agentRuntimeArn: arn, runtimeSessionId: sid });
        const stopped = rt.data.send(stop);
        await waitFor(
          async () => (await claims())[0]?.metadata.deletionTimestamp !== undefined,
          10_000,
          'the claim marked as being deleted',
        );
        await cluster.kubectl('delete', 'sandboxes.agents.x-k8s.io', name); // its dependents first
        await stopped;
        // The session restarts while its claim is still there; the claim goes 1.5 s later.
        const released = new Promise((r) => setTimeout(r, 1500)).then(() => hold(null));
        const after = await sh('cat /mnt/workspace/notes.txt');
        await released;
        expect(after.stdout.trim(), JSON.stringify(after)).toBe('kept');
        expect((await claims()).map((c) => c.metadata.name)).toEqual([name]);
      },
      60_000,
    );

    it.runIf(mode === 'pods')(
      'a deletion the API server cannot carry out is DELETE_FAILED, keeps the PVCs, and is retried',
      async () => {
        const runtime = await createReady(rt.control, 'storage_delete_failed', 'hostile', {
          filesystemConfigurations: [{ sessionStorage: { mountPath: '/mnt/workspace' } }],
        });
        const { agentRuntimeArn: arn, agentRuntimeId: id } = runtime as {
          agentRuntimeArn: string;
          agentRuntimeId: string;
        };
        const write = { sh: 'echo kept > /mnt/workspace/notes.txt && echo ok' };
        expect(await invokeJson(rt.data, arn, sessionId('doomed'), write)).toMatchObject({ stdout: 'ok\n' });
        await stopSession(rt.data, arn, 'doomed');
        const pvcs = () => kubectlGet<V1PersistentVolumeClaim>('pvc', `${LABELS.runtime}=${labelValue(id)}`);
        expect(await pvcs()).toHaveLength(1);
        const status = async () => rt.control.send(new GetAgentRuntimeCommand({ agentRuntimeId: id }));

        await cluster.api.suspend(); // the API server unreachable while the storage is deleted
        try {
          await rt.control.send(new DeleteAgentRuntimeCommand({ agentRuntimeId: id }));
          await waitFor(async () => (await status()).status === 'DELETE_FAILED', 30_000, 'DELETE_FAILED');
          expect((await status()).failureReason).toMatch(/PersistentVolumeClaims of runtime/);
          await expect(invokeJson(rt.data, arn, sessionId('doomed'), write)).rejects.toThrow(
            /DELETE_FAILED.*call DeleteAgentRuntime again/,
          );
        } finally {
          await cluster.api.resume();
        }
        expect(await pvcs()).toHaveLength(1); // still the runtime's, not orphaned

        await rt.control.send(new DeleteAgentRuntimeCommand({ agentRuntimeId: id }));
        await waitFor(async () => (await pvcs()).length === 0, 30_000, 'the PVCs deleted on the retry');
        await expect(status()).rejects.toThrow(/not found|ResourceNotFound/i);
      },
      90_000,
    );

    it.runIf(mode === 'pods')(
      'a deletion a stopped process left DELETING, resumed at start while the API server is away, is DELETE_FAILED and keeps the PVCs',
      async () => {
        const options = {
          sessions: 'kubernetes',
          kubernetesMode: mode,
          kubeconfig: cluster.kubeconfig,
        } as const;
        const first = await startRuntime(options, mkdtempSync(join(tmpdir(), 'agentrt-resume-delete-')));
        const runtime = await createReady(first.control, 'storage_resume_delete', 'hostile', {
          filesystemConfigurations: [{ sessionStorage: { mountPath: '/mnt/workspace' } }],
        });
        const id = runtime.agentRuntimeId!;
        const write = { sh: 'echo kept > /mnt/workspace/notes.txt && echo ok' };
        expect(
          await invokeJson(first.data, runtime.agentRuntimeArn!, sessionId('left'), write),
        ).toMatchObject({
          stdout: 'ok\n',
        });
        await stopSession(first.data, runtime.agentRuntimeArn!, 'left');
        await first.server.close();
        // What a process stopped between DeleteAgentRuntime's 202 and the end of its work leaves.
        const store = createSqliteStore(first.dataDir);
        const record = store.get('runtime', id)!;
        await store.put('runtime', id, { ...record, status: 'DELETING' }, '', Date.parse(record.createdAt));
        await store.close();
        const pvcs = () => kubectlGet<V1PersistentVolumeClaim>('pvc', `${LABELS.runtime}=${labelValue(id)}`);
        let second: TestRuntime | undefined;
        await cluster.api.suspend(); // the next start cannot delete the storage
        try {
          second = await startRuntime(options, first.dataDir);
          const status = async () => second!.control.send(new GetAgentRuntimeCommand({ agentRuntimeId: id }));
          await waitFor(async () => (await status()).status === 'DELETE_FAILED', 30_000, 'DELETE_FAILED');
          expect((await status()).failureReason).toMatch(/PersistentVolumeClaims of runtime/);
        } finally {
          await cluster.api.resume();
        }
        try {
          expect(await pvcs()).toHaveLength(1); // still the runtime's, not orphaned
          await second.control.send(new DeleteAgentRuntimeCommand({ agentRuntimeId: id }));
          await waitFor(async () => (await pvcs()).length === 0, 30_000, 'the PVCs deleted on the retry');
        } finally {
          await second.close();
          rmSync(first.dataDir, { recursive: true, force: true });
        }
      },
      120_000,
    );

    it('is empty after a version update, the old version’s PVCs go once unmounted, and all go with the runtime', async () => {
      const storage = [{ sessionStorage: { mountPath: '/mnt/workspace' } }];
      const runtime = await createReady(rt.control, `versions_${mode.replace('-', '_')}`, 'hostile', {
        filesystemConfigurations: storage,
      });
      const { agentRuntimeArn: arn, agentRuntimeId: id } = runtime as {
        agentRuntimeArn: string;
        agentRuntimeId: string;
      };
      const sh = async (session: string, command: string) =>
        (await invokeJson(rt.data, arn, sessionId(session), { sh: command })) as { stdout: string };
      const pvcs = async () =>
        (await kubectlGet<V1PersistentVolumeClaim>('pvc', `${LABELS.runtime}=${labelValue(id)}`)).map(
          (c) => `${sessionOf(c)}@${c.metadata?.labels?.[LABELS.version]}`,
        );
      const sessionOf = (c: V1PersistentVolumeClaim) =>
        ['stopped', 'running'].find(
          (s) => c.metadata?.labels?.[LABELS.sessionHash] === sessionHash(sessionId(s)),
        );
      for (const session of ['stopped', 'running'])
        expect((await sh(session, 'echo v1 > /mnt/workspace/notes.txt && echo ok')).stdout.trim()).toBe('ok');
      await rt.data.send(
        new StopRuntimeSessionCommand({ agentRuntimeArn: arn, runtimeSessionId: sessionId('stopped') }),
      );

      // Another installation's runtime in the same namespace: its storage is not this one's to reap.
      const foreign = `arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/other_${mode.replace('-', '_')}-0123456789`;
      const kc = new KubeConfig();
      kc.loadFromFile(cluster.kubeconfig);
      const core = kc.makeApiClient(CoreV1Api);
      const foreignPvc = `foreign-${mode}`;
      await core.createNamespacedPersistentVolumeClaim({
        namespace: 'default',
        body: {
          metadata: {
            name: foreignPvc,
            labels: {
              [LABELS.managedBy]: 'agentrt',
              [LABELS.component]: 'session-storage',
              [LABELS.version]: '1',
            },
            annotations: { [ANNOTATIONS.runtimeArn]: foreign },
          },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '8Mi' } } },
        },
      });

      const update = { filesystemConfigurations: storage, environmentVariables: { VERSION: '2' } };
      expect((await updateReady(rt.control, id, 'hostile', update)).agentRuntimeVersion).toBe('2');
      // The stopped session starts on version 2 with empty storage, as the hosted service resets it.
      const after = await sh('stopped', 'ls -A /mnt/workspace; echo listed');
      expect(after.stdout.trim()).toBe('listed');
      // Version 1's PVC of the stopped session goes; the running session's stays while its pod mounts it.
      await waitFor(
        async () => (await pvcs()).sort().join() === ['running@1', 'stopped@2'].join(),
        20_000,
        'version 1’s unmounted PVC deleted',
      );
      expect((await sh('running', 'cat /mnt/workspace/notes.txt')).stdout.trim()).toBe('v1');
      await core.readNamespacedPersistentVolumeClaim({ name: foreignPvc, namespace: 'default' });

      await rt.control.send(new DeleteAgentRuntimeCommand({ agentRuntimeId: id }));
      await waitFor(async () => (await pvcs()).length === 0, 30_000, 'the deleted runtime’s PVCs deleted');
      await core.deleteNamespacedPersistentVolumeClaim({ name: foreignPvc, namespace: 'default' });
    }, 90_000);
  },
);
