// Local session storage lives as the hosted service's does (and the kubernetes backend's PVCs):
// across a session's stops, per version (the first start on a new version gets an empty folder),
// for AGENTRT_SESSION_STORAGE_IDLE_S past its session's last use (the folder's or image's mtime:
// set at each start and each sweep it runs through), and no longer than the runtime. Layout under `<data dir>/session-storage/`:
// `<runtimeId>/<session hash>/v<version>` (a root runtime's volume image beside it, `.img`).
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { type Logger } from '../logger.js';
import { type SessionTarget, type SharedJob, sessionStorageMount } from './backend.js';
import { periodicJob } from './periodic-job.js';
import { storageDirOf, storageHashOf, storageRootOf } from './sandbox-session.js';

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

/** Notes a use of a session's storage folder (its session starts on its version), made if new. */
export function touchStorage(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const now = new Date();
  utimesSync(dir, now, now);
}

/** What the sweep keeps: the versions of each runtime, how long storage may go unused, what runs. */
export interface SweepRule {
  /** undefined: the runtime is deleted. */
  kept: (runtimeId: string) => number[] | undefined;
  idleMs: number;
  live: (runtimeId: string, hash: string, version: number) => boolean;
}

/** Sets the mtime of the path to `at` (best effort: a path going away is no error). */
const freshen = (path: string, at: Date) => {
  try {
    utimesSync(path, at, at);
  } catch {
    // removed meanwhile
  }
};

/** The folder and its volume image (a root runtime's), whichever are there. */
const partsOf = (dir: string) => [dir, `${dir}.img`].filter((path) => existsSync(path));

/**
 * Whether a session's storage of a version (its folder `dir`) not running now has outlived its use:
 * its version is not kept, or it was last used (the mtime of the folder or its image: set when its
 * session last started or was last seen running) more than `idleMs` ago.
 */
function outlived(rule: SweepRule, versions: number[], version: number, dir: string) {
  if (!versions.includes(version)) return true;
  const usedMs = Math.max(...partsOf(dir).map((path) => statSync(path).mtimeMs));
  return Date.now() - usedMs > rule.idleMs;
}

/**
 * Removes the storage no version kept needs: a runtime's whole folder once `kept(runtimeId)` is
 * undefined (deleted), else each session's folder (and volume image) of a version not kept, or
 * unused for `idleMs`, unless a session runs on it. Folders of an older layout (no `v<version>`)
 * go only with their runtime. Returns how many it removed.
 */
export function sweepStorage(root: string, rule: SweepRule): number {
  let removed = 0;
  for (const runtimeId of entries(root)) {
    const versions = rule.kept(runtimeId);
    if (!versions) {
      removed += Number(removeRuntimeStorage(root, runtimeId));
      continue;
    }
    for (const hash of entries(join(root, runtimeId))) {
      const numbers = entries(join(root, runtimeId, hash)).map((e) =>
        Number(VERSION_ENTRY.exec(e)?.[1] ?? NaN),
      );
      for (const version of new Set(numbers.filter(Number.isInteger))) {
        const dir = join(root, runtimeId, hash, `v${version}`);
        if (rule.live(runtimeId, hash, version)) {
          const now = new Date();
          for (const path of partsOf(dir)) freshen(path, now); // used now: idle time starts at its end
        } else if (outlived(rule, versions, version, dir)) {
          removed += Number(remove(`${dir}.img`) && remove(dir));
        }
      }
    }
  }
  return removed;
}

export interface StorageSweeperOptions {
  root: string;
  kept: (runtimeId: string) => number[] | undefined;
  /** The sessions live on this host: their storage stays, whatever its version. */
  sessions: () => Iterable<{ runtimeId: string; sessionId: string; version: number }>;
  idleMs: number;
  intervalMs: number;
  logger: Logger;
}

/** {@link sweepStorage} every `intervalMs`, sparing the live sessions' storage. */
export function storageSweeper(options: StorageSweeperOptions): SharedJob {
  const { root, kept, logger } = options;
  const pass = async () => {
    const live = new Set<string>();
    for (const s of options.sessions()) live.add(`${s.runtimeId}/${storageHashOf(s.sessionId)}/${s.version}`);
    const removed = sweepStorage(root, {
      kept,
      idleMs: options.idleMs,
      live: (runtimeId, hash, version) => live.has(`${runtimeId}/${hash}/${version}`),
    });
    if (removed > 0)
      logger.info('removed the storage of deleted runtimes and versions not kept', { removed });
    return Promise.resolve();
  };
  return periodicJob('storage sweep', pass, options.intervalMs, logger);
}

/** This host's session storage: the sweep, a session's start noted, a deleted runtime's removal. */
export interface LocalStorageLifetime {
  readonly sweep: SharedJob;
  /** A session starts on `target`: its storage (if the version mounts one) is used now. */
  started(target: SessionTarget, sessionId: string): void;
  /** A runtime is deleted: its storage goes (a volume not unmounted yet is left to the next sweep). */
  dropRuntime(runtimeId: string): void;
}

/** The lifetime of the session storage under `<dataDir>/session-storage` (see the top of this file). */
export function localStorageLifetime(
  dataDir: string,
  options: Omit<StorageSweeperOptions, 'root'>,
): LocalStorageLifetime {
  const root = storageRootOf(dataDir);
  return {
    sweep: storageSweeper({ ...options, root }),
    started(target, sessionId) {
      if (sessionStorageMount(target))
        touchStorage(storageDirOf(dataDir, target.runtime.id, target.version.version, sessionId));
    },
    dropRuntime: (runtimeId) => void removeRuntimeStorage(root, runtimeId),
  };
}
