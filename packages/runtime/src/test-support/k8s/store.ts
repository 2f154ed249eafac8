// The test API server's state: every object by kind, namespace and name, one resourceVersion
// counter, the recent changes a watch resumes from (older ones are compacted away: 410 Gone),
// ownerReference garbage collection, finalizers and ResourceQuota counts. In memory, as etcd
// would hold it. What a write must pass first (Pod defaults, schemas, quotas) is in admission.ts.
import {
  KubeError,
  type KubeObject,
  type ObjectMeta,
  checkLabels,
  checkName,
  clone,
  generatedName,
  isRecord,
  newUid,
  timestamp,
} from './objects.js';
import { type PatchType, jsonPatch, mergePatch } from './patch.js';
import { type ResourceType, groupVersionOf, typeKey, typesOfCrd } from './resource-types.js';
import { checkQuota, defaultPod, validateObject } from './admission.js';
import { ChangeLog, type EventType, type StoredEvent, type WatchFilter } from './change-log.js';

export type { EventType, StoredEvent, WatchFilter } from './change-log.js';

export interface DeleteOptions {
  propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  preconditions?: { uid?: string; resourceVersion?: string };
}

/** Called after every write, with the type written (the server's hooks: CRDs, kubelet). */
export type WriteListener = (event: StoredEvent) => void;

const CONFLICT =
  'the object has been modified; please apply your changes to the latest version and try again';

export class ObjectStore {
  private readonly objects = new Map<string, KubeObject>();
  private readonly types = new Map<string, ResourceType>();
  private readonly changes = new ChangeLog((filter, object) => this.visible(filter, object));
  private revision = 1;
  /** Writes counted by verb (bench: API writes per session). */
  readonly writes = { create: 0, update: 0, patch: 0, delete: 0 };

  constructor(types: ResourceType[]) {
    for (const type of types) this.register(type);
    for (const name of ['default', 'kube-system']) this.createNamespace(name);
  }

  register(type: ResourceType): void {
    this.types.set(`${groupVersionOf(type)}/${type.plural}`, type);
  }

  typeFor(groupVersion: string, plural: string): ResourceType | undefined {
    return this.types.get(`${groupVersion}/${plural}`);
  }

  allTypes(): ResourceType[] {
    return [...this.types.values()];
  }

  get resourceVersion(): string {
    return String(this.revision);
  }

  private key(type: ResourceType, namespace: string | undefined, name: string): string {
    return `${typeKey(type)}/${type.namespaced ? (namespace ?? '') : ''}/${name}`;
  }

  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const object = this.objects.get(this.key(type, namespace, name));
    if (!object) throw notFound(type, name);
    return this.shaped(type, object);
  }

  /** The object as `type`'s version shows it (a CRD's objects are shared by its versions). */
  private shaped(type: ResourceType, object: KubeObject): KubeObject {
    return { ...clone(object), apiVersion: groupVersionOf(type) };
  }

  list(filter: WatchFilter): KubeObject[] {
    const prefix = `${typeKey(filter.type)}/`;
    const out: KubeObject[] = [];
    for (const [key, object] of this.objects)
      if (key.startsWith(prefix) && this.visible(filter, object)) out.push(this.shaped(filter.type, object));
    return out.sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion));
  }

  private visible(filter: WatchFilter, object: KubeObject): boolean {
    if (filter.namespace !== undefined && object.metadata.namespace !== filter.namespace) return false;
    return filter.selector(object);
  }

  create(type: ResourceType, namespace: string | undefined, body: unknown): KubeObject {
    const object = this.prepareNew(type, namespace, body);
    const key = this.key(type, namespace, object.metadata.name);
    if (this.objects.has(key))
      throw new KubeError('AlreadyExists', `${kindName(type)} "${object.metadata.name}" already exists`, {
        name: object.metadata.name,
        group: type.group,
        kind: type.plural,
      });
    if (type.namespaced) {
      const all = (t: ResourceType) => this.list({ type: t, namespace, selector: () => true });
      checkQuota(type, all(this.typeFor('v1', 'resourcequotas') as ResourceType), () => all(type).length);
    }
    if (type.plural === 'customresourcedefinitions' && type.group === 'apiextensions.k8s.io')
      for (const t of typesOfCrd(object)) this.register(t);
    this.writes.create++;
    return this.commit(type, key, object, 'ADDED');
  }

  private prepareNew(type: ResourceType, namespace: string | undefined, body: unknown): KubeObject {
    if (!isRecord(body)) throw new KubeError('BadRequest', `${type.kind}: the body must be a JSON object`);
    const meta = (isRecord(body.metadata) ? body.metadata : {}) as Partial<ObjectMeta>;
    if (body.kind !== undefined && body.kind !== type.kind)
      throw new KubeError(
        'BadRequest',
        `the kind of the body (${String(body.kind)}) does not match the URL's (${type.kind})`,
      );
    if (type.namespaced) this.namespaceMustExist(namespace as string, meta.namespace);
    const name = meta.name || (meta.generateName ? generatedName(meta.generateName) : undefined);
    checkName(name, type.kind);
    checkLabels(meta.labels, type.kind);
    const object = clone(body) as unknown as KubeObject;
    object.apiVersion = groupVersionOf(type);
    object.kind = type.kind;
    object.metadata = {
      ...clone(meta),
      name: name as string,
      ...(type.namespaced ? { namespace } : {}),
      uid: newUid(),
      resourceVersion: '',
      generation: 1,
      creationTimestamp: timestamp(),
    };
    delete object.metadata.deletionTimestamp;
    if (type.subresources.includes('status') && type.plural !== 'pods') delete object.status;
    if (type.plural === 'pods' && !type.group) defaultPod(object);
    validateObject(type, object);
    return object;
  }

  private namespaceMustExist(namespace: string, bodyNamespace: string | undefined): void {
    if (bodyNamespace && bodyNamespace !== namespace)
      throw new KubeError(
        'BadRequest',
        `the namespace of the provided object (${bodyNamespace}) does not match the namespace sent on the request (${namespace})`,
      );
    if (!this.namespaceExists(namespace))
      throw new KubeError('NotFound', `namespaces "${namespace}" not found`, {
        name: namespace,
        kind: 'namespaces',
      });
  }

  private namespaceExists(name: string): boolean {
    const type = this.typeFor('v1', 'namespaces') as ResourceType;
    return this.objects.has(this.key(type, undefined, name));
  }

  private createNamespace(name: string): void {
    this.create(this.typeFor('v1', 'namespaces') as ResourceType, undefined, {
      metadata: { name },
      status: { phase: 'Active' },
    });
  }

  private commit(type: ResourceType, key: string, object: KubeObject, event: EventType): KubeObject {
    object.metadata.resourceVersion = String(++this.revision);
    if (event === 'DELETED') this.objects.delete(key);
    else this.objects.set(key, object);
    const stored: StoredEvent = {
      type: event,
      object: clone(object),
      rv: this.revision,
      typeKey: typeKey(type),
    };
    this.changes.record(stored);
    return this.shaped(type, object);
  }

  /** PUT: the whole object, or its status; a resourceVersion that is not the current one is a 409. */
  update(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    body: unknown,
    subresource?: string,
  ): KubeObject {
    if (!isRecord(body) || !isRecord(body.metadata))
      throw new KubeError('BadRequest', `${type.kind}: the body must be a JSON object with metadata`);
    if (body.metadata.name !== undefined && body.metadata.name !== name)
      throw new KubeError(
        'BadRequest',
        `the name of the object (${String(body.metadata.name)}) does not match the name on the URL (${name})`,
      );
    return this.replace(
      type,
      namespace,
      name,
      () => clone(body) as unknown as KubeObject,
      subresource,
      'update',
    );
  }

  /** PATCH: merge or JSON patch of the current object; a resourceVersion in it is a precondition. */
  patch(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    kind: PatchType,
    patch: unknown,
    subresource?: string,
  ): KubeObject {
    if (kind === 'merge' && !isRecord(patch))
      throw new KubeError('BadRequest', 'a merge patch must be a JSON object');
    const apply = (current: KubeObject) =>
      (kind === 'merge' ? mergePatch(current, patch) : jsonPatch(current, patch)) as KubeObject;
    return this.replace(type, namespace, name, apply, subresource, 'patch');
  }

  private replace(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    change: (current: KubeObject) => KubeObject,
    subresource: string | undefined,
    verb: 'update' | 'patch',
  ): KubeObject {
    const key = this.key(type, namespace, name);
    const current = this.objects.get(key);
    if (!current) throw notFound(type, name);
    const next = change(this.shaped(type, current));
    if (!isRecord(next) || !isRecord(next.metadata))
      throw new KubeError('BadRequest', 'the result has no metadata');
    const rv = next.metadata.resourceVersion;
    if (rv && rv !== current.metadata.resourceVersion)
      throw new KubeError(
        'Conflict',
        `Operation cannot be fulfilled on ${type.plural} "${name}": ${CONFLICT}`,
        {
          name,
          group: type.group,
          kind: type.plural,
        },
      );
    const merged = this.mergeWrite(type, current, next, subresource);
    validateObject(type, merged);
    this.writes[verb]++;
    const written = this.commit(type, key, merged, 'MODIFIED');
    // The last finalizer of an object being deleted taken off: now it goes.
    const { deletionTimestamp, finalizers } = merged.metadata;
    return deletionTimestamp && !finalizers?.length ? this.remove(type, key, merged, false) : written;
  }

  /** Keeps what a write may not change: identity, and status or spec per subresource. */
  private mergeWrite(
    type: ResourceType,
    current: KubeObject,
    next: KubeObject,
    subresource: string | undefined,
  ): KubeObject {
    checkLabels(next.metadata.labels, type.kind);
    const identity = {
      name: current.metadata.name,
      namespace: current.metadata.namespace,
      uid: current.metadata.uid,
      creationTimestamp: current.metadata.creationTimestamp,
      generation: current.metadata.generation ?? 1,
    };
    if (subresource === 'status') return { ...clone(current), status: next.status };
    const merged: KubeObject = {
      ...next,
      apiVersion: current.apiVersion,
      kind: current.kind,
      metadata: { ...next.metadata, ...identity },
    };
    // Only a DELETE marks an object as being deleted, and nothing unmarks it.
    delete merged.metadata.deletionTimestamp;
    if (current.metadata.deletionTimestamp)
      merged.metadata.deletionTimestamp = current.metadata.deletionTimestamp;
    if (type.subresources.includes('status')) merged.status = clone(current.status);
    if (merged.status === undefined) delete merged.status;
    if (JSON.stringify(specOf(merged)) !== JSON.stringify(specOf(current)))
      merged.metadata.generation = identity.generation + 1;
    return merged;
  }

  delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    options: DeleteOptions = {},
  ): KubeObject {
    const key = this.key(type, namespace, name);
    const current = this.objects.get(key);
    if (!current) throw notFound(type, name);
    const pre = options.preconditions ?? {};
    if (
      (pre.uid && pre.uid !== current.metadata.uid) ||
      (pre.resourceVersion && pre.resourceVersion !== current.metadata.resourceVersion)
    )
      throw new KubeError(
        'Conflict',
        `Operation cannot be fulfilled on ${type.plural} "${name}": precondition failed: ${JSON.stringify(pre)}`,
      );
    this.writes.delete++;
    // Finalizers hold the object, marked as being deleted, until its controllers have emptied them.
    if (current.metadata.finalizers?.length) {
      if (current.metadata.deletionTimestamp) return this.shaped(type, current);
      const marked = {
        ...clone(current),
        metadata: { ...clone(current.metadata), deletionTimestamp: timestamp() },
      };
      return this.commit(type, key, marked, 'MODIFIED');
    }
    return this.remove(type, key, current, options.propagationPolicy === 'Orphan');
  }

  /** The object gone for good: a DELETED event, then its dependents (or their owner references). */
  private remove(type: ResourceType, key: string, current: KubeObject, orphan: boolean): KubeObject {
    const gone = {
      ...clone(current),
      metadata: {
        ...clone(current.metadata),
        deletionTimestamp: current.metadata.deletionTimestamp ?? timestamp(),
      },
    };
    const deleted = this.commit(type, key, gone, 'DELETED');
    if (type.plural === 'customresourcedefinitions') this.dropCrd(current);
    this.collect(current.metadata.uid, orphan);
    return deleted;
  }

  /** ownerReference garbage collection: dependents whose owners are all gone are deleted. */
  private collect(uid: string, orphan: boolean): void {
    for (const [key, object] of [...this.objects]) {
      const refs = object.metadata.ownerReferences ?? [];
      if (!refs.some((r) => r.uid === uid)) continue;
      const type = this.typeOfKey(key);
      if (!type) continue;
      const left = refs.filter((r) => r.uid !== uid);
      const ns = object.metadata.namespace;
      if (orphan || left.some((r) => this.uidExists(r.uid)))
        this.patch(type, ns, object.metadata.name, 'merge', { metadata: { ownerReferences: left } });
      else if (this.objects.has(key)) this.delete(type, ns, object.metadata.name);
    }
  }

  private uidExists(uid: string): boolean {
    for (const object of this.objects.values()) if (object.metadata.uid === uid) return true;
    return false;
  }

  private typeOfKey(key: string): ResourceType | undefined {
    const kindKey = key.slice(0, key.indexOf('/'));
    return this.allTypes().find((t) => typeKey(t) === kindKey);
  }

  private dropCrd(crd: KubeObject): void {
    for (const t of typesOfCrd(crd)) {
      for (const object of this.list({ type: t, namespace: undefined, selector: () => true }))
        if (this.objects.has(this.key(t, object.metadata.namespace, object.metadata.name)))
          this.delete(t, object.metadata.namespace, object.metadata.name);
      this.types.delete(`${groupVersionOf(t)}/${t.plural}`);
    }
  }

  /**
   * Streams changes after `fromRv` to `send` (a resourceVersion older than the kept history throws
   * 410 Gone); with no `fromRv` ("" or "0"), the current objects come first as ADDED.
   */
  watch(filter: WatchFilter, fromRv: string | null, send: (event: StoredEvent) => void): () => void {
    const start = fromRv ? Number(fromRv) : 0;
    if (!Number.isInteger(start) || start < 0)
      throw new KubeError('BadRequest', `invalid resourceVersion ${fromRv}`);
    if (start === 0) {
      for (const object of this.list(filter))
        send({
          type: 'ADDED',
          object,
          rv: Number(object.metadata.resourceVersion),
          typeKey: typeKey(filter.type),
        });
    }
    return this.changes.follow(filter, start, this.revision, send);
  }

  /** Forgets the change history (as an etcd compaction): watches from an older resourceVersion get 410. */
  compact(): void {
    this.changes.compact();
  }

  /** Changes kept for watches to resume from; older resourceVersions get 410 Gone. */
  set historyLimit(limit: number) {
    this.changes.limit = limit;
  }

  /** Adds an object as `type`'s version shows it (for the server's answers). */
  shape(type: ResourceType, object: KubeObject): KubeObject {
    return this.shaped(type, object);
  }
}

function specOf(object: KubeObject): unknown {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = object;
  return rest;
}

export function notFound(type: ResourceType, name: string): KubeError {
  return new KubeError('NotFound', `${kindName(type)} "${name}" not found`, {
    name,
    group: type.group,
    kind: type.plural,
  });
}

/** How kube-apiserver names a kind in messages: `pods`, `leases.coordination.k8s.io`. */
export const kindName = (type: ResourceType): string =>
  type.group ? `${type.plural}.${type.group}` : type.plural;
