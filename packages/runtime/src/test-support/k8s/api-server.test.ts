// The test Kubernetes API server, driven by clients no one here wrote: kubectl (the machine's
// v1.32) and @kubernetes/client-node (its typed APIs, informer and exec client).
import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  type V1Pod,
  PatchStrategy,
  makeInformer,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeApiServer, startKubeApiServer } from './api-server.js';
import { writeKubeconfig } from './kubeconfig.js';

const run = promisify(execFile);
const CRD = resolve(fileURLToPath(import.meta.url), '../../../../test-fixtures/k8s/widgets-crd.yaml');

let api: KubeApiServer;
let kubeconfig: string;
let core: CoreV1Api;
let kc: KubeConfig;

function kubectl(...args: string[]) {
  return run('kubectl', args, { env: { ...process.env, KUBECONFIG: kubeconfig }, timeout: 30_000 });
}

async function kubectlFails(...args: string[]): Promise<string> {
  const error = await kubectl(...args).then(
    () => undefined,
    (e: { stderr: string }) => e,
  );
  expect(error, `kubectl ${args.join(' ')} should fail`).toBeDefined();
  return (error as { stderr: string }).stderr;
}

function pod(name: string, labels: Record<string, string> = {}): V1Pod {
  return { metadata: { name, labels }, spec: { containers: [{ name: 'main', image: 'file:///nowhere' }] } };
}

async function apiError(
  promise: Promise<unknown>,
): Promise<{ code: number; body: { reason?: string; message?: string } }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiException);
  const e = error as ApiException<string>;
  return { code: e.code, body: JSON.parse(e.body) as { reason?: string; message?: string } };
}

function raw(method: string, path: string, body: string | Buffer, contentType = 'application/json') {
  return new Promise<{ status: number; body: Record<string, unknown> }>((done, fail) => {
    const headers = { 'content-type': contentType };
    const req = request({ host: '127.0.0.1', port: api.port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        done({
          status: res.statusCode ?? 0,
          body: JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>,
        }),
      );
    });
    req.on('error', fail);
    req.end(body);
  });
}

beforeAll(async () => {
  api = await startKubeApiServer({ historyLimit: 50 });
  kubeconfig = writeKubeconfig(api.url);
  kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  core = kc.makeApiClient(CoreV1Api);
});
afterAll(() => api.close());

describe('kubectl against the test API server', () => {
  it('discovers built-in kinds and the kinds of a CRD applied from its YAML', async () => {
    const before = await kubectl('api-resources', '--no-headers');
    expect(before.stdout).toMatch(/^pods\s+po\s+v1\s+true\s+Pod$/m);
    expect(before.stdout).toMatch(/^leases\s+coordination\.k8s\.io\/v1\s+true\s+Lease$/m);
    expect(before.stdout).not.toMatch(/Widget/);
    await kubectl('apply', '--validate=false', '-f', CRD);
    const after = await kubectl('api-resources', '--api-group=example.agentrt.dev', '--no-headers');
    expect(after.stdout).toMatch(/^widgets\s+wg\s+example\.agentrt\.dev\/v1\s+true\s+Widget$/m);
  });

  it('creates, lists by label, patches and deletes custom objects checked against the CRD schema', async () => {
    const widget = (name: string, spec: unknown) =>
      JSON.stringify({
        apiVersion: 'example.agentrt.dev/v1',
        kind: 'Widget',
        metadata: { name, labels: { team: 'a' } },
        spec,
      });
    await run(
      'sh',
      [
        '-c',
        `echo '${widget('w1', { size: 3, color: 'red', extra: 1 })}' | kubectl apply --validate=false -f -`,
      ],
      { env: { ...process.env, KUBECONFIG: kubeconfig } },
    );
    const got = JSON.parse((await kubectl('get', 'wg', 'w1', '-o', 'json')).stdout) as {
      spec: Record<string, unknown>;
    };
    expect(got.spec).toEqual({ size: 3, color: 'red' }); // the unknown field is pruned
    const stderr = await run(
      'sh',
      [
        '-c',
        `echo '${widget('w2', { size: 11, color: 'green' })}' | kubectl create --validate=false -f - 2>&1 || true`,
      ],
      { env: { ...process.env, KUBECONFIG: kubeconfig } },
    );
    expect(stderr.stdout).toMatch(/spec\.size: Invalid value: should be less than or equal to 10/);
    expect(stderr.stdout).toMatch(/spec\.color: Invalid value: Unsupported value: "green"/);
    await kubectl('label', 'widget', 'w1', 'team=b', '--overwrite');
    expect((await kubectl('get', 'widgets', '-l', 'team=b', '-o', 'name')).stdout.trim()).toBe(
      'widget.example.agentrt.dev/w1',
    );
    expect((await kubectl('get', 'widgets', '-l', 'team in (a)', '-o', 'name')).stdout.trim()).toBe('');
    await kubectl('delete', 'widget', 'w1');
    expect((await kubectl('get', 'widgets', '-o', 'name')).stdout.trim()).toBe('');
  });

  it('waits for a pod condition set through the status subresource', async () => {
    await core.createNamespacedPod({ namespace: 'default', body: pod('waited') });
    const waiting = kubectl('wait', '--for=condition=Ready', 'pod/waited', '--timeout=20s');
    await new Promise((r) => setTimeout(r, 300));
    await core.patchNamespacedPodStatus(
      {
        name: 'waited',
        namespace: 'default',
        body: { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    expect((await waiting).stdout).toMatch(/pod\/waited condition met/);
    await core.deleteNamespacedPod({ name: 'waited', namespace: 'default' });
  });

  it('answers an unknown kind, a missing object and a missing namespace with their Status', async () => {
    expect(await kubectlFails('get', 'gadgets')).toMatch(/the server doesn't have a resource type "gadgets"/);
    expect(await kubectlFails('get', 'pod', 'nope')).toMatch(/pods "nope" not found/);
    expect(await kubectlFails('get', 'pods', '-n', 'ghost', 'x')).toMatch(/not found/);
  });
});

describe('@kubernetes/client-node against the test API server', () => {
  it('conflicts (409) on a stale resourceVersion, so only one of two claims of a pod wins', async () => {
    const created = await core.createNamespacedPod({
      namespace: 'default',
      body: pod('warm-1', { pool: 'warm' }),
    });
    const claim = (session: string) =>
      core.patchNamespacedPod(
        {
          name: 'warm-1',
          namespace: 'default',
          body: {
            metadata: { resourceVersion: created.metadata?.resourceVersion, labels: { pool: null, session } },
          },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    const results = await Promise.allSettled([claim('s1'), claim('s2')]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((lost.reason as ApiException<string>).code).toBe(409);
    const stale = { ...created, metadata: { ...created.metadata, labels: { pool: 'x' } } };
    const replaced = await apiError(
      core.replaceNamespacedPod({ name: 'warm-1', namespace: 'default', body: stale }),
    );
    expect(replaced.code).toBe(409);
    expect(replaced.body.reason).toBe('Conflict');
    const list = await core.listNamespacedPod({ namespace: 'default', labelSelector: 'pool=warm' });
    expect(list.items).toHaveLength(0);
    await core.deleteNamespacedPod({ name: 'warm-1', namespace: 'default' });
  });

  it('applies a JSON patch whose test op is the precondition', async () => {
    await core.createNamespacedPod({ namespace: 'default', body: pod('jp', { pool: 'warm' }) });
    const take = (expect_: string) =>
      core.patchNamespacedPod(
        {
          name: 'jp',
          namespace: 'default',
          body: [
            { op: 'test', path: '/metadata/labels/pool', value: expect_ },
            { op: 'replace', path: '/metadata/labels/pool', value: 'taken' },
          ],
        },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
      );
    await take('warm');
    expect((await apiError(take('warm'))).code).toBe(422);
    await core.deleteNamespacedPod({ name: 'jp', namespace: 'default' });
  });

  it('collects dependents by ownerReference, and orphans them when asked', async () => {
    const owner = await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'owner' } },
    });
    const ref = [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        name: 'owner',
        uid: owner.metadata?.uid as string,
        controller: true,
      },
    ];
    await core.createNamespacedPod({
      namespace: 'default',
      body: { ...pod('child'), metadata: { name: 'child', ownerReferences: ref } },
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: 'default',
      body: { metadata: { name: 'child-pvc', ownerReferences: ref }, spec: {} },
    });
    await core.deleteNamespacedConfigMap({ name: 'owner', namespace: 'default' });
    expect((await apiError(core.readNamespacedPod({ name: 'child', namespace: 'default' }))).code).toBe(404);
    expect(
      (await apiError(core.readNamespacedPersistentVolumeClaim({ name: 'child-pvc', namespace: 'default' })))
        .code,
    ).toBe(404);
    const owner2 = await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'owner2' } },
    });
    await core.createNamespacedPod({
      namespace: 'default',
      body: {
        ...pod('kept'),
        metadata: {
          name: 'kept',
          ownerReferences: [{ ...ref[0]!, name: 'owner2', uid: owner2.metadata?.uid as string }],
        },
      },
    });
    await core.deleteNamespacedConfigMap({
      name: 'owner2',
      namespace: 'default',
      propagationPolicy: 'Orphan',
    });
    const kept = await core.readNamespacedPod({ name: 'kept', namespace: 'default' });
    expect(kept.metadata?.ownerReferences ?? []).toEqual([]);
    await core.deleteNamespacedPod({ name: 'kept', namespace: 'default' });
  });

  it('holds a deleted object with finalizers, marked, until they are taken off; then its dependents go', async () => {
    const namespace = 'default';
    const held = await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'held', finalizers: ['example.com/hold'] } },
    });
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', name: 'held', uid: held.metadata?.uid as string };
    await core.createNamespacedPod({
      namespace,
      body: { ...pod('held-child'), metadata: { name: 'held-child', ownerReferences: [ref] } },
    });
    await core.deleteNamespacedConfigMap({ name: 'held', namespace });
    const marked = await core.readNamespacedConfigMap({ name: 'held', namespace });
    expect(marked.metadata?.deletionTimestamp).toBeDefined();
    await core.readNamespacedPod({ name: 'held-child', namespace }); // not collected yet
    // A write cannot unmark it; a second delete changes nothing.
    const { stdout } = await kubectl('label', 'configmap', 'held', 'a=b', '-o', 'json');
    expect(
      (JSON.parse(stdout) as { metadata: { deletionTimestamp?: string } }).metadata.deletionTimestamp,
    ).toBe(marked.metadata?.deletionTimestamp?.toISOString().replace('.000Z', 'Z'));
    await kubectl('delete', 'configmap', 'held', '--wait=false');
    await kubectl('patch', 'configmap', 'held', '--type=merge', '-p', '{"metadata":{"finalizers":null}}');
    expect((await apiError(core.readNamespacedConfigMap({ name: 'held', namespace }))).code).toBe(404);
    expect((await apiError(core.readNamespacedPod({ name: 'held-child', namespace }))).code).toBe(404);
  });

  it('rejects a pod beyond a ResourceQuota with 403 exceeded quota', async () => {
    await core.createNamespace({ body: { metadata: { name: 'quota' } } });
    await core.createNamespacedResourceQuota({
      namespace: 'quota',
      body: { metadata: { name: 'two-pods' }, spec: { hard: { pods: '2' } } },
    });
    await core.createNamespacedPod({ namespace: 'quota', body: pod('a') });
    await core.createNamespacedPod({ namespace: 'quota', body: pod('b') });
    const third = await apiError(core.createNamespacedPod({ namespace: 'quota', body: pod('c') }));
    expect(third.code).toBe(403);
    expect(third.body.message).toBe(
      'pods is forbidden: exceeded quota: two-pods, requested: pods=1, used: pods=2, limited: pods=2',
    );
  });

  it('serves leases and custom objects through the generic clients', async () => {
    const leases = kc.makeApiClient(CoordinationV1Api);
    const lease = await leases.createNamespacedLease({
      namespace: 'default',
      body: { metadata: { name: 'keeper' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } },
    });
    const stolen = { ...lease, spec: { ...lease.spec, holderIdentity: 'b' } };
    await leases.replaceNamespacedLease({ name: 'keeper', namespace: 'default', body: stolen });
    expect(
      (
        await apiError(
          leases.replaceNamespacedLease({
            name: 'keeper',
            namespace: 'default',
            body: { ...stolen, spec: { holderIdentity: 'c' } },
          }),
        )
      ).code,
    ).toBe(409);
    const custom = kc.makeApiClient(CustomObjectsApi);
    const body = {
      apiVersion: 'example.agentrt.dev/v1',
      kind: 'Widget',
      metadata: { name: 'w9' },
      spec: { size: 1 },
    };
    await custom.createNamespacedCustomObject({
      group: 'example.agentrt.dev',
      version: 'v1',
      namespace: 'default',
      plural: 'widgets',
      body,
    });
    const status = await custom.patchNamespacedCustomObjectStatus(
      {
        group: 'example.agentrt.dev',
        version: 'v1',
        namespace: 'default',
        plural: 'widgets',
        name: 'w9',
        body: { status: { ready: true }, spec: { size: 9 } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    expect(status).toMatchObject({ spec: { size: 1 }, status: { ready: true } }); // the status write changes only status
  });

  it('feeds an informer that resumes from its resourceVersion after a dropped watch and relists after 410', async () => {
    let lists = 0;
    const list = () => {
      lists++;
      return core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=inf' });
    };
    const informer = makeInformer(kc, '/api/v1/namespaces/default/pods', list, 'app=inf');
    const seen: string[] = [];
    informer.on('add', (p) => seen.push(`add ${p.metadata?.name}`));
    informer.on('update', (p) => seen.push(`update ${p.metadata?.name} ${p.metadata?.labels?.step}`));
    informer.on('delete', (p) => seen.push(`delete ${p.metadata?.name}`));
    const connects: number[] = [];
    informer.on('connect', () => connects.push(Date.now()));
    await informer.start();
    const until = async (predicate: () => boolean) => {
      for (let i = 0; i < 200 && !predicate(); i++) await new Promise((r) => setTimeout(r, 50));
      expect(predicate()).toBe(true);
    };
    await core.createNamespacedPod({ namespace: 'default', body: pod('i1', { app: 'inf' }) });
    await until(() => seen.includes('add i1'));
    api.dropWatches();
    await core.patchNamespacedPod(
      { name: 'i1', namespace: 'default', body: { metadata: { labels: { step: '2' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await until(() => seen.includes('update i1 2'));
    expect(seen.filter((s) => s === 'add i1')).toHaveLength(1); // resumed, not relisted
    expect(lists).toBe(1);
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'unwatched' } } });
    api.store.compact(); // the informer's resourceVersion is now older than any kept change
    api.dropWatches();
    await until(() => lists === 2); // 410 Gone: the informer lists again
    await core.deleteNamespacedPod({ name: 'i1', namespace: 'default' });
    await until(() => seen.includes('delete i1'));
    await informer.stop();
  }, 60_000);
});

describe('bad input', () => {
  it('answers malformed, oversized and hostile requests with a Status naming the problem', async () => {
    const base = '/api/v1/namespaces/default/pods';
    const bad = await raw('POST', base, '{not json');
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/not valid JSON/);
    const big = await raw('POST', base, Buffer.alloc(4 * 1024 * 1024, 32));
    expect(big.status).toBe(413);
    const name = await raw(
      'POST',
      base,
      JSON.stringify({ metadata: { name: 'Bad_Name' }, spec: { containers: [{ name: 'm', image: 'i' }] } }),
    );
    expect(name.status).toBe(422);
    expect(name.body.message).toMatch(/RFC 1123 subdomain/);
    const noContainers = await raw('POST', base, JSON.stringify({ metadata: { name: 'empty' }, spec: {} }));
    expect(noContainers.status).toBe(422);
    expect(noContainers.body.message).toMatch(/spec\.containers: Required value/);
    const label = await raw(
      'POST',
      base,
      JSON.stringify({
        metadata: { name: 'l', labels: { a: 'x'.repeat(64) } },
        spec: { containers: [{ name: 'm', image: 'i' }] },
      }),
    );
    expect(label.status).toBe(422);
    const selector = await raw('GET', `${base}?labelSelector=${encodeURIComponent('a in (b')}`, '');
    expect(selector.status).toBe(400);
    const patchType = await raw('PATCH', `${base}/x`, '{}', 'application/apply-patch+yaml');
    expect(patchType.status).toBe(415);
    const traversal = await raw('GET', '/api/v1/namespaces/default/pods/../../../secrets', '');
    expect(traversal.status).toBe(400);
    const wrongNs = await raw(
      'POST',
      base,
      JSON.stringify({
        metadata: { name: 'n', namespace: 'other' },
        spec: { containers: [{ name: 'm', image: 'i' }] },
      }),
    );
    expect(wrongNs.status).toBe(400);
  });

  it('refuses connections while suspended and serves the same state on the same port after', async () => {
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'survives' } } });
    await api.suspend();
    const refused = await core.readNamespacedConfigMap({ name: 'survives', namespace: 'default' }).then(
      () => 'answered',
      (e: Error) => String((e as { cause?: { code?: string } }).cause?.code ?? e.message),
    );
    expect(refused).toMatch(/ECONNREFUSED/);
    await api.resume();
    expect(
      (await core.readNamespacedConfigMap({ name: 'survives', namespace: 'default' })).metadata?.name,
    ).toBe('survives');
  });
});
