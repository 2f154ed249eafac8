import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SnapshotError, pruneSnapshots, snapshotDirectory } from './artifact-snapshot.js';

const MiB = 2 ** 20;
const made: string[] = [];
const temp = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'agentrt-snap-'));
  made.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** An agent folder as `mkdtemp` leaves it (0700), with an executable, a sub folder and a checkout. */
function agentDir(): string {
  const base = temp();
  const dir = join(base, 'workspace', 'agent');
  mkdirSync(join(dir, 'lib'), { recursive: true });
  mkdirSync(join(dir, '.git'));
  mkdirSync(join(base, 'workspace', 'node_modules', 'dep'), { recursive: true });
  mkdirSync(join(base, 'node_modules'));
  writeFileSync(join(dir, 'package.json'), '{"main":"lib/main.js"}');
  writeFileSync(join(dir, 'lib', 'main.js'), 'console.log(1)\n');
  writeFileSync(join(dir, 'run.sh'), '#!/bin/sh\n', { mode: 0o700 });
  writeFileSync(join(dir, '.git', 'HEAD'), 'ref: main\n');
  chmodSync(dir, 0o700);
  chmodSync(join(dir, 'lib', 'main.js'), 0o600);
  return dir;
}

describe('snapshotDirectory', () => {
  it('copies the tree readable by anyone, content-addressed, with a link to the modules above it', async () => {
    const source = agentDir();
    const root = temp();
    const snap = await snapshotDirectory(source, root, 10 * MiB);
    expect(snap.dir).toBe(join(root, snap.sha256, 'n', 'app'));
    expect(snap.files).toBe(3);
    expect(readFileSync(join(snap.dir, 'lib', 'main.js'), 'utf8')).toBe('console.log(1)\n');
    expect(statSync(snap.dir).mode & 0o777).toBe(0o755);
    expect(statSync(join(snap.dir, 'lib', 'main.js')).mode & 0o777).toBe(0o644);
    expect(statSync(join(snap.dir, 'run.sh')).mode & 0o777).toBe(0o755);
    expect(readdirSync(snap.dir)).not.toContain('.git');
    // Node searches the same node_modules as in place: the workspace's, then the one above it.
    expect(readlinkSync(join(snap.dir, '..', 'node_modules'))).toBe(join(source, '..', 'node_modules'));
    expect(readlinkSync(join(snap.dir, '..', '..', 'node_modules'))).toBe(
      join(source, '..', '..', 'node_modules'),
    );
    // The same tree again shares the copy; an edit makes another one and leaves the first as it was.
    expect((await snapshotDirectory(source, root, 10 * MiB)).sha256).toBe(snap.sha256);
    writeFileSync(join(source, 'lib', 'main.js'), 'console.log(2)\n');
    const next = await snapshotDirectory(source, root, 10 * MiB);
    expect(next.sha256).not.toBe(snap.sha256);
    expect(readFileSync(join(snap.dir, 'lib', 'main.js'), 'utf8')).toBe('console.log(1)\n');
    expect(readdirSync(root).sort()).toEqual([snap.sha256, next.sha256].sort());
  });

  it('copies links as links and leaves fifos out, so nothing outside the folder is read', async () => {
    const source = agentDir();
    const secret = join(temp(), 'secret');
    writeFileSync(secret, 'host secret', { mode: 0o600 });
    symlinkSync(secret, join(source, 'leak'));
    symlinkSync('lib/main.js', join(source, 'entry.js'));
    execFileSync('mkfifo', [join(source, 'pipe')]);
    const snap = await snapshotDirectory(source, temp(), 10 * MiB);
    expect(lstatSync(join(snap.dir, 'leak')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(snap.dir, 'leak'))).toBe(secret);
    expect(readFileSync(join(snap.dir, 'entry.js'), 'utf8')).toBe('console.log(1)\n');
    expect(readdirSync(snap.dir)).not.toContain('pipe');
    // A link's target is part of the digest.
    rmSync(join(source, 'leak'));
    symlinkSync('/etc/hostname', join(source, 'leak'));
    expect((await snapshotDirectory(source, temp(), 10 * MiB)).sha256).not.toBe(snap.sha256);
  });

  it('refuses a folder over the size limit, naming the setting, and leaves no half copy', async () => {
    const source = agentDir();
    writeFileSync(join(source, 'big.bin'), Buffer.alloc(3 * MiB));
    const root = temp();
    const error = await snapshotDirectory(source, root, 2 * MiB).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SnapshotError);
    expect((error as Error).message).toMatch(/larger than 2 MiB \(AGENTRT_ARTIFACT_MAX_MB\)/);
    expect(readdirSync(root)).toEqual([]);
  });
});

describe('pruneSnapshots', () => {
  it('removes the snapshots no version names and the half copies of other processes', async () => {
    const root = temp();
    const keep = 'a'.repeat(64);
    const drop = 'b'.repeat(64);
    for (const name of [keep, drop, '.staging-1-x', `.staging-${process.pid}-y`, 'notes'])
      mkdirSync(join(root, name));
    const gone = await pruneSnapshots(root, new Set([keep]));
    expect(gone.sort()).toEqual(['.staging-1-x', drop].sort());
    expect(readdirSync(root).sort()).toEqual([`.staging-${process.pid}-y`, keep, 'notes'].sort());
  });
});
