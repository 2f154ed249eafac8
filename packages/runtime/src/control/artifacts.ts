import { type RuntimeConfig } from '../config.js';
import { type Logger } from '../logger.js';
import {
  ArtifactError,
  type PinnedArtifact,
  pinArtifact,
  pinOptionsOf,
  snapshotRootOf,
} from '../sessions/artifact.js';
import { pruneSnapshots } from '../sessions/artifact-snapshot.js';
import { type Store } from './store.js';

/**
 * Pins versions' artifacts and removes the snapshots no version names. A prune waits for the pins
 * in flight (a snapshot just made is named by no version until its pin is stored) and for a prune
 * already running (two removing one folder at once fail with ENOTEMPTY), then runs once more.
 */
export function createArtifactPins(config: Readonly<RuntimeConfig>, store: Store, logger: Logger) {
  let inFlight = 0;
  let pruning = false;
  let prunePending = false;
  const pass = async (): Promise<void> => {
    const keep = new Set<string>();
    for (const v of store.list('version', { offset: 0, limit: Number.MAX_SAFE_INTEGER }))
      if (v.artifact?.kind === 'snapshot') keep.add(v.artifact.sha256);
    const gone = await pruneSnapshots(snapshotRootOf(config.dataDir), keep);
    if (gone.length) logger.info('artifact snapshots no version names removed', { count: gone.length });
  };
  const prune = async (): Promise<void> => {
    if (inFlight > 0 || pruning) {
      prunePending = true;
      return;
    }
    prunePending = false;
    pruning = true;
    // best effort: what is left goes with the next prune
    await pass().catch((error: unknown) =>
      logger.warn('artifact snapshots not pruned', { error: String(error) }),
    );
    pruning = false;
    if (prunePending && inFlight === 0) await prune();
  };
  /**
   * Pins the artifact and hands the pin, or why it failed, to `record` (which stores it). The pin
   * counts as in flight until `record` has stored it: a prune before that would take the new
   * snapshot from a version about to name it.
   */
  const pin = async (
    containerUri: string,
    record: (pinned: PinnedArtifact | undefined, reason: string | undefined) => Promise<void>,
  ): Promise<void> => {
    inFlight++;
    try {
      let pinned: PinnedArtifact | undefined;
      let reason: string | undefined;
      try {
        pinned = await pinArtifact(containerUri, pinOptionsOf(config));
      } catch (error) {
        reason = error instanceof ArtifactError ? error.message : `artifact check failed: ${String(error)}`;
      }
      await record(pinned, reason);
    } finally {
      inFlight--;
      if (inFlight === 0 && prunePending) void prune();
    }
  };
  return { pin, prune };
}
