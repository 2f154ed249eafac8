import { createHash } from 'node:crypto';
import { type KubernetesObject } from '@kubernetes/client-node';
import { labelValue } from '../../sessions/backends/kubernetes/pod-spec.js';
import { type Kind } from '../store.js';

/**
 * How each record kind lives in the cluster: runtimes, versions and endpoints as agentrt.dev/v1
 * custom resources (deploy/k8s/crds); tags, idempotency records and online evaluation rules as
 * ConfigMaps.
 */
export const RESOURCES = {
  runtime: { group: 'agentrt.dev', version: 'v1', plural: 'agentruntimes', kind: 'AgentRuntime' },
  version: {
    group: 'agentrt.dev',
    version: 'v1',
    plural: 'agentruntimeversions',
    kind: 'AgentRuntimeVersion',
  },
  endpoint: {
    group: 'agentrt.dev',
    version: 'v1',
    plural: 'agentruntimeendpoints',
    kind: 'AgentRuntimeEndpoint',
  },
  tags: { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' },
  idempotency: { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' },
  onlineEvaluation: { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' },
} as const satisfies Record<Kind, { group: string; version: string; plural: string; kind: string }>;

export const STORE_LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  /** The record kind of an object of the control store (`runtime`, `tags`, …). */
  record: 'agentrt.dev/record',
  runtime: 'agentrt.dev/runtime',
} as const;
const ANNOTATIONS = {
  id: 'agentrt.dev/id',
  parent: 'agentrt.dev/parent',
  order: 'agentrt.dev/order',
} as const;

/** One record as the store keeps it in memory, with the object it is stored as. */
export interface Entry {
  kind: Kind;
  id: string;
  parent: string;
  ord: number;
  doc: unknown;
  name: string;
  resourceVersion: string;
}

interface Stored extends KubernetesObject {
  spec?: Record<string, unknown>;
  status?: { status?: string; failureReason?: string };
  data?: Record<string, string>;
}

const hash = (text: string, chars: number) => createHash('sha256').update(text).digest('hex').slice(0, chars);

/** A readable DNS-1123 prefix of `hint`. */
function dnsPart(hint: string): string {
  const part = hint
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 40)
    .replace(/^-+|-+$/g, '');
  return part || 'r';
}

/** The ConfigMap name prefix of each record kind stored as one. */
const CONFIG_MAP_PREFIX: Partial<Record<Kind, string>> = {
  tags: 'agentrt-tags',
  idempotency: 'agentrt-idem',
  onlineEvaluation: 'agentrt-online-eval',
};

/**
 * The object name of a record. A runtime's is its *name*'s (unique among runtimes), so two replicas
 * creating the same name at once collide in the API server (409) instead of making two.
 */
export function objectName(kind: Kind, id: string, doc: unknown): string {
  if (kind === 'runtime') {
    const name = (doc as { name: string }).name;
    return `${dnsPart(name)}-${hash(`runtime\u0000${name}`, 12)}`;
  }
  const prefix = CONFIG_MAP_PREFIX[kind] ?? id.split('#')[0]!;
  return `${dnsPart(prefix)}-${hash(`${kind}\u0000${id}`, 16)}`;
}

/** The object a record is stored as. */
export function toObject(entry: Omit<Entry, 'name' | 'resourceVersion'>, namespace: string): Stored {
  const { kind, id, parent, ord, doc } = entry;
  const resource = RESOURCES[kind];
  const metadata = {
    name: objectName(kind, id, doc),
    namespace,
    labels: {
      [STORE_LABELS.managedBy]: 'agentrt',
      [STORE_LABELS.record]: kind,
      [STORE_LABELS.runtime]: labelValue(parent || id),
    },
    annotations: { [ANNOTATIONS.id]: id, [ANNOTATIONS.parent]: parent, [ANNOTATIONS.order]: String(ord) },
  };
  const apiVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
  if (resource.kind === 'ConfigMap')
    return { apiVersion, kind: resource.kind, metadata, data: { doc: JSON.stringify(doc) } };
  const { status, failureReason, ...spec } = doc as Record<string, unknown>;
  return {
    apiVersion,
    kind: resource.kind,
    metadata,
    spec,
    status: {
      status: status as string,
      ...(failureReason !== undefined ? { failureReason: failureReason as string } : {}),
    },
  };
}

/** The record an object holds, or undefined for an object that is not one of the store's. */
export function fromObject(kind: Kind, object: Stored): Entry | undefined {
  const annotations = object.metadata?.annotations ?? {};
  const id = annotations[ANNOTATIONS.id];
  if (id === undefined || object.metadata?.labels?.[STORE_LABELS.record] !== kind) return undefined;
  let doc: unknown;
  if (RESOURCES[kind].kind === 'ConfigMap') doc = JSON.parse(object.data?.doc ?? 'null') as unknown;
  else {
    const { status, failureReason } = object.status ?? {};
    doc = { ...object.spec, status, ...(failureReason !== undefined ? { failureReason } : {}) };
  }
  return {
    kind,
    id,
    parent: annotations[ANNOTATIONS.parent] ?? '',
    ord: Number(annotations[ANNOTATIONS.order] ?? 0),
    doc,
    name: object.metadata?.name ?? '',
    resourceVersion: object.metadata?.resourceVersion ?? '',
  };
}

/** Whether resourceVersion `a` is newer than `b` (numbers in practice; opaque strings compare unequal). */
export function newer(a: string, b: string): boolean {
  if (/^\d+$/.test(a) && /^\d+$/.test(b)) return BigInt(a) > BigInt(b);
  return a !== b;
}
