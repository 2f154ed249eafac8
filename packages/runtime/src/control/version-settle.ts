// A new runtime version's settling: its artifact checked (and pinned) in the background, then the
// version — and the runtime, when it is the latest — moved to READY or to its failed status.
import { type Logger } from '../logger.js';
import { type PinnedArtifact } from '../sessions/artifact.js';
import { type SessionManager } from '../sessions/session-manager.js';
import { type createArtifactPins } from './artifacts.js';
import { now } from './authed-route.js';
import { type RuntimeRecord, type RuntimeStatus, type Store, type VersionRecord } from './store.js';

export interface VersionSettlerDeps {
  store: Store;
  sessions: SessionManager;
  logger: Logger;
  pins: ReturnType<typeof createArtifactPins>;
}

export function createVersionSettler({ store, sessions, logger, pins }: VersionSettlerDeps) {
  /** Checks the artifact in the background and moves the version (and runtime) to its next status. */
  const settle = (runtimeId: string, version: number, ok: RuntimeStatus, failed: RuntimeStatus) => {
    const key = `${runtimeId}#${version}`;
    const record = store.get('version', key);
    const uri = record?.config.agentRuntimeArtifact.containerConfiguration?.containerUri ?? '';
    void pins.pin(uri, (artifact, reason) =>
      finish(artifact, reason).catch((error: unknown) =>
        // The store is unreachable (the API server): the next start's prune settles it again.
        logger.error('runtime version not settled', { runtimeId, version, error: (error as Error).message }),
      ),
    );
    async function finish(artifact: PinnedArtifact | undefined, reason: string | undefined) {
      const stored = store.get('version', key);
      const runtime = store.get('runtime', runtimeId);
      if (!stored || !runtime || runtime.status === 'DELETING') return;
      const status = reason ? failed : ok;
      const v: VersionRecord = { ...stored, ...(artifact ? { artifact } : {}) };
      await store.put(
        'version',
        key,
        { ...v, status: reason ? 'CREATE_FAILED' : 'READY', ...(reason ? { failureReason: reason } : {}) },
        runtimeId,
        version,
      );
      if (runtime.latestVersion === version) {
        const next: RuntimeRecord = { ...runtime, status, lastUpdatedAt: now() };
        if (reason) next.failureReason = reason;
        else delete next.failureReason;
        await store.put('runtime', runtimeId, next, '', Date.parse(runtime.createdAt));
        if (!reason) sessions.refreshWarmPool({ runtime: next, version: { ...v, status: 'READY' } });
      }
      logger.info('runtime version settled', { runtimeId, version, status, ...(reason ? { reason } : {}) });
    }
  };

  /**
   * A runtime left CREATING or UPDATING by a process that stopped mid-way would stay so for good:
   * its artifact is checked again now and it settles as a live create/update would. Other
   * statuses are left alone (control-plane.ts hands every runtime, once, at start).
   */
  const resumeUnsettled = (runtime: RuntimeRecord) => {
    if (runtime.status !== 'CREATING' && runtime.status !== 'UPDATING') return;
    const creating = runtime.status === 'CREATING';
    logger.warn('runtime left in transition by an earlier process; settling it', {
      runtimeId: runtime.id,
      status: runtime.status,
    });
    settle(runtime.id, runtime.latestVersion, 'READY', creating ? 'CREATE_FAILED' : 'UPDATE_FAILED');
  };

  return { settle, resumeUnsettled };
}
