// Session storage lives as long as its session id and version may be served (as the hosted service
// keeps it: across stops, reset by a version update, gone with the runtime). A shared job (the
// Lease holder's) deletes, every pass, each session-storage PVC of a runtime this installation has
// whose version is no longer kept (not the runtime's latest, served or targeted by no endpoint), or
// that went unused (its session not started on its version) for AGENTRT_SESSION_STORAGE_IDLE_S,
// unless a live pod still mounts it (its session ends first) or a sandbox owns it (it goes with it).
// A runtime it does not have may be another installation's in the same namespace: its PVCs are
// left alone, and a runtime's own go when it is deleted (`deleteRuntimeStorage`).
import {
  type CoreV1Api,
  PatchStrategy,
  type V1PersistentVolumeClaim,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { parseRuntimeArn } from '../../../control/arn.js';
import { type Logger } from '../../../logger.js';
import { type SharedJob, type SharedJobInput } from '../../backend.js';
import { apiFailure, statusOf } from './kube-client.js';
import { periodicJob } from '../../periodic-job.js';
import { type PodCache } from './pod-cache.js';
import { ANNOTATIONS, LABELS, MANAGED_BY, labelValue } from './pod-spec.js';

export interface StorageReaperOptions {
  core: CoreV1Api;
  namespace: string;
  /** Every pod of the namespace agentrt knows (session pods, sandbox pods). */
  pods: PodCache;
  storedVersions: NonNullable<SharedJobInput['storedVersions']>;
  /** How long a claim may go unused (its session not started on its version) before it goes. */
  idleMs: number;
  intervalMs: number;
  logger: Logger;
  writes: { value: number };
}

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const SELECTOR = `${LABELS.managedBy}=${MANAGED_BY},${LABELS.component}=session-storage`;

/** The PVC names live pods mount. */
function mountedClaims(pods: PodCache): Set<string> {
  const live = pods.all().filter((p) => !['Failed', 'Succeeded'].includes(p.status?.phase ?? ''));
  const volumes = live.flatMap((p) => p.spec?.volumes ?? []);
  return new Set(volumes.flatMap((v) => v.persistentVolumeClaim?.claimName ?? []));
}

/**
 * Whether the claim, of a runtime of this installation's, has outlived its use: its version is not
 * one the runtime keeps, or it went unused for `idleMs`.
 */
function outlived(pvc: V1PersistentVolumeClaim, options: StorageReaperOptions, nowMs: number) {
  const { annotations, labels } = pvc.metadata ?? {};
  const runtimeId = parseRuntimeArn(annotations?.[ANNOTATIONS.runtimeArn] ?? '')?.runtimeId;
  const version = Number(labels?.[LABELS.version]);
  if (!runtimeId || !Number.isInteger(version)) return false; // not one agentrt can place: left alone
  const kept = options.storedVersions(runtimeId);
  if (kept === undefined) return false;
  return !kept.includes(version) || nowMs - usedMsOf(pvc) > options.idleMs;
}

/** The claim's last use as noted on it (else its creation), epoch ms. */
const usedMsOf = (pvc: V1PersistentVolumeClaim) =>
  Number(
    pvc.metadata?.annotations?.[ANNOTATIONS.storageUsedMs] ??
      new Date(pvc.metadata?.creationTimestamp ?? 0).getTime(),
  );

/** Notes a use of the session's claim (its session started on its version): idle time counts from now. */
export async function touchStorage(
  core: CoreV1Api,
  namespace: string,
  name: string,
  writes: { value: number },
) {
  writes.value++;
  const body = { metadata: { annotations: { [ANNOTATIONS.storageUsedMs]: String(Date.now()) } } };
  await core
    .patchNamespacedPersistentVolumeClaim({ name, namespace, body }, merge)
    .catch((error: unknown) => {
      if (statusOf(error) !== 404) throw apiFailure(`noting the use of PersistentVolumeClaim ${name}`, error);
    });
}

/** Deletes every session-storage PVC of a runtime (DeleteAgentRuntime, its sessions stopped). */
async function deleteRuntimeStorage(
  core: CoreV1Api,
  namespace: string,
  runtimeId: string,
  writes: { value: number },
): Promise<void> {
  writes.value++;
  const labelSelector = `${SELECTOR},${LABELS.runtime}=${labelValue(runtimeId)}`;
  await core
    .deleteCollectionNamespacedPersistentVolumeClaim({ namespace, labelSelector })
    .catch((error: unknown) => {
      throw apiFailure(`deleting the PersistentVolumeClaims of runtime ${runtimeId}`, error);
    });
}

export function createStorageReaper(options: StorageReaperOptions): SharedJob {
  const { core, namespace, pods, logger, writes } = options;
  const remove = async (pvc: V1PersistentVolumeClaim) => {
    const { name = '', uid } = pvc.metadata ?? {};
    writes.value++;
    await core
      .deleteNamespacedPersistentVolumeClaim({ name, namespace, body: { preconditions: { uid } } })
      .catch((error: unknown) => {
        if (statusOf(error) !== 404 && statusOf(error) !== 409) throw error;
      });
    logger.info('deleted the storage of a version not kept, or unused too long', { pvc: name });
  };
  const pass = async () => {
    await pods.ready(); // a pod not listed yet would not spare its claim
    const { items } = await core.listNamespacedPersistentVolumeClaim({ namespace, labelSelector: SELECTOR });
    const mounted = mountedClaims(pods);
    // A claim in use is noted as used now and then (a tenth of the bound): idle time starts at its end.
    const stale = items.filter(
      (pvc) => mounted.has(pvc.metadata?.name ?? '') && Date.now() - usedMsOf(pvc) > options.idleMs / 10,
    );
    await Promise.all(stale.map((pvc) => touchStorage(core, namespace, pvc.metadata?.name ?? '', writes)));
    // A claim made a moment ago may be about to be mounted: its pod not made, or not seen yet.
    const bornBefore = Date.now() - Math.max(5_000, 10 * options.intervalMs);
    const doomed = items.filter(
      (pvc) =>
        new Date(pvc.metadata?.creationTimestamp ?? 0).getTime() < bornBefore &&
        !pvc.metadata?.deletionTimestamp &&
        !pvc.metadata?.ownerReferences?.length &&
        !mounted.has(pvc.metadata?.name ?? '') &&
        outlived(pvc, options, Date.now()),
    );
    await Promise.all(doomed.map(remove));
  };
  return periodicJob('storage reaper', pass, options.intervalMs, logger);
}

/**
 * A cluster backend's session storage: a deleted runtime's PVCs go (`dropStorage`), and the storage
 * reaper runs among the shared jobs when the session manager says which versions are kept.
 */
export function clusterStorage(
  on: Pick<StorageReaperOptions, 'core' | 'namespace' | 'pods' | 'writes'>,
  idleS: number,
) {
  const { core, namespace, writes } = on;
  return {
    dropStorage: (runtimeId: string) => deleteRuntimeStorage(core, namespace, runtimeId, writes),
    jobs({ storedVersions, ...input }: SharedJobInput): SharedJob[] {
      return storedVersions
        ? [createStorageReaper({ ...input, ...on, storedVersions, idleMs: idleS * 1000 })]
        : [];
    },
  };
}
