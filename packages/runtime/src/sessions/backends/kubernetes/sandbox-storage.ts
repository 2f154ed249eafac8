// Agent-sandbox mode's session storage beside its claims: the PVC the controller made from a claim's
// volumeClaimTemplate is kept across the session's stops, and reset when the session starts on
// another version (the Lease holder's storage reaper deletes what no kept version needs).
import { type CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { type SessionTarget, sessionStorageMount } from '../../backend.js';
import { apiFailure, statusOf } from './kube-client.js';
import { LABELS } from './pod-spec.js';
import { claimName, sandboxStorageName } from './sandbox-spec.js';
import { touchStorage } from './storage-reaper.js';

/**
 * Session storage outlives a stop while the version lives (as on the local backends and in pods
 * mode): the PVC the controller made for the claim is let go of its sandbox before the claim is
 * deleted, so the garbage collector leaves it. It keeps the controller's tracking label
 * (sandbox-name-hash), by which the session's next claim — the same name, so the same sandbox —
 * adopts it again (sandbox_controller.go reconcilePVCs).
 */
export async function keepStorage(
  core: CoreV1Api,
  namespace: string,
  name: string,
  writes: { value: number },
) {
  writes.value++;
  const body = { metadata: { ownerReferences: null } };
  const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  await core
    .patchNamespacedPersistentVolumeClaim({ name, namespace, body }, merge)
    .catch((error: unknown) => {
      if (statusOf(error) !== 404) throw apiFailure(`keeping PersistentVolumeClaim ${name}`, error);
    });
}

/** How long a start waits for an older version's storage to be deleted. */
const RESET_WAIT_MS = 30_000;

/**
 * A session's first start on another version gets empty storage (the hosted service resets it on
 * a version update): the PVC its claim of the older version left (unowned since that stop) is
 * deleted, and gone, before the new claim is made — else the controller would adopt it back. The
 * session's PVC of this version is noted as used (the storage reaper's idle expiry).
 */
export async function resetStorage(
  core: CoreV1Api,
  namespace: string,
  request: { target: SessionTarget; sessionId: string },
  writes: { value: number },
) {
  const { target, sessionId } = request;
  if (!sessionStorageMount(target)) return;
  const name = sandboxStorageName(claimName(target.runtime.id, sessionId));
  const read = () =>
    core.readNamespacedPersistentVolumeClaim({ name, namespace }).catch((error: unknown) => {
      if (statusOf(error) !== 404) throw apiFailure(`reading PersistentVolumeClaim ${name}`, error);
    });
  const pvc = await read();
  const { uid, ownerReferences, labels } = pvc?.metadata ?? {};
  if (!pvc || ownerReferences?.length) return;
  if (labels?.[LABELS.version] === String(target.version.version))
    return touchStorage(core, namespace, name, writes); // the session's storage, used again
  writes.value++;
  await core
    .deleteNamespacedPersistentVolumeClaim({ name, namespace, body: { preconditions: { uid } } })
    .catch((error: unknown) => {
      if (statusOf(error) !== 404 && statusOf(error) !== 409)
        throw apiFailure(`deleting PersistentVolumeClaim ${name}`, error);
    });
  for (const until = Date.now() + RESET_WAIT_MS; (await read())?.metadata?.uid === uid;) {
    if (Date.now() > until)
      throw new Error(`PersistentVolumeClaim ${name} of an older version is still being deleted`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
