// Two runtime replicas as real processes (dist/main.js, AGENTRT_SESSIONS=kubernetes,
// AGENTRT_CONTROL_STORE=kubernetes) on one test API server and test kubelet: one is killed with
// SIGKILL in the middle of 20 session starts; once the survivor has reconciled, every pod serves a
// live session (one pod each) and none is orphaned, and kubectl agrees with ListAgentRuntimes and
// the survivor's active-session list.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  CreateAgentRuntimeCommand,
  GetAgentRuntimeCommand,
  ListAgentRuntimesCommand,
} from '@aws-sdk/client-bedrock-agentcore-control';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntimeClient } from '../client.js';
import { sessionHash } from '../sessions/backends/kubernetes/pod-spec.js';
import { type KubeApiServer, startKubeApiServer } from '../test-support/k8s/api-server.js';
import { writeKubeconfig } from '../test-support/k8s/kubeconfig.js';
import { type Kubelet, nodeBackend, startKubelet } from '../test-support/k8s/kubelet.js';
import { ROLE_ARN, fixtureUri, invokeJson, sdkClients, sessionId } from '../test-support.js';

const run = promisify(execFile);
const RUNTIME_DIR = resolve(fileURLToPath(import.meta.url), '../../..');
const CRDS = resolve(RUNTIME_DIR, '../../deploy/k8s/crds');
const NAMESPACE = 'agentrt';
const LEASE_S = 2;

let api: KubeApiServer;
let kubelet: Kubelet;
let kubeconfig: string;
const children: ChildProcess[] = [];

const kubectl = async (...args: string[]) =>
  (await run('kubectl', ['-n', NAMESPACE, ...args], { env: { ...process.env, KUBECONFIG: kubeconfig } }))
    .stdout;

/** A runtime replica as deploy/k8s/runtime.yaml runs it: its URL once it listens. */
async function replica(name: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [join(RUNTIME_DIR, 'dist/main.js')], {
    env: {
      ...process.env,
      KUBECONFIG: kubeconfig,
      AGENTRT_SESSIONS: 'kubernetes',
      AGENTRT_CONTROL_STORE: 'kubernetes',
      AGENTRT_K8S_NAMESPACE: NAMESPACE,
      AGENTRT_K8S_POD_NAME: name,
      AGENTRT_K8S_LEASE_S: String(LEASE_S),
      AGENTRT_RUNTIME_HOST: '127.0.0.1',
      AGENTRT_RUNTIME_PORT: '0',
      AGENTRT_DATA_DIR: mkdtempSync(join(tmpdir(), `agentrt-${name}-`)),
      AGENTRT_MAX_CONCURRENT_STARTS: '64',
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
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
}

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value) || Date.now() > end) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface PodRow {
  metadata: { name: string; labels: Record<string, string> };
}
const pods = async (selector = 'app.kubernetes.io/managed-by=agentrt') =>
  (JSON.parse(await kubectl('get', 'pods', '-l', selector, '-o', 'json')) as { items: PodRow[] }).items;

beforeAll(async () => {
  api = await startKubeApiServer();
  for (const plural of ['agentruntimes', 'agentruntimeversions', 'agentruntimeendpoints'])
    api.applyYaml(`${CRDS}/agentrt.dev_${plural}.yaml`);
  kubeconfig = writeKubeconfig(api.url);
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NAMESPACE } } });
  kubelet = await startKubelet({
    api,
    kubeconfig,
    dataDir: mkdtempSync(join(tmpdir(), 'agentrt-kubelet-')),
    backend: nodeBackend(),
  });
}, 60_000);
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await kubelet?.close();
  await api?.close();
});

describe('a replica killed in the middle of 20 session starts', () => {
  it('leaves, once the other reconciled, one pod per live session and no orphan', async () => {
    const [a, b] = await Promise.all([replica('runtime-a'), replica('runtime-b')]);
    const sdkA = sdkClients(a.url, 'us-east-1', 'AKIDLOCAL', 1);
    const sdkB = sdkClients(b.url);
    const created = await sdkB.control.send(
      new CreateAgentRuntimeCommand({
        agentRuntimeName: 'survivor',
        agentRuntimeArtifact: { containerConfiguration: { containerUri: fixtureUri('counter') } },
        roleArn: ROLE_ARN,
        networkConfiguration: { networkMode: 'PUBLIC' },
      }),
    );
    const id = created.agentRuntimeId!;
    const arn = created.agentRuntimeArn!;
    for (const sdk of [sdkA, sdkB])
      expect(
        (
          await until(
            () => sdk.control.send(new GetAgentRuntimeCommand({ agentRuntimeId: id })).catch(() => undefined),
            (r) => r?.status === 'READY',
            20_000,
          )
        )?.status,
      ).toBe('READY');

    // Three sessions live on B.
    const onB = ['b-one', 'b-two', 'b-three'].map((label) => sessionId(label));
    for (const sid of onB) expect((await invokeJson(sdkB.data, arn, sid, {})).count).toBe(1);

    // Twenty session starts on A; A is killed once some of their pods exist.
    const onA = Array.from({ length: 20 }, (_, i) => sessionId(`a-start-${i}`));
    const starts = onA.map((sid) => invokeJson(sdkA.data, arn, sid, {}).catch((e: unknown) => e));
    const ofA = 'agentrt.dev/replica';
    await until(
      async () => (await pods()).filter((p) => p.metadata.labels[ofA]?.startsWith('runtime-a-')).length,
      (n) => n >= 5,
      30_000,
    );
    a.child.kill('SIGKILL');
    await Promise.all(starts);
    const leftByA = (await pods()).filter((p) => p.metadata.labels[ofA]?.startsWith('runtime-a-')).length;
    expect(leftByA).toBeGreaterThan(0);

    // B leads once A's Lease lapses, then reaps A's pods once A's heartbeat has lapsed too.
    const after = await until(
      () => pods(),
      (items) => items.every((p) => !p.metadata.labels[ofA]?.startsWith('runtime-a-')),
      12 * LEASE_S * 1000,
    );
    const live = await createRuntimeClient({ url: b.url }).activeSessions();
    expect(live.map((s) => s.sessionId).sort()).toEqual([...onB].sort());
    expect(after.map((p) => p.metadata.labels['agentrt.dev/session-hash']).sort()).toEqual(
      onB.map((sid) => sessionHash(sid)).sort(),
    );
    expect(await pods(`agentrt.dev/runtime=${id}`)).toHaveLength(onB.length);
    // The sessions on B still answer, from their own pods.
    for (const sid of onB) expect((await invokeJson(sdkB.data, arn, sid, {})).count).toBe(2);

    const listed = await sdkB.control.send(new ListAgentRuntimesCommand({}));
    const rows = JSON.parse(await kubectl('get', 'agentruntimes', '-o', 'json')) as {
      items: { spec: { id: string } }[];
    };
    expect(rows.items.map((r) => r.spec.id)).toEqual(listed.agentRuntimes?.map((r) => r.agentRuntimeId));
    expect(
      JSON.parse(await kubectl('get', 'lease', 'agentrt-leader', '-o', 'json')).spec.holderIdentity,
    ).toBe('runtime-b');
    for (const sdk of [sdkA, sdkB]) {
      sdk.control.destroy();
      sdk.data.destroy();
    }
  }, 120_000);
});
