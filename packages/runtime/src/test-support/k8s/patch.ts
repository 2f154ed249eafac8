// PATCH bodies the test API server accepts: JSON merge patch (RFC 7386; strategic merge patch is
// applied as one, which is what it is for everything but keyed lists) and JSON patch (RFC 6902).
import { KubeError, clone, isRecord } from './objects.js';

export type PatchType = 'merge' | 'json';

const PATCH_TYPES: Record<string, PatchType> = {
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'merge',
  'application/json-patch+json': 'json',
};

export function patchTypeOf(contentType: string | undefined): PatchType {
  const type = PATCH_TYPES[(contentType ?? '').split(';')[0]?.trim() ?? ''];
  if (!type)
    throw new KubeError(
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: ${Object.keys(PATCH_TYPES).join(', ')}`,
    );
  return type;
}

/** RFC 7386: objects merge key by key, null deletes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isRecord(patch)) return clone(patch);
  const out: Record<string, unknown> = isRecord(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

function pointer(path: unknown): string[] {
  if (typeof path !== 'string' || (path !== '' && !path.startsWith('/')))
    throw new KubeError('BadRequest', `json patch: path ${JSON.stringify(path)} is not a JSON pointer`);
  return path === ''
    ? []
    : path
        .slice(1)
        .split('/')
        .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

type Container = Record<string, unknown> | unknown[];

function parentOf(doc: unknown, parts: string[]): { parent: Container; key: string } {
  let node = doc;
  for (const part of parts.slice(0, -1)) {
    node = Array.isArray(node) ? node[Number(part)] : isRecord(node) ? node[part] : undefined;
    if (!isRecord(node) && !Array.isArray(node))
      throw new KubeError('Invalid', `json patch: path /${parts.join('/')} does not exist`);
  }
  if (parts.length === 0) throw new KubeError('Invalid', 'json patch: the root cannot be patched');
  return { parent: node as Container, key: parts[parts.length - 1] as string };
}

function read(doc: unknown, parts: string[]): unknown {
  let node = doc;
  for (const part of parts)
    node = Array.isArray(node) ? node[Number(part)] : isRecord(node) ? node[part] : undefined;
  return node;
}

function remove(doc: unknown, parts: string[]): unknown {
  const { parent, key } = parentOf(doc, parts);
  if (Array.isArray(parent)) return parent.splice(Number(key), 1)[0];
  if (!(key in parent))
    throw new KubeError('Invalid', `json patch: cannot remove /${parts.join('/')}: absent`);
  const value = parent[key];
  delete parent[key];
  return value;
}

function add(doc: unknown, parts: string[], value: unknown, replace: boolean): void {
  const { parent, key } = parentOf(doc, parts);
  if (!Array.isArray(parent)) {
    if (replace && !(key in parent))
      throw new KubeError('Invalid', `json patch: cannot replace /${parts.join('/')}: absent`);
    parent[key] = clone(value);
    return;
  }
  const index = key === '-' ? parent.length : Number(key);
  if (!Number.isInteger(index) || index < 0 || index > parent.length)
    throw new KubeError('Invalid', `json patch: index ${key} out of range`);
  parent.splice(index, replace ? 1 : 0, clone(value));
}

function applyOperation(doc: unknown, op: unknown): void {
  if (!isRecord(op)) throw new KubeError('BadRequest', 'json patch: each operation must be an object');
  const parts = pointer(op.path);
  switch (op.op) {
    case 'add':
      return add(doc, parts, op.value, false);
    case 'replace':
      return add(doc, parts, op.value, true);
    case 'remove':
      remove(doc, parts);
      return;
    case 'test':
      if (JSON.stringify(read(doc, parts)) !== JSON.stringify(op.value))
        throw new KubeError(
          'Invalid',
          `the server rejected our request due to an error in our request: test failed at ${String(op.path)}`,
        );
      return;
    case 'move':
      return add(doc, parts, remove(doc, pointer(op.from)), false);
    case 'copy':
      return add(doc, parts, read(doc, pointer(op.from)), false);
    default:
      throw new KubeError('BadRequest', `json patch: unknown op ${JSON.stringify(op.op)}`);
  }
}

/** RFC 6902 on a copy of `target`; a failed `test` leaves nothing changed. */
export function jsonPatch(target: unknown, operations: unknown): unknown {
  if (!Array.isArray(operations))
    throw new KubeError('BadRequest', 'json patch: the body must be an array of operations');
  const doc = clone(target);
  for (const op of operations) applyOperation(doc, op);
  return doc;
}
