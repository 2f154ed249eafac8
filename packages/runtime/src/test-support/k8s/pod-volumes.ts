// The test kubelet's volumes: a pod's persistentVolumeClaim mount becomes the sandbox's session
// storage, a folder of the node kept per PVC uid (so a pod recreated on the same claim finds what
// the last one wrote, and a new claim of the same name starts empty), mounted at the container's
// mountPath by the node's backend (bwrap: a sized volume when the node runs as root). The claim must
// exist: until it does, the pod waits with a FailedMount event, as a real kubelet's does.
import { type CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { type SessionTarget } from '../../sessions/backend.js';

export interface PodStorage {
  /** The claim's uid: the node keeps its folder under it. */
  claimUid: string;
  mountPath: string;
}

export class VolumeError extends Error {
  override name = 'VolumeError';
}

/** The pod's one mounted persistentVolumeClaim (none: undefined); several, or none served here: VolumeError. */
function claimMount(pod: V1Pod): { claimName: string; mountPath: string } | undefined {
  const volumes = new Map((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
  const mounts = (pod.spec?.containers[0]?.volumeMounts ?? []).flatMap((m) => {
    const claimName = volumes.get(m.name)?.persistentVolumeClaim?.claimName;
    if (!volumes.has(m.name)) throw new VolumeError(`volumeMount ${m.name} names no volume of the pod`);
    return claimName ? [{ claimName, mountPath: m.mountPath }] : [];
  });
  if (mounts.length > 1) throw new VolumeError('the test kubelet mounts one persistentVolumeClaim per pod');
  return mounts[0];
}

/**
 * The pod's storage once its claim exists (checked every 250 ms until `deadline`, or while `alive`),
 * with one FailedMount event while it does not; none when the pod mounts no claim.
 */
export async function podStorage(
  core: CoreV1Api,
  pod: V1Pod,
  options: { deadline: number; alive: () => boolean; warn: (message: string) => Promise<unknown> },
): Promise<PodStorage | undefined> {
  const mount = claimMount(pod);
  if (!mount) return undefined;
  const namespace = pod.metadata?.namespace ?? 'default';
  for (let warned = false; ; warned = true) {
    const claim = await core
      .readNamespacedPersistentVolumeClaim({ name: mount.claimName, namespace })
      .catch(() => undefined);
    if (claim?.metadata?.uid) return { claimUid: claim.metadata.uid, mountPath: mount.mountPath };
    const message = `persistentvolumeclaim "${mount.claimName}" not found`;
    if (!warned) await options.warn(message);
    if (Date.now() > options.deadline || !options.alive()) throw new VolumeError(message);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The node's target for a pod: its storage as the version's sessionStorage at the claim's mountPath. */
export function targetWith(target: SessionTarget, storage: PodStorage | undefined): SessionTarget {
  if (!storage) return target;
  const filesystemConfigurations = [{ sessionStorage: { mountPath: storage.mountPath } }];
  return {
    ...target,
    version: { ...target.version, config: { ...target.version.config, filesystemConfigurations } },
  } as SessionTarget;
}
