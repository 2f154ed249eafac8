// The kinds the test API server serves: the built-in ones agentrt and kubectl use, and those a
// CustomResourceDefinition adds once it is created (from its real YAML).
import { KubeError, type KubeObject, isRecord } from './objects.js';

export interface ResourceType {
  /** '' for the core group. */
  group: string;
  version: string;
  plural: string;
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  /** `status` and `scale` take their own writes; `log` and `exec` are a pod's, served by the kubelet. */
  subresources: string[];
  /** A CRD version's openAPIV3Schema, checked on every write. */
  schema?: unknown;
}

export const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export const groupVersionOf = (t: Pick<ResourceType, 'group' | 'version'>): string =>
  t.group ? `${t.group}/${t.version}` : t.version;

export const typeKey = (t: Pick<ResourceType, 'group' | 'plural'>): string => `${t.plural}.${t.group}`;

function builtin(
  groupVersion: string,
  kind: string,
  plural: string,
  namespaced: boolean,
  extra: Partial<ResourceType> = {},
): ResourceType {
  const [group, version] = groupVersion.includes('/') ? groupVersion.split('/') : ['', groupVersion];
  return {
    group: group as string,
    version: version as string,
    kind,
    plural,
    singular: kind.toLowerCase(),
    namespaced,
    subresources: [],
    ...extra,
  };
}

/** What a fresh server serves before any CRD is created. */
export function builtinTypes(): ResourceType[] {
  return [
    builtin('v1', 'Namespace', 'namespaces', false, { shortNames: ['ns'], subresources: ['status'] }),
    builtin('v1', 'Pod', 'pods', true, { shortNames: ['po'], subresources: ['status', 'log', 'exec'] }),
    builtin('v1', 'Event', 'events', true, { shortNames: ['ev'] }),
    builtin('v1', 'PersistentVolumeClaim', 'persistentvolumeclaims', true, {
      shortNames: ['pvc'],
      subresources: ['status'],
    }),
    builtin('v1', 'Service', 'services', true, { shortNames: ['svc'], subresources: ['status'] }),
    builtin('v1', 'ConfigMap', 'configmaps', true, { shortNames: ['cm'] }),
    builtin('v1', 'Secret', 'secrets', true),
    builtin('v1', 'ServiceAccount', 'serviceaccounts', true, { shortNames: ['sa'] }),
    builtin('v1', 'ResourceQuota', 'resourcequotas', true, {
      shortNames: ['quota'],
      subresources: ['status'],
    }),
    builtin('networking.k8s.io/v1', 'NetworkPolicy', 'networkpolicies', true, { shortNames: ['netpol'] }),
    builtin('coordination.k8s.io/v1', 'Lease', 'leases', true),
    builtin('apps/v1', 'Deployment', 'deployments', true, {
      shortNames: ['deploy'],
      subresources: ['status', 'scale'],
    }),
    builtin('policy/v1', 'PodDisruptionBudget', 'poddisruptionbudgets', true, {
      shortNames: ['pdb'],
      subresources: ['status'],
    }),
    builtin('rbac.authorization.k8s.io/v1', 'Role', 'roles', true),
    builtin('rbac.authorization.k8s.io/v1', 'RoleBinding', 'rolebindings', true),
    builtin('rbac.authorization.k8s.io/v1', 'ClusterRole', 'clusterroles', false),
    builtin('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', 'clusterrolebindings', false),
    builtin('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'customresourcedefinitions', false, {
      shortNames: ['crd', 'crds'],
      subresources: ['status'],
    }),
  ];
}

function field<T>(value: unknown, path: string, check: (v: unknown) => v is T): T {
  let node = value;
  for (const part of path.split('.')) node = isRecord(node) ? node[part] : undefined;
  if (!check(node))
    throw new KubeError('Invalid', `CustomResourceDefinition spec: ${path} is required and must be valid`);
  return node;
}

const isString = (v: unknown): v is string => typeof v === 'string' && v !== '';
const isArray = (v: unknown): v is unknown[] => Array.isArray(v);

/** The served versions of a CRD as resource types (v1 CRDs only). */
export function typesOfCrd(crd: KubeObject): ResourceType[] {
  const group = field(crd, 'spec.group', isString);
  const plural = field(crd, 'spec.names.plural', isString);
  const kind = field(crd, 'spec.names.kind', isString);
  const scope = field(crd, 'spec.scope', isString);
  if (crd.metadata.name !== `${plural}.${group}`)
    throw new KubeError(
      'Invalid',
      `CustomResourceDefinition metadata.name must be spec.names.plural+"."+spec.group (${plural}.${group})`,
    );
  const names = (crd.spec as { names: { singular?: string; shortNames?: string[] } }).names;
  return field(crd, 'spec.versions', isArray)
    .filter((v) => isRecord(v) && v.served !== false)
    .map((v) => {
      const version = v as {
        name: string;
        subresources?: Record<string, unknown>;
        schema?: { openAPIV3Schema?: unknown };
      };
      return {
        group,
        version: version.name,
        plural,
        singular: names.singular ?? kind.toLowerCase(),
        kind,
        namespaced: scope === 'Namespaced',
        ...(names.shortNames ? { shortNames: names.shortNames } : {}),
        subresources: Object.keys(version.subresources ?? {}),
        schema: version.schema?.openAPIV3Schema,
      };
    });
}
