// Label and field selectors as kube-apiserver parses them (`a=b,c!=d,e in (x,y),!f`).
import { KubeError, type KubeObject, isRecord } from './objects.js';

type Requirement =
  | { key: string; op: 'eq' | 'ne'; value: string }
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | 'absent' };

/** Splits on commas outside parentheses. */
function terms(selector: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of selector) {
    if (char === '(') depth++;
    if (char === ')') depth--;
    if (char === ',' && depth === 0) {
      out.push(current);
      current = '';
    } else current += char;
  }
  out.push(current);
  return out.map((t) => t.trim()).filter((t) => t !== '');
}

function parseTerm(term: string): Requirement {
  const set = /^([^\s!=]+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term);
  if (set) {
    const values = (set[3] as string).split(',').map((v) => v.trim());
    return { key: set[1] as string, op: set[2] as 'in' | 'notin', values };
  }
  const compare = /^([^\s!=]+)\s*(==|=|!=)\s*([^\s,]*)$/.exec(term);
  if (compare) {
    const op = compare[2] === '!=' ? 'ne' : 'eq';
    return { key: compare[1] as string, op, value: compare[3] as string };
  }
  const exists = /^(!?)([^\s!=(),]+)$/.exec(term);
  if (exists) return { key: exists[2] as string, op: exists[1] ? 'absent' : 'exists' };
  throw new KubeError('BadRequest', `unable to parse requirement: "${term}"`);
}

function matches(requirement: Requirement, value: string | undefined): boolean {
  switch (requirement.op) {
    case 'eq':
      return value === requirement.value;
    case 'ne':
      return value !== requirement.value;
    case 'in':
      return value !== undefined && requirement.values.includes(value);
    case 'notin':
      return value === undefined || !requirement.values.includes(value);
    case 'exists':
      return value !== undefined;
    case 'absent':
      return value === undefined;
  }
}

export type Selector = (object: KubeObject) => boolean;

/** A label selector; an empty or absent one matches everything. */
export function labelSelector(text: string | null): Selector {
  const requirements = terms(text ?? '').map(parseTerm);
  return (object) => requirements.every((r) => matches(r, object.metadata.labels?.[r.key]));
}

/** The value at a dotted path (`spec.nodeName`), as a string when it is a scalar. */
function fieldValue(object: KubeObject, path: string): string | undefined {
  let value: unknown = object;
  for (const part of path.split('.')) value = isRecord(value) ? value[part] : undefined;
  return value === undefined || value === null || isRecord(value) ? undefined : String(value);
}

/** A field selector (`spec.nodeName=n1,status.phase!=Failed`): only =, == and != are allowed. */
export function fieldSelector(text: string | null): Selector {
  const requirements = terms(text ?? '').map(parseTerm);
  for (const r of requirements)
    if (r.op !== 'eq' && r.op !== 'ne')
      throw new KubeError(
        'BadRequest',
        `invalid field selector: "${r.key}": only =, == and != are supported`,
      );
  return (object) =>
    requirements.every((r) => matches(r, fieldValue(object, r.key) ?? (r.op === 'eq' ? undefined : '')));
}
