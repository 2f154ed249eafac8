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

/** One store's clients, its watch-fed cache and its informers, shared by the steps below. */
interface StoreState {
  options: KubernetesStoreOptions;
  namespace: string;
  custom: CustomObjectsApi;
  core: CoreV1Api;
  cache: Map<Kind, Map<string, Entry>>;
  /** Deletions this replica made, so a late watch event of the object does not bring it back. */
  gone: Map<string, string>;
  informers: Informer<KubernetesObject>[];
  closed: boolean;
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
  const { kubeConfig, namespace } = options;
  const s: StoreState = {
    options,
    namespace,
    custom: kubeConfig.makeApiClient(CustomObjectsApi),
    core: kubeConfig.makeApiClient(CoreV1Api),
    cache: new Map<Kind, Map<string, Entry>>(KINDS.map((k) => [k, new Map()])),
    gone: new Map<string, string>(),
    informers: [],
    closed: false,
  };
  await watchAll(s);
  return storeOf(s);
}

function storeOf(s: StoreState): Store {
  return {
    get: <K extends Kind>(kind: K, id: string) => s.cache.get(kind)!.get(id)?.doc as Kinds[K] | undefined,
    put: (kind, id, doc, parent = '', ord = 0) => put(s, kind, id, doc, parent, ord),
    delete: async (kind, id) => {
      const held = s.cache.get(kind)!.get(id);
      if (held) await remove(s, held);
    },
    deleteChildren: async (parent) => {
      if (parent === '') return;
      await Promise.all(KINDS.flatMap((kind) => entriesOf(s, kind, parent).map((e) => remove(s, e))));
    },
    list: <K extends Kind>(
      kind: K,
      { parent, offset, limit }: { parent?: string; offset: number; limit: number },
    ) =>
      entriesOf(s, kind, parent)
        .slice(offset, offset + limit)
        .map((e) => structuredClone(e.doc) as Kinds[K]),
    count: (kind, parent) => entriesOf(s, kind, parent).length,
    close: async () => {
      s.closed = true;
      await Promise.all(s.informers.map((informer) => informer.stop()));
    },
  };
}

function remember(s: StoreState, entry: Entry): void {
  const held = s.cache.get(entry.kind)!.get(entry.id);
  if (held && held.name === entry.name && !newer(entry.resourceVersion, held.resourceVersion)) return;
  const deletedAt = s.gone.get(`${entry.kind}/${entry.name}`);
  if (deletedAt !== undefined && !newer(entry.resourceVersion, deletedAt)) return;
  s.cache.get(entry.kind)!.set(entry.id, entry);
}

function forget(s: StoreState, entry: Entry): void {
  const held = s.cache.get(entry.kind)!.get(entry.id);
  if (held && held.name === entry.name && !newer(held.resourceVersion, entry.resourceVersion))
    s.cache.get(entry.kind)!.delete(entry.id);
}

function entriesOf(s: StoreState, kind: Kind, parent: string | undefined): Entry[] {
  return [...s.cache.get(kind)!.values()]
    .filter((e) => parent === undefined || e.parent === parent)
    .sort((a, b) => a.ord - b.ord || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

// --- the API calls, one shape for custom resources and ConfigMaps -------------------------

/** Several kinds share the ConfigMaps resource; each is told apart by its own label. */
const configMapSelector = (kind: Kind) => `${STORE_LABELS.managedBy}=agentrt,${STORE_LABELS.record}=${kind}`;

function api(s: StoreState, kind: Kind) {
  const { core, custom, namespace } = s;
  const r = RESOURCES[kind];
  if (r.kind === 'ConfigMap')
    return {
      create: (body: KubernetesObject) => core.createNamespacedConfigMap({ namespace, body }),
      read: (name: string) => core.readNamespacedConfigMap({ namespace, name }),
      replace: (name: string, body: KubernetesObject) =>
        core.replaceNamespacedConfigMap({ namespace, name, body }),
      remove: (name: string) => core.deleteNamespacedConfigMap({ namespace, name }),
      list: () => core.listNamespacedConfigMap({ namespace, labelSelector: configMapSelector(kind) }),
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
}

async function put<K extends Kind>(
  s: StoreState,
  kind: K,
  id: string,
  doc: Kinds[K],
  parent: string,
  ord: number,
): Promise<void> {
  const body = toObject({ kind, id, parent, ord, doc: structuredClone(doc) }, s.namespace);
  let stored: KubernetesObject;
  try {
    stored = await write(s, kind, id, body);
  } catch (error) {
    throw unavailable(error, `${kind} ${id}`);
  }
  const entry = fromObject(kind, stored);
  if (entry) remember(s, entry);
}

/** Creates the record's object, or replaces it when it already holds this record. */
async function write(
  s: StoreState,
  kind: Kind,
  id: string,
  body: KubernetesObject,
): Promise<KubernetesObject> {
  const held = s.cache.get(kind)!.get(id);
  if (held && held.name === body.metadata!.name) return replaceLatest(s, kind, body, held.resourceVersion);
  try {
    return (await api(s, kind).create(body)) as KubernetesObject;
  } catch (error) {
    if (!isCode(error, 409)) throw error;
    const existing = (await api(s, kind).read(body.metadata!.name!)) as KubernetesObject;
    const owner = fromObject(kind, existing);
    if (owner?.id !== id)
      throw new StoreConflictError(
        `${RESOURCES[kind].kind} ${body.metadata!.name} already holds ${kind} ${owner?.id}`,
      );
    return replaceLatest(s, kind, body, existing.metadata?.resourceVersion ?? '');
  }
}

async function replaceLatest(s: StoreState, kind: Kind, body: KubernetesObject, resourceVersion: string) {
  const name = body.metadata!.name!;
  let version = resourceVersion;
  for (let attempt = 1; ; attempt++) {
    try {
      return await api(s, kind).replace(name, {
        ...body,
        metadata: { ...body.metadata, resourceVersion: version },
      });
    } catch (error) {
      if (!isCode(error, 409) || attempt >= REPLACE_ATTEMPTS) throw error;
      version = ((await api(s, kind).read(name)) as KubernetesObject).metadata?.resourceVersion ?? '';
    }
  }
}

async function remove(s: StoreState, entry: Entry): Promise<void> {
  try {
    await api(s, entry.kind).remove(entry.name);
  } catch (error) {
    if (!isCode(error, 404)) throw unavailable(error, `the deletion of ${entry.kind} ${entry.id}`);
  }
  s.gone.set(`${entry.kind}/${entry.name}`, entry.resourceVersion);
  forget(s, entry);
}

// --- the watch-fed cache ----------------------------------------------------------------

/** Starts one informer per kind; if any first list fails, stops them all and throws. */
async function watchAll(s: StoreState): Promise<void> {
  // Several kinds share the ConfigMaps resource but watch their own label.
  await Promise.all(KINDS.map((kind) => watch(s, kind))).catch((error: unknown) => {
    s.closed = true;
    for (const informer of s.informers) void informer.stop();
    throw unavailable(error, 'the first list of the control store');
  });
}

async function watch(s: StoreState, kind: Kind): Promise<void> {
  const r = RESOURCES[kind];
  const path =
    r.kind === 'ConfigMap'
      ? `/api/v1/namespaces/${s.namespace}/configmaps`
      : `/apis/${r.group}/${r.version}/namespaces/${s.namespace}/${r.plural}`;
  const selector = r.kind === 'ConfigMap' ? configMapSelector(kind) : undefined;
  const informer = makeInformer(s.options.kubeConfig, path, api(s, kind).list, selector);
  const seen = (object: KubernetesObject) => {
    const entry = fromObject(kind, object);
    if (entry) remember(s, entry);
  };
  informer.on('add', seen);
  informer.on('update', seen);
  informer.on('delete', (object) => {
    const entry = fromObject(kind, object);
    if (entry) forget(s, entry);
  });
  informer.on('error', (error: unknown) => {
    if (s.closed) return;
    s.options.logger.warn('control store: watch failed; listing again', {
      kind,
      error: (error as Error).message,
    });
    setTimeout(() => void informer.start().catch(() => undefined), s.options.retryMs ?? 1000).unref();
  });
  s.informers.push(informer);
  await informer.start();
}
