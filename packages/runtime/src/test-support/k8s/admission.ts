// What the test API server checks and fills in before it stores a write, as kube-apiserver's
// admission and validation do: a Pod's defaults, a schema's validation, ResourceQuota counts.
import { KubeError, type KubeObject, isRecord } from './objects.js';
import { type ResourceType } from './resource-types.js';
import { validateAgainstSchema } from './schema.js';

/** A new Pod: containers with a name and an image required, `restartPolicy` and status defaulted. */
export function defaultPod(pod: KubeObject): void {
  const spec = pod.spec as { containers?: unknown; restartPolicy?: string } | undefined;
  if (!isRecord(spec) || !Array.isArray(spec.containers) || spec.containers.length === 0)
    throw new KubeError('Invalid', `Pod "${pod.metadata.name}" is invalid: spec.containers: Required value`);
  for (const [i, c] of (spec.containers as unknown[]).entries())
    if (!isRecord(c) || typeof c.name !== 'string' || typeof c.image !== 'string' || c.image === '')
      throw new KubeError(
        'Invalid',
        `Pod "${pod.metadata.name}" is invalid: spec.containers[${i}]: name and image are required`,
      );
  spec.restartPolicy ??= 'Always';
  pod.status = { phase: 'Pending', qosClass: 'BestEffort' };
}

/** The object against its type's schema (a CRD's openAPIV3Schema): 422 Invalid naming each field. */
export function validateObject(type: ResourceType, object: KubeObject): void {
  if (!type.schema) return;
  const errors = validateAgainstSchema(type.schema, object as unknown as Record<string, unknown>);
  if (errors.length > 0)
    throw new KubeError(
      'Invalid',
      `${type.kind}.${type.group} "${object.metadata.name}" is invalid: ${errors.join(', ')}`,
      {
        name: object.metadata.name,
        group: type.group,
        kind: type.kind,
        causes: errors.map((message) => ({
          reason: 'FieldValueInvalid',
          message,
          field: message.split(':')[0],
        })),
      },
    );
}

/**
 * ResourceQuota `pods`, `count/<plural>[.<group>]` and `persistentvolumeclaims` hard limits of the
 * namespace's `quotas` for one more object of `type`; `used` counts the namespace's objects of it.
 */
export function checkQuota(type: ResourceType, quotas: KubeObject[], used: () => number): void {
  const names = [`count/${type.plural}${type.group ? `.${type.group}` : ''}`];
  if (!type.group && (type.plural === 'pods' || type.plural === 'persistentvolumeclaims'))
    names.push(type.plural);
  for (const quota of quotas) {
    const hard = (quota.spec as { hard?: Record<string, string> } | undefined)?.hard ?? {};
    for (const name of names) {
      if (hard[name] === undefined) continue;
      const count = used();
      if (count + 1 > Number(hard[name]))
        throw new KubeError(
          'Forbidden',
          `${type.plural} is forbidden: exceeded quota: ${quota.metadata.name}, requested: ${name}=1, used: ${name}=${count}, limited: ${name}=${hard[name]}`,
          { kind: type.plural },
        );
    }
  }
}
