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
 * in flight: a snapshot just made is named by no version until its pin is stored.
 */
export function createArtifactPins(config: Readonly<RuntimeConfig>, store: Store, logger: Logger) {
  let inFlight = 0;
  let prunePending = false;
  const prune = async (): Promise<void> => {
    if (inFlight > 0) {
      prunePending = true;
      return;
    }
    prunePending = false;
    const keep = new Set<string>();
    for (const v of store.list('version', { offset: 0, limit: Number.MAX_SAFE_INTEGER }))
      if (v.artifact?.kind === 'snapshot') keep.add(v.artifact.sha256);
    const gone = await pruneSnapshots(snapshotRootOf(config.dataDir), keep);
    if (gone.length) logger.info('artifact snapshots no version names removed', { count: gone.length });
  };
  /** Pins the artifact and hands the pin, or why it failed, to `record` (which stores it). */
  const pin = async (
    containerUri: string,
    record: (pinned: PinnedArtifact | undefined, reason: string | undefined) => void,
  ): Promise<void> => {
    inFlight++;
    try {
      const pinned = await pinArtifact(containerUri, pinOptionsOf(config));
      record(pinned, undefined);
    } catch (error) {
      record(
        undefined,
        error instanceof ArtifactError ? error.message : `artifact check failed: ${String(error)}`,
      );
    } finally {
      inFlight--;
      if (inFlight === 0 && prunePending) void prune();
    }
  };
  return { pin, prune };
}
