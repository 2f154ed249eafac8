import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type Logger } from '../logger.js';
import { sweepStorageVolumes } from './storage-volume.js';
import { storageRootOf } from './sandbox-session.js';

/** The pid of the runtime that owns a data dir's session folders. */
const OWNER_FILE = 'owner.pid';

/** Whether a process with this pid is alive (EPERM: alive, someone else's). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Sessions never outlive their runtime: every session folder found at start was left by one that
 * crashed or was killed, and goes (sessionStorage lives elsewhere and stays; its volumes left
 * mounted are unmounted) — unless the runtime that wrote `owner.pid` still runs on the data dir.
 */
export function sweepSessionDirs(sessionsRoot: string, logger: Logger): Promise<void> {
  mkdirSync(sessionsRoot, { recursive: true });
  const ownerFile = join(sessionsRoot, OWNER_FILE);
  const owner = Number(readFileSync(ownerFile, { encoding: 'utf8', flag: 'a+' }).trim());
  if (owner > 0 && owner !== process.pid && alive(owner)) {
    logger.warn('another runtime (pid ' + owner + ') uses this data dir: its session folders stay');
    return Promise.resolve();
  }
  const left = readdirSync(sessionsRoot).filter((name) => name !== OWNER_FILE);
  for (const name of left) rmSync(join(sessionsRoot, name), { recursive: true, force: true });
  writeFileSync(ownerFile, String(process.pid));
  if (left.length > 0)
    logger.info('removed the session folders an earlier run left behind', { count: left.length });
  return sweepStorageVolumes(storageRootOf(dirname(sessionsRoot))).then((count) => {
    if (count > 0) logger.info('unmounted the storage volumes an earlier run left mounted', { count });
  });
}
