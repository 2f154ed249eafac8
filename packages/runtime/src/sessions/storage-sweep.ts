// Local session storage lives as the hosted service's does (and the kubernetes backend's PVCs):
// across a session's stops, per version (the first start on a new version gets an empty folder),
// and no longer than the runtime. Layout under `<data dir>/session-storage/`:
// `<runtimeId>/<session hash>/v<version>` (a root runtime's volume image beside it, `.img`).
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type Logger } from '../logger.js';
import { type SharedJob } from './backend.js';
import { periodicJob } from './periodic-job.js';
import { storageHashOf } from './sandbox-session.js';

const VERSION_ENTRY = /^v(\d+)(\.img)?$/;

const entries = (dir: string) => {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
};

/** Removes the folder or file; false when it cannot be yet (a volume still being unmounted). */
const remove = (path: string): boolean => {
  try {
    rmSync(path, { recursive: true, force: true });
    return true;
  } catch {
    return false;
  }
};

/** Removes a runtime's storage, every session and version of it (a deleted runtime's). */
export function removeRuntimeStorage(root: string, runtimeId: string): boolean {
  return remove(join(root, runtimeId));
}

/**
 * Removes the storage no version kept needs: a runtime's whole folder once `kept(runtimeId)` is
 * undefined (deleted), else each session's folders of versions not kept, unless `live` says a
 * session runs on it. Folders of an older layout (no `v<version>`) go only with their runtime.
 * Returns how many it removed.
 */
export function sweepStorage(
  root: string,
  kept: (runtimeId: string) => number[] | undefined,
  live: (runtimeId: string, hash: string, version: number) => boolean,
): number {
  let removed = 0;
  for (const runtimeId of entries(root)) {
    const versions = kept(runtimeId);
    if (!versions) {
      removed += Number(removeRuntimeStorage(root, runtimeId));
      continue;
    }
    for (const hash of entries(join(root, runtimeId)))
      for (const entry of entries(join(root, runtimeId, hash))) {
        const version = Number(VERSION_ENTRY.exec(entry)?.[1] ?? NaN);
        if (!Number.isInteger(version) || versions.includes(version) || live(runtimeId, hash, version))
          continue;
        removed += Number(remove(join(root, runtimeId, hash, entry)));
      }
  }
  return removed;
}

export interface StorageSweeperOptions {
  root: string;
  kept: (runtimeId: string) => number[] | undefined;
  /** The sessions live on this host: their storage stays, whatever its version. */
  sessions: () => Iterable<{ runtimeId: string; sessionId: string; version: number }>;
  intervalMs: number;
  logger: Logger;
}

/** {@link sweepStorage} every `intervalMs`, sparing the live sessions' storage. */
export function storageSweeper(options: StorageSweeperOptions): SharedJob {
  const { root, kept, logger } = options;
  const pass = async () => {
    const live = new Set<string>();
    for (const s of options.sessions()) live.add(`${s.runtimeId}/${storageHashOf(s.sessionId)}/${s.version}`);
    const removed = sweepStorage(root, kept, (runtimeId, hash, version) =>
      live.has(`${runtimeId}/${hash}/${version}`),
    );
    if (removed > 0)
      logger.info('removed the storage of deleted runtimes and versions not kept', { removed });
    return Promise.resolve();
  };
  return periodicJob('storage sweep', pass, options.intervalMs, logger);
}
