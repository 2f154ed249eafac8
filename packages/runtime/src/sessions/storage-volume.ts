import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join, sep } from 'node:path';
import { helperPath, requireHelper, runHelper } from './helpers.js';

// A session's storage (`sessionStorage` under `/mnt/…`) as a volume of its own: an ext4 image file
// (sparse, `<dir>.img`) loop-mounted on `<dir>` while the session runs, so that a session fills
// its own volume (`No space left on device`), never the data dir's disk. Needs a root runtime;
// without one the folder is used as it is, without a size limit.

/** Why a root runtime cannot give session storage a size limit, or undefined when it can. */
export function storageQuotaProblem(isRoot: boolean): string | undefined {
  if (!isRoot) return 'needs a root runtime (a loop-mounted volume per session)';
  const missing = (['mkfs.ext4', 'mount', 'umount'] as const).filter((name) => !helperPath(name));
  if (missing.length > 0) return `${missing.join(', ')} not installed`;
  if (!existsSync('/dev/loop-control')) return 'no loop devices (/dev/loop-control)';
  return undefined;
}

async function run(argv: string[]): Promise<void> {
  await runHelper(argv, argv[0] as string);
}

/**
 * Mounts the session's storage volume on `dir` (made on first use: `bytes` large, its root owned by
 * `owner`), nosuid and nodev. A folder left from before volumes (files in it, no image) is kept as
 * it is. Resolves with the unmount, run when the worker is gone.
 */
export async function mountStorageVolume(
  dir: string,
  bytes: number,
  owner: { uid: number; gid: number },
): Promise<() => void> {
  const image = `${dir}.img`;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Storage of an earlier runtime without volumes (files, no image): kept as it is.
  if (!existsSync(image) && readdirSync(dir).length > 0) return () => undefined;
  const fresh = !existsSync(image);
  if (fresh) await makeVolume(image, bytes, owner);
  await run([requireHelper('mount'), '-o', 'loop,nosuid,nodev', image, dir]);
  // A new ext4 volume holds lost+found; a session's storage starts empty, as the hosted one does.
  if (fresh) rmSync(join(dir, 'lost+found'), { recursive: true, force: true });
  return () => void run([requireHelper('umount'), '-l', dir]).catch(() => undefined);
}

/** A sparse ext4 image of `bytes`, its root folder owned by `owner`, no blocks reserved for root. */
function makeVolume(image: string, bytes: number, owner: { uid: number; gid: number }): Promise<void> {
  const size = `${Math.floor(bytes / 1024)}k`;
  const options = ['-q', '-F', '-m', '0', '-E', `root_owner=${owner.uid}:${owner.gid}`];
  return run([requireHelper('mkfs.ext4'), ...options, image, size]);
}

/** Mount points under `root` (from /proc/self/mountinfo), deepest first. */
function mountsUnder(root: string): string[] {
  const prefix = root.endsWith(sep) ? root : root + sep;
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4]?.replace(/\\040/g, ' '))
    .filter((point): point is string => point !== undefined && point.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
}

/** Unmounts the storage volumes a runtime that crashed left mounted under `root`. Best effort. */
export async function sweepStorageVolumes(root: string): Promise<number> {
  const umount = helperPath('umount');
  if (!umount || !existsSync(root)) return 0;
  const points = mountsUnder(root);
  await Promise.all(points.map((point) => run([umount, '-l', point]).catch(() => undefined)));
  return points.length;
}
