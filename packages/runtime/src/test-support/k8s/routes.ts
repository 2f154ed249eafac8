// Which kind, namespace, name and subresource a request path names:
// /api/v1[/namespaces/<ns>]/<plural>[/<name>[/<sub>]] and /apis/<group>/<version>/… the same way.
import { KubeError } from './objects.js';
import { type ResourceType } from './resource-types.js';

export interface ResourcePath {
  type: ResourceType;
  /** Set for namespaced kinds addressed within a namespace. */
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
}

export type TypeLookup = (groupVersion: string, plural: string) => ResourceType | undefined;

/** Splits `/api/v1/…` or `/apis/<g>/<v>/…` into its group/version and the segments after it. */
export function splitApiPath(pathname: string): { groupVersion: string; rest: string[] } | undefined {
  const parts = pathname
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
  if (parts[0] === 'api' && parts[1]) return { groupVersion: parts[1], rest: parts.slice(2) };
  if (parts[0] === 'apis' && parts[1] && parts[2])
    return { groupVersion: `${parts[1]}/${parts[2]}`, rest: parts.slice(3) };
  return undefined;
}

function unknownType(groupVersion: string, plural: string): KubeError {
  return new KubeError(
    'NotFound',
    `the server could not find the requested resource (${plural} in ${groupVersion})`,
  );
}

/** The resource a path names; throws 404 for kinds the server does not serve. */
export function resolvePath(groupVersion: string, rest: string[], lookup: TypeLookup): ResourcePath {
  const [first, second, third, ...tail] = rest;
  if (first === 'namespaces' && second && third) {
    const namespaced = lookup(groupVersion, third);
    if (namespaced?.namespaced) {
      if (tail.length > 2) throw new KubeError('NotFound', `no such path under ${third}`);
      return { type: namespaced, namespace: second, name: tail[0], subresource: tail[1] };
    }
  }
  if (!first) throw new KubeError('NotFound', 'no resource named');
  const type = lookup(groupVersion, first);
  if (!type) throw unknownType(groupVersion, first);
  if (third !== undefined && tail.length > 0) throw new KubeError('NotFound', `no such path under ${first}`);
  if (type.namespaced && second !== undefined)
    throw new KubeError('NotFound', `${first} is namespaced: use /namespaces/<namespace>/${first}/${second}`);
  return { type, namespace: undefined, name: second, subresource: third };
}
