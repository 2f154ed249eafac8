import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  type Informer,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  makeInformer,
} from '@kubernetes/client-node';
import { type Logger } from '../../logger.js';
import { type Kind, type Kinds, type Store, StoreConflictError } from '../store.js';
import { type Entry, RESOURCES, STORE_LABELS, fromObject, newer, toObject } from './kubernetes-objects.js';

export interface KubernetesStoreOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  logger: Logger;
  /** Delay before an informer that failed (API server unreachable) lists and watches again. */
  retryMs?: number;
}

/** The API server could not be reached, or failed; the write did not happen. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}

const KINDS = Object.keys(RESOURCES) as Kind[];
/** Attempts at a replace that meets 409 Conflict (another writer in between): last writer wins. */
const REPLACE_ATTEMPTS = 3;

const isCode = (error: unknown, code: number) => error instanceof ApiException && error.code === code;

function unavailable(error: unknown, what: string): Error {
  if (error instanceof StoreConflictError || (error instanceof ApiException && error.code < 500))
    return error as Error;
  return new StoreUnavailableError(
    `the Kubernetes API server did not take ${what}: ${(error as Error).message}`,
    {
      cause: error,
    },
  );
}

/**
 * The control plane's records in the cluster (agentrt.dev/v1 custom resources and ConfigMaps in
 * one namespace), so every runtime replica behind a Service shares them. Reads come from a cache
 * each replica keeps by watching the API server (informers: list, then watch from the list's
 * resourceVersion, relist after 410); a write resolves once the API server took it, and this
 * replica's cache holds it at once. Writes are optimistic: a create that finds another record's
 * object throws StoreConflictError; a replace carries the cached resourceVersion and, on 409,
 * is applied again on the latest one (the same last-writer-wins an SQLite upsert gives).
 */
export async function createKubernetesStore(options: KubernetesStoreOptions): Promise<Store> {
  const { kubeConfig, namespace, logger } = options;
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const cache = new Map<Kind, Map<string, Entry>>(KINDS.map((k) => [k, new Map()]));
  /** Deletions this replica made, so a late watch event of the object does not bring it back. */
  const gone = new Map<string, string>();
  let closed = false;

  const remember = (entry: Entry) => {
    const held = cache.get(entry.kind)!.get(entry.id);
    if (held && held.name === entry.name && !newer(entry.resourceVersion, held.resourceVersion)) return;
    const deletedAt = gone.get(`${entry.kind}/${entry.name}`);
    if (deletedAt !== undefined && !newer(entry.resourceVersion, deletedAt)) return;
    cache.get(entry.kind)!.set(entry.id, entry);
  };
  const forget = (entry: Entry) => {
    const held = cache.get(entry.kind)!.get(entry.id);
    if (held && held.name === entry.name && !newer(held.resourceVersion, entry.resourceVersion))
      cache.get(entry.kind)!.delete(entry.id);
  };

  // --- the API calls, one shape for custom resources and ConfigMaps -------------------------
  const api = (kind: Kind) => {
    const r = RESOURCES[kind];
    if (r.kind === 'ConfigMap')
      return {
        create: (body: KubernetesObject) => core.createNamespacedConfigMap({ namespace, body }),
        read: (name: string) => core.readNamespacedConfigMap({ namespace, name }),
        replace: (name: string, body: KubernetesObject) =>
          core.replaceNamespacedConfigMap({ namespace, name, body }),
        remove: (name: string) => core.deleteNamespacedConfigMap({ namespace, name }),
        list: () =>
          core.listNamespacedConfigMap({
            namespace,
            labelSelector: `${STORE_LABELS.managedBy}=agentrt,${STORE_LABELS.record}=${kind}`,
          }),
      };
    const at = { group: r.group, version: r.version, namespace, plural: r.plural };
    return {
      create: (body: KubernetesObject) => custom.createNamespacedCustomObject({ ...at, body }),
      read: (name: string) => custom.getNamespacedCustomObject({ ...at, name }),
      replace: (name: string, body: KubernetesObject) =>
        custom.replaceNamespacedCustomObject({ ...at, name, body }),
      remove: (name: string) => custom.deleteNamespacedCustomObject({ ...at, name }),
      list: () => custom.listNamespacedCustomObject(at) as Promise<KubernetesListObject<KubernetesObject>>,
    };
  };

  const replaceLatest = async (kind: Kind, body: KubernetesObject, resourceVersion: string) => {
    const name = body.metadata!.name!;
    let version = resourceVersion;
    for (let attempt = 1; ; attempt++) {
      try {
        return await api(kind).replace(name, {
          ...body,
          metadata: { ...body.metadata, resourceVersion: version },
        });
      } catch (error) {
        if (!isCode(error, 409) || attempt >= REPLACE_ATTEMPTS) throw error;
        version = ((await api(kind).read(name)) as KubernetesObject).metadata?.resourceVersion ?? '';
      }
    }
  };

  /** Creates the record's object, or replaces it when it already holds this record. */
  const write = async (kind: Kind, id: string, body: KubernetesObject): Promise<KubernetesObject> => {
    const held = cache.get(kind)!.get(id);
    if (held && held.name === body.metadata!.name) return replaceLatest(kind, body, held.resourceVersion);
    try {
      return (await api(kind).create(body)) as KubernetesObject;
    } catch (error) {
      if (!isCode(error, 409)) throw error;
      const existing = (await api(kind).read(body.metadata!.name!)) as KubernetesObject;
      const owner = fromObject(kind, existing);
      if (owner?.id !== id)
        throw new StoreConflictError(
          `${RESOURCES[kind].kind} ${body.metadata!.name} already holds ${kind} ${owner?.id}`,
        );
      return replaceLatest(kind, body, existing.metadata?.resourceVersion ?? '');
    }
  };

  const remove = async (entry: Entry) => {
    try {
      await api(entry.kind).remove(entry.name);
    } catch (error) {
      if (!isCode(error, 404)) throw unavailable(error, `the deletion of ${entry.kind} ${entry.id}`);
    }
    gone.set(`${entry.kind}/${entry.name}`, entry.resourceVersion);
    forget(entry);
  };

  // --- the watch-fed cache ----------------------------------------------------------------
  const informers: Informer<KubernetesObject>[] = [];
  const watch = async (kind: Kind) => {
    const r = RESOURCES[kind];
    const path =
      r.kind === 'ConfigMap'
        ? `/api/v1/namespaces/${namespace}/configmaps`
        : `/apis/${r.group}/${r.version}/namespaces/${namespace}/${r.plural}`;
    const selector =
      r.kind === 'ConfigMap' ? `${STORE_LABELS.managedBy}=agentrt,${STORE_LABELS.record}=${kind}` : undefined;
    const informer = makeInformer(kubeConfig, path, api(kind).list, selector);
    const seen = (object: KubernetesObject) => {
      const entry = fromObject(kind, object);
      if (entry) remember(entry);
    };
    informer.on('add', seen);
    informer.on('update', seen);
    informer.on('delete', (object) => {
      const entry = fromObject(kind, object);
      if (entry) forget(entry);
    });
    informer.on('error', (error: unknown) => {
      if (closed) return;
      logger.warn('control store: watch failed; listing again', { kind, error: (error as Error).message });
      setTimeout(() => void informer.start().catch(() => undefined), options.retryMs ?? 1000).unref();
    });
    informers.push(informer);
    await informer.start();
  };
  // Several kinds share the ConfigMaps resource but watch their own label.
  await Promise.all(KINDS.map(watch)).catch((error: unknown) => {
    closed = true;
    for (const informer of informers) void informer.stop();
    throw unavailable(error, 'the first list of the control store');
  });

  const entriesOf = (kind: Kind, parent: string | undefined) =>
    [...cache.get(kind)!.values()]
      .filter((e) => parent === undefined || e.parent === parent)
      .sort((a, b) => a.ord - b.ord || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

  return {
    get: <K extends Kind>(kind: K, id: string) => cache.get(kind)!.get(id)?.doc as Kinds[K] | undefined,
    put: async (kind, id, doc, parent = '', ord = 0) => {
      const body = toObject({ kind, id, parent, ord, doc: structuredClone(doc) }, namespace);
      let stored: KubernetesObject;
      try {
        stored = await write(kind, id, body);
      } catch (error) {
        throw unavailable(error, `${kind} ${id}`);
      }
      const entry = fromObject(kind, stored);
      if (entry) remember(entry);
    },
    delete: async (kind, id) => {
      const held = cache.get(kind)!.get(id);
      if (held) await remove(held);
    },
    deleteChildren: async (parent) => {
      if (parent === '') return;
      await Promise.all(KINDS.flatMap((kind) => entriesOf(kind, parent).map(remove)));
    },
    list: <K extends Kind>(
      kind: K,
      { parent, offset, limit }: { parent?: string; offset: number; limit: number },
    ) =>
      entriesOf(kind, parent)
        .slice(offset, offset + limit)
        .map((e) => structuredClone(e.doc) as Kinds[K]),
    count: (kind, parent) => entriesOf(kind, parent).length,
    close: async () => {
      closed = true;
      await Promise.all(informers.map((informer) => informer.stop()));
    },
  };
}
