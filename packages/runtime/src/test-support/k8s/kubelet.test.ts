// The test kubelet: pods created through kubectl and client-node really run (as local workers of
// the process-group backend), serve HTTP on their pod IP, report Ready, and answer logs and exec.
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { CoreV1Api, Exec, KubeConfig, type V1Pod, type V1Status } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureUri } from '../../test-support.js';
import { type KubeApiServer, startKubeApiServer } from './api-server.js';
import { type Kubelet, startKubelet } from './kubelet.js';
import { nodeBackend } from './node-backend.js';
import { writeKubeconfig } from './kubeconfig.js';

const run = promisify(execFile);
let api: KubeApiServer;
let kubelet: Kubelet;
let kubeconfig: string;
let kc: KubeConfig;
let core: CoreV1Api;

const kubectl = (...args: string[]) =>
  run('kubectl', args, { env: { ...process.env, KUBECONFIG: kubeconfig }, timeout: 60_000 });

function pod(name: string, image: string): V1Pod {
  return {
    metadata: { name, labels: { app: 'kubelet-test' } },
    spec: {
      restartPolicy: 'Never',
      containers: [
        { name: 'agent', image, ports: [{ containerPort: 8080 }], env: [{ name: 'GREETING', value: 'hi' }] },
      ],
    },
  };
}

function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  api = await startKubeApiServer();
  kubeconfig = writeKubeconfig(api.url);
  kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  core = kc.makeApiClient(CoreV1Api);
  kubelet = await startKubelet({
    api,
    kubeconfig,
    dataDir: mkdtempSync(join(tmpdir(), 'agentrt-kubelet-')),
    backend: nodeBackend(),
  });
});
afterAll(async () => {
  await kubelet?.close();
  await api?.close();
});

describe('test kubelet', () => {
  it('runs a pod that serves on its pod IP once Ready, with its logs and exec', async () => {
    await core.createNamespacedPod({ namespace: 'default', body: pod('echo-1', fixtureUri('echo')) });
    await kubectl('wait', '--for=condition=Ready', 'pod/echo-1', '--timeout=45s');
    const live = await core.readNamespacedPod({ name: 'echo-1', namespace: 'default' });
    expect(live.spec?.nodeName).toBe(kubelet.nodeName);
    expect(live.status?.phase).toBe('Running');
    const ip = live.status?.podIP as string;
    expect(ip).toMatch(/^127\.\d+\.\d+\.\d+$/);
    const ping = await httpGet(`http://${ip}:8080/ping`);
    expect(ping.status).toBe(200);
    const exec = await kubectl(
      'exec',
      'echo-1',
      '--',
      'sh',
      '-c',
      'echo "$GREETING from $HOSTNAME"; exit 3',
    ).catch((e: { stdout: string; code: number }) => e);
    expect((exec as { stdout: string }).stdout.trim()).toBe('hi from echo-1');
    expect((exec as { code: number }).code).toBe(3);
    const out = new PassThrough();
    let text = '';
    out.on('data', (c: Buffer) => (text += c.toString()));
    const status = await new Promise<V1Status>((resolve, reject) => {
      new Exec(kc)
        .exec('default', 'echo-1', 'agent', ['sh', '-c', 'pwd; echo done'], out, null, null, false, resolve)
        .catch(reject);
    });
    expect(status.status).toBe('Success');
    expect(text).toMatch(/done/);
    const events = await kubectl(
      'get',
      'events',
      '--field-selector',
      'involvedObject.name=echo-1',
      '-o',
      'jsonpath={.items[*].reason}',
    );
    expect(events.stdout.split(' ')).toEqual(expect.arrayContaining(['Scheduled', 'Pulled', 'Started']));
    await kubectl('logs', 'echo-1', '--tail=5');
    await kubectl('delete', 'pod', 'echo-1');
    expect(
      await until(
        () => Promise.resolve(kubelet.running()),
        (n) => n === 0,
      ),
    ).toBe(0);
    await expect(httpGet(`http://${ip}:8080/ping`)).rejects.toThrow(/ECONNREFUSED/);
  }, 90_000);

  it('reports an image it cannot pull, and a container that exits', async () => {
    await core.createNamespacedPod({ namespace: 'default', body: pod('nopull', 'registry.invalid/agent:1') });
    const pulled = await until(
      () => core.readNamespacedPod({ name: 'nopull', namespace: 'default' }),
      (p) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ErrImagePull',
    );
    expect(pulled.status?.phase).toBe('Pending');
    expect(pulled.status?.containerStatuses?.[0]?.state?.waiting?.message).toMatch(
      /Failed to pull image "registry.invalid\/agent:1"/,
    );
    const exiting = mkdtempSync(join(tmpdir(), 'agentrt-exiting-'));
    chmodSync(exiting, 0o755); // readable by a sandbox's user
    writeFileSync(
      join(exiting, 'agentrt.json'),
      JSON.stringify({ command: ['sh', '-c', 'echo boom: no config >&2; exit 3'] }),
    );
    await core.createNamespacedPod({ namespace: 'default', body: pod('crash', pathToFileURL(exiting).href) });
    const crashed = await until(
      () => core.readNamespacedPod({ name: 'crash', namespace: 'default' }),
      (p) => p.status?.phase === 'Failed',
    );
    expect(crashed.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(3);
    const logs = await kubectl('logs', 'crash');
    expect(logs.stdout).toMatch(/boom: no config/);
  }, 60_000);
});
