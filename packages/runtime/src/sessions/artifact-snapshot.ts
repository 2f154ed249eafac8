import { createHash, type Hash, randomUUID } from 'node:crypto';
import { constants, realpathSync } from 'node:fs';
import { chmod, lstat, mkdir, open, readdir, readlink, rename, rm, symlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { nodeModulesAbove } from './sandbox-view.js';

/** A `file://` artifact as a version keeps it: a content-addressed copy in the runtime's data dir. */
export interface Snapshot {
  /** The copy's folder, the worker's cwd: `<root>/<sha256>/app` (deeper in a workspace). */
  dir: string;
  sha256: string;
  bytes: number;
  files: number;
}

/** The directory cannot be snapshotted; the message is the version's failureReason. */
export class SnapshotError extends Error {
  override name = 'SnapshotError';
}

/** Not copied: a checkout's history is no part of what runs. */
const SKIPPED_NAMES = new Set(['.git']);
const MAX_FILES = 200_000;
const STAGING = '.staging-';
const CHUNK = 1 << 20;

interface Walk {
  hash: Hash;
  bytes: number;
  files: number;
  maxBytes: number;
  source: string;
  buffer: Buffer;
}

/**
 * Where a snapshot's copy goes so Node searches the same `node_modules` as in place: `app` nested
 * one level per folder above the first, each level holding a `node_modules` link, nearest innermost.
 */
function layout(home: string, modules: readonly string[]): { app: string; links: [string, string][] } {
  const depth = Math.max(modules.length - 1, 0);
  const level = (n: number) => join(home, ...Array<string>(n).fill('n'));
  const links = modules.map((target, i): [string, string] => [
    join(level(depth - i), 'node_modules'),
    target,
  ]);
  return { app: join(level(depth), 'app'), links };
}

/**
 * Copies `source` to `<root>/<sha256>/[n/…]app` (files 0644, or 0755 when executable; folders 0755), so
 * a version runs what its directory held when it was created, readable by the sandbox user whatever
 * the source's modes. Symbolic links are copied as links and never followed (the copy runs with the
 * runtime's privileges); fifos, sockets and devices are left out; `.git` is skipped. The digest
 * covers names, executable bits, contents and link targets, so equal trees share one copy. Links
 * to the `node_modules` folders above the source sit above the copy, at the same distances.
 */
export async function snapshotDirectory(source: string, root: string, maxBytes: number): Promise<Snapshot> {
  const staging = join(root, `${STAGING}${process.pid}-${randomUUID()}`);
  // Node searches these for the packages the artifact imports in place (a workspace may have one per level).
  const modules = nodeModulesAbove(source).map((m) => realpathSync(m));
  const planned = layout(staging, modules);
  await mkdir(planned.app, { recursive: true, mode: 0o755 });
  try {
    const hash = createHash('sha256');
    const walk: Walk = { hash, bytes: 0, files: 0, maxBytes, source, buffer: Buffer.alloc(CHUNK) };
    await copyTree(source, planned.app, '', walk);
    for (const [link, target] of planned.links) {
      hash.update(`M ${target}\n`);
      await symlink(target, link);
    }
    const sha256 = hash.digest('hex');
    const home = join(root, sha256);
    await chmodTree(staging, planned.app);
    await rename(staging, home).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
      await rm(staging, { recursive: true, force: true }); // the same tree is there already
    });
    return { dir: layout(home, modules).app, sha256, bytes: walk.bytes, files: walk.files };
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

/** 0755 on the folders from `top` down to `app` (mkdir's mode is cut by the umask). */
async function chmodTree(top: string, app: string): Promise<void> {
  for (let dir = app; dir.startsWith(top); dir = dirname(dir)) await chmod(dir, 0o755);
}

async function copyTree(from: string, to: string, rel: string, walk: Walk): Promise<void> {
  const names = (await readdir(from)).filter((n) => !SKIPPED_NAMES.has(n)).sort();
  for (const name of names) {
    const path = join(from, name);
    const dest = join(to, name);
    const relPath = rel ? `${rel}/${name}` : name;
    const info = await lstat(path);
    if (info.isDirectory()) {
      walk.hash.update(`D ${relPath}\n`);
      await mkdir(dest, { mode: 0o755 });
      await chmod(dest, 0o755);
      await copyTree(path, dest, relPath, walk);
    } else if (info.isSymbolicLink()) {
      const target = await readlink(path);
      walk.hash.update(`L ${relPath}\0${target}\n`);
      await symlink(target, dest);
    } else if (info.isFile()) {
      await copyFile(path, dest, relPath, walk);
    }
  }
}

async function copyFile(path: string, dest: string, relPath: string, walk: Walk): Promise<void> {
  if (++walk.files > MAX_FILES)
    throw new SnapshotError(`${walk.source} holds more than ${MAX_FILES} files; bundle it or use an image`);
  // O_NOFOLLOW | O_NONBLOCK: a file swapped for a link or a fifo since lstat is refused, not followed or waited on.
  const input = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const info = await input.stat();
    if (!info.isFile()) throw new SnapshotError(`${path} changed while it was copied`);
    const mode = info.mode & 0o111 ? 0o755 : 0o644;
    walk.hash.update(`F ${relPath}\0${mode.toString(8)}\0${info.size}\n`);
    const output = await open(dest, 'wx', mode);
    try {
      for (;;) {
        const { bytesRead } = await input.read(walk.buffer, 0, CHUNK, null);
        if (bytesRead === 0) break;
        walk.bytes += bytesRead;
        if (walk.bytes > walk.maxBytes)
          throw new SnapshotError(
            `${walk.source} is larger than ${Math.round(walk.maxBytes / 2 ** 20)} MiB (AGENTRT_ARTIFACT_MAX_MB); bundle fewer files or use an image`,
          );
        const chunk = walk.buffer.subarray(0, bytesRead);
        walk.hash.update(chunk);
        await output.write(chunk);
      }
    } finally {
      await output.close();
    }
    await chmod(dest, mode);
  } finally {
    await input.close();
  }
}

/**
 * Removes the snapshots no version names any more (`keep`: their sha256s), and half-made copies an
 * earlier process left (its pid in their name).
 */
export async function pruneSnapshots(root: string, keep: ReadonlySet<string>): Promise<string[]> {
  const names = await readdir(root).catch(() => [] as string[]);
  const mine = `${STAGING}${process.pid}-`;
  const gone = names.filter((n) =>
    n.startsWith(STAGING) ? !n.startsWith(mine) : /^[0-9a-f]{64}$/.test(n) && !keep.has(n),
  );
  await Promise.all(gone.map((n) => rm(join(root, n), { recursive: true, force: true })));
  return gone;
}
