import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../logger.js';
import { type KubeApiServer, startKubeApiServer } from '../../test-support/k8s/api-server.js';
import { kubeconfigYaml, writeKubeconfig } from '../../test-support/k8s/kubeconfig.js';
import { type Store, StoreConflictError } from '../store.js';
import { StoreUnavailableError, createKubernetesStore } from './kubernetes-store.js';
import { describeStoreContract, runtimeRecord } from './store-contract.test-util.js';

const run = promisify(execFile);

const CRDS = resolve(fileURLToPath(import.meta.url), '../../../../../../deploy/k8s/crds');
let api: KubeApiServer;
let kubeConfig: KubeConfig;
let namespace = '';
let namespaces = 0;
const logger = createLogger({ level: 'error', sink: () => undefined });

beforeAll(async () => {
  api = await startKubeApiServer();
  for (const plural of ['agentruntimes', 'agentruntimeversions', 'agentruntimeendpoints'])
    api.applyYaml(`${CRDS}/agentrt.dev_${plural}.yaml`);
  kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(kubeconfigYaml(api.url, undefined));
});
afterAll(async () => {
  await api?.close();
});

const open = () => createKubernetesStore({ kubeConfig, namespace, logger, retryMs: 100 });

describeStoreContract('kubernetes', {
  open: async () => {
    namespace = `store-${++namespaces}`;
    await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    return open();
  },
  reopen: open,
  eventually: async (check) => {
    for (let i = 0; ; i++)
      try {
        return check();
      } catch (error) {
        if (i >= 100) throw error;
        await new Promise((r) => setTimeout(r, 50));
      }
  },
});

/** Two replicas' stores on one namespace. */
async function replicas(): Promise<[Store, Store]> {
  namespace = `store-${++namespaces}`;
  await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  return [await open(), await open()];
}

async function until(check: () => boolean, ms = 5000): Promise<void> {
  for (const end = Date.now() + ms; !check(); await new Promise((r) => setTimeout(r, 20)))
    if (Date.now() > end) throw new Error('timed out');
}

describe('kubernetes control store across replicas', () => {
  it('one replica sees another one writes and deletions through its watch', async () => {
    const [a, b] = await replicas();
    try {
      const runtime = runtimeRecord('shared');
      await a.put('runtime', runtime.id, runtime, '', 1);
      await until(() => b.get('runtime', runtime.id) !== undefined);
      const started = Date.now();
      await b.put('runtime', runtime.id, { ...runtime, status: 'READY' }, '', 1);
      await until(() => a.get('runtime', runtime.id)?.status === 'READY');
      expect(Date.now() - started).toBeLessThan(2000);
      await a.delete('runtime', runtime.id);
      await until(() => b.get('runtime', runtime.id) === undefined);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('two replicas creating one runtime name at once: one wins, the other gets a conflict', async () => {
    const [a, b] = await replicas();
    try {
      const first = runtimeRecord('racer', 'AAAAAAAAAA');
      const second = runtimeRecord('racer', 'BBBBBBBBBB');
      const results = await Promise.allSettled([
        a.put('runtime', first.id, first, '', 1),
        b.put('runtime', second.id, second, '', 1),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
      const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(lost.reason).toBeInstanceOf(StoreConflictError);
      await until(() => a.count('runtime') === 1 && b.count('runtime') === 1);
      expect(a.list('runtime', { offset: 0, limit: 5 })).toEqual(b.list('runtime', { offset: 0, limit: 5 }));
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('two replicas updating one record at once both succeed, and both end on the same record', async () => {
    const [a, b] = await replicas();
    try {
      const runtime = runtimeRecord('busy');
      await a.put('runtime', runtime.id, runtime, '', 1);
      await until(() => b.get('runtime', runtime.id) !== undefined);
      await Promise.all([
        a.put('runtime', runtime.id, { ...runtime, lastUpdatedAt: 'a' }, '', 1),
        b.put('runtime', runtime.id, { ...runtime, lastUpdatedAt: 'b' }, '', 1),
      ]);
      await until(
        () => a.get('runtime', runtime.id)?.lastUpdatedAt === b.get('runtime', runtime.id)?.lastUpdatedAt,
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('refuses writes while the API server is unreachable, loses nothing, and catches up once it is back', async () => {
    const [a, b] = await replicas();
    try {
      const runtime = runtimeRecord('outage');
      await a.put('runtime', runtime.id, runtime, '', 1);
      await until(() => b.get('runtime', runtime.id) !== undefined);
      await api.suspend();
      const refused = await a
        .put('runtime', runtime.id, { ...runtime, status: 'READY' }, '', 1)
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(StoreUnavailableError);
      expect((refused as Error).message).toMatch(/Kubernetes API server did not take runtime outage-/);
      expect(a.get('runtime', runtime.id)?.status).toBe('CREATING'); // what the cluster holds
      expect(b.get('runtime', runtime.id)?.status).toBe('CREATING'); // reads keep serving from the cache
      await api.resume();
      await a.put('runtime', runtime.id, { ...runtime, status: 'READY' }, '', 1);
      await until(() => b.get('runtime', runtime.id)?.status === 'READY', 15_000);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('resumes after its watch is dropped, and kubectl sees what it wrote', async () => {
    const [a, b] = await replicas();
    try {
      api.dropWatches();
      const runtime = runtimeRecord('watched');
      await a.put('runtime', runtime.id, { ...runtime, status: 'READY' }, '', 1);
      await until(() => b.get('runtime', runtime.id) !== undefined, 15_000);
      const kubeconfig = writeKubeconfig(api.url);
      const { stdout } = await run('kubectl', ['get', 'agentruntimes', '-n', namespace, '-o', 'json'], {
        env: { ...process.env, KUBECONFIG: kubeconfig },
      });
      const items = (JSON.parse(stdout) as { items: { spec: { id: string }; status: { status: string } }[] })
        .items;
      expect(items.map((i) => [i.spec.id, i.status.status])).toEqual([[runtime.id, 'READY']]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
