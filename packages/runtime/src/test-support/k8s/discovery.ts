// Discovery documents (/version, /api, /api/v1, /apis, /apis/<group>[/<version>]) in the
// unaggregated form, which kubectl and client-node fall back to when aggregated discovery is absent.
import { type ResourceType, VERBS, groupVersionOf } from './resource-types.js';

export const SERVER_VERSION = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.0-agentrt-test',
  platform: 'linux/amd64',
};

export function coreVersions(address: string): Record<string, unknown> {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: address }],
  };
}

function groupEntry(group: string, versions: string[]): Record<string, unknown> {
  const list = versions.map((version) => ({ groupVersion: `${group}/${version}`, version }));
  return { name: group, versions: list, preferredVersion: list[0] };
}

function versionsByGroup(types: ResourceType[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const t of types) {
    if (!t.group) continue;
    const versions = groups.get(t.group) ?? [];
    if (!versions.includes(t.version)) versions.push(t.version);
    groups.set(t.group, versions);
  }
  return groups;
}

export function groupList(types: ResourceType[]): Record<string, unknown> {
  const groups = [...versionsByGroup(types)].map(([group, versions]) => groupEntry(group, versions));
  return { kind: 'APIGroupList', apiVersion: 'v1', groups };
}

export function apiGroup(types: ResourceType[], group: string): Record<string, unknown> | undefined {
  const versions = versionsByGroup(types).get(group);
  return versions ? { kind: 'APIGroup', apiVersion: 'v1', ...groupEntry(group, versions) } : undefined;
}

function resourceEntries(t: ResourceType): Record<string, unknown>[] {
  const main = {
    name: t.plural,
    singularName: t.singular,
    namespaced: t.namespaced,
    kind: t.kind,
    verbs: VERBS,
    ...(t.shortNames ? { shortNames: t.shortNames } : {}),
  };
  const subs = t.subresources.map((sub) => ({
    name: `${t.plural}/${sub}`,
    singularName: '',
    namespaced: t.namespaced,
    kind: sub === 'scale' ? 'Scale' : sub === 'exec' ? 'PodExecOptions' : sub === 'log' ? 'Pod' : t.kind,
    verbs: sub === 'exec' ? ['create', 'get'] : sub === 'log' ? ['get'] : ['get', 'patch', 'update'],
  }));
  return [main, ...subs];
}

export function resourceList(
  types: ResourceType[],
  groupVersion: string,
): Record<string, unknown> | undefined {
  const served = types.filter((t) => groupVersionOf(t) === groupVersion);
  if (served.length === 0) return undefined;
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion,
    resources: served.flatMap(resourceEntries),
  };
}
