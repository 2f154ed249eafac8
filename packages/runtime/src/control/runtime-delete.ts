// DeleteAgentRuntime's second half, after its 202: the runtime's sessions stopped, its session
// storage removed, then its records. It fails only when that work cannot be done (the Kubernetes
// API refused to delete the storage, the store is unreachable): the runtime then turns
// DELETE_FAILED with the reason, keeps its records (so its storage is not orphaned), and
// DeleteAgentRuntime may be called again. A runtime an earlier process left DELETING (it stopped
// mid-way) is finished when the next one starts, as version-settle.ts resumes CREATING/UPDATING.
import { type Logger } from '../logger.js';
import { type SessionManager } from '../sessions/session-manager.js';
import { type createArtifactPins } from './artifacts.js';
import { now } from './authed-route.js';
import { type RuntimeRecord, type Store } from './store.js';

export interface RuntimeDeleterDeps {
  store: Store;
  sessions: SessionManager;
  logger: Logger;
  pins: ReturnType<typeof createArtifactPins>;
}

export function createRuntimeDeleter({ store, sessions, logger, pins }: RuntimeDeleterDeps) {
  const remove = async (runtime: RuntimeRecord) => {
    await sessions.stopRuntime(runtime.id);
    await store.deleteChildren(runtime.id);
    await store.delete('tags', runtime.arn);
    await store.delete('runtime', runtime.id);
    void pins.prune();
    logger.info('runtime deleted', { runtimeId: runtime.id });
  };

  /** The runtime DELETE_FAILED with `reason`, unless another process finished it meanwhile. */
  const failed = async (runtime: RuntimeRecord, reason: string) => {
    logger.error('runtime not deleted', { runtimeId: runtime.id, reason });
    const current = store.get('runtime', runtime.id);
    if (current?.status !== 'DELETING') return;
    const next: RuntimeRecord = {
      ...current,
      status: 'DELETE_FAILED',
      failureReason: reason,
      lastUpdatedAt: now(),
    };
    await store.put('runtime', runtime.id, next, '', Date.parse(runtime.createdAt));
  };

  /** Finishes the deletion of a runtime already marked DELETING; never throws. */
  const finish = async (runtime: RuntimeRecord): Promise<void> => {
    try {
      await remove(runtime);
    } catch (error) {
      const reason = `the runtime could not be deleted: ${(error as Error).message}`;
      // the store unreachable too: it stays DELETING, and the next start finishes it
      await failed(runtime, reason).catch(() => undefined);
    }
  };

  /**
   * Finishes the deletion of a runtime an earlier process left DELETING; other statuses are left
   * alone (control-plane.ts hands every runtime, once, at start).
   */
  const resumeDeleting = (runtime: RuntimeRecord) => {
    if (runtime.status !== 'DELETING') return;
    logger.warn('runtime left DELETING by an earlier process; deleting it', { runtimeId: runtime.id });
    void finish(runtime);
  };

  return { finish, resumeDeleting };
}
