// agent-sandbox mode's API writes: a version's SandboxTemplate and SandboxWarmPool (made once, the
// pool resized as the warm-pool keeper asks), a session's SandboxClaim, and their
// deletion. Every write is counted (bench figures).
import { type CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { RuntimeApiError } from '../../../errors.js';
import { type SessionTarget } from '../../backend.js';
import { containerEnv } from '../../container-env.js';
import { apiFailure, statusOf } from './kube-client.js';
import { ANNOTATIONS, POD_PORT, type PodSettings } from './pod-spec.js';
import { type VersionWorker } from './warm-keeper.js';
import {
  EXTENSIONS_GROUP,
  SANDBOX_VERSION,
  type SandboxObject,
  runtimeSelector,
  sandboxClaim,
  sandboxTemplate,
  sandboxWarmPool,
  storageClaimOf,
  warmPoolName,
} from './sandbox-spec.js';

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** How long a session's start waits for its earlier claim (with storage) to finish being deleted. */
const TEARDOWN_WAIT_MS = 30_000;
const PLURALS = {
  SandboxTemplate: 'sandboxtemplates',
  SandboxWarmPool: 'sandboxwarmpools',
  SandboxClaim: 'sandboxclaims',
};
type Kind = keyof typeof PLURALS;

export interface SandboxObjects {
  /** Makes the version's template and pool (once per process) and sets the pool's size. */
  resize(target: SessionTarget, replicas: number, worker: VersionWorker): Promise<void>;
  /**
   * Makes the session's claim (its pool first): its name, and whether it was the session's live
   * claim another replica had just made (joined). `beside`: a second claim, never joined.
   */
  claim(
    target: SessionTarget,
    sessionId: string,
    worker: VersionWorker,
    beside?: boolean,
  ): Promise<{ name: string; adopted: boolean }>;
  deleteClaim(name: string): Promise<void>;
  /** Notes an invocation on the claim (agentrt.dev/last-activity-ms), for the shared reaper. */
  noteActivity(name: string, atMs: number): Promise<void>;
  /** Deletes the runtime's pools and templates (but those of version `keep`). */
  drop(runtimeId: string, keep?: number): Promise<void>;
}

export function createSandboxObjects(
  api: CustomObjectsApi,
  settings: PodSettings,
  writes: { value: number },
): SandboxObjects {
  const { namespace } = settings;
  const where = (kind: Kind) => ({
    group: EXTENSIONS_GROUP,
    version: SANDBOX_VERSION,
    namespace,
    plural: PLURALS[kind],
  });
  /** Per version: its objects made (a promise), the pool size last written. */
  const versions = new Map<
    string,
    { made: Promise<void>; replicas: number; runtimeId: string; version: number }
  >();
  const keyOf = (t: SessionTarget) => warmPoolName(t);

  /** Creates the object: false when it exists already (another replica made it). */
  const create = async (object: SandboxObject): Promise<boolean> => {
    writes.value++;
    return api.createNamespacedCustomObject({ ...where(object.kind as Kind), body: object }).then(
      () => true,
      (error: unknown) => {
        if (statusOf(error) !== 409)
          throw apiFailure(`creating ${object.kind} ${object.metadata.name}`, error);
        return false;
      },
    );
  };

  const ensure = (target: SessionTarget, replicas: number, worker: VersionWorker) => {
    const key = keyOf(target);
    const known = versions.get(key);
    if (known) return known;
    const env = containerEnv(worker.env(POD_PORT, false), target.runtime.name);
    const template = sandboxTemplate({ target, env, healthCheck: worker.healthCheck, settings });
    const entry = {
      made: Promise.resolve(),
      replicas,
      runtimeId: target.runtime.id,
      version: target.version.version,
    };
    // A pool another replica (an earlier leader) made has a size this one does not know: set it.
    const made = create(template)
      .then(() => create(sandboxWarmPool(target, settings, replicas)))
      .then((created) => void (created || (entry.replicas = -1)));
    entry.made = made;
    versions.set(key, entry);
    made.catch(() => versions.delete(key)); // the next call tries again
    return entry;
  };

  const readClaim = (name: string) =>
    api.getNamespacedCustomObject({ ...where('SandboxClaim'), name }).catch((error: unknown) => {
      if (statusOf(error) !== 404) throw apiFailure(`reading SandboxClaim ${name}`, error);
    }) as Promise<SandboxObject | undefined>;

  /** Resolves once the claim (this uid) is gone; a 409 RetryableConflict when it is not soon. */
  const claimGone = async (claim: SandboxObject) => {
    const { name, uid } = claim.metadata;
    for (const until = Date.now() + TEARDOWN_WAIT_MS; (await readClaim(name))?.metadata.uid === uid;) {
      if (Date.now() > until)
        throw new RuntimeApiError(
          'RetryableConflictException',
          'Session operation in progress, please retry',
        );
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  /** A claim of the session beside the one that holds its name: the name and a suffix. */
  const createAside = async (target: SessionTarget, sessionId: string) => {
    const base = sandboxClaim(target, sessionId, settings).metadata.name;
    const again = sandboxClaim(target, sessionId, settings, `${base}-${Date.now().toString(36)}`);
    writes.value++;
    await api.createNamespacedCustomObject({ ...where('SandboxClaim'), body: again }).catch((e: unknown) => {
      throw apiFailure(`creating SandboxClaim ${again.metadata.name}`, e);
    });
    return again.metadata.name;
  };

  const setReplicas = async (name: string, replicas: number) => {
    writes.value++;
    await api
      .patchNamespacedCustomObject({ ...where('SandboxWarmPool'), name, body: { spec: { replicas } } }, merge)
      .catch((error: unknown) => {
        throw apiFailure(`resizing SandboxWarmPool ${name}`, error);
      });
  };

  const deleteKind = (kind: Kind, labelSelector: string) => {
    writes.value++;
    return api
      .deleteCollectionNamespacedCustomObject({ ...where(kind), labelSelector })
      .then(() => undefined);
  };

  return {
    async resize(target, replicas, worker) {
      const entry = ensure(target, replicas, worker);
      await entry.made;
      if (entry.replicas === replicas) return;
      entry.replicas = replicas;
      await setReplicas(keyOf(target), replicas);
    },
    async claim(target, sessionId, worker, beside) {
      await ensure(target, 0, worker).made;
      const claim = sandboxClaim(target, sessionId, settings);
      const { name } = claim.metadata;
      // Taken: by the session's live claim another replica just made (joined); by its earlier claim
      // still being deleted (with storage: waited out, so the new claim's sandbox, named the same,
      // adopts the same PVC; without: one beside it); or by the claim a fresh worker replaces.
      for (let tries = 0; !(await create(claim)); tries++) {
        const existing = beside || tries > 3 ? undefined : await readClaim(name);
        const same = existing?.metadata.annotations?.[ANNOTATIONS.sessionId] === sessionId;
        if (same && !existing?.metadata.deletionTimestamp) return { name, adopted: true };
        if (same && storageClaimOf(existing)) await claimGone(existing!);
        else if (existing || beside || tries > 3)
          return { name: await createAside(target, sessionId), adopted: false };
      }
      return { name, adopted: false };
    },
    async noteActivity(name, atMs) {
      writes.value++;
      const body = { metadata: { annotations: { [ANNOTATIONS.lastActivityMs]: String(atMs) } } };
      await api.patchNamespacedCustomObject({ ...where('SandboxClaim'), name, body }, merge);
    },
    async deleteClaim(name) {
      writes.value++;
      await api.deleteNamespacedCustomObject({ ...where('SandboxClaim'), name }).catch((error: unknown) => {
        if (statusOf(error) !== 404) throw apiFailure(`deleting SandboxClaim ${name}`, error);
      });
    },
    async drop(runtimeId, keep) {
      const doomed = [...versions].filter(([, e]) => e.runtimeId === runtimeId && e.version !== keep);
      if (keep !== undefined && doomed.length === 0) return; // nothing of an older version made here
      for (const [key] of doomed) versions.delete(key);
      const selector = runtimeSelector(runtimeId, keep);
      await Promise.all([deleteKind('SandboxWarmPool', selector), deleteKind('SandboxTemplate', selector)]);
    },
  };
}
