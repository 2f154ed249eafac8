import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LOCK = join(tmpdir(), 'agentrt-test-podman-images.lock');

/**
 * `podman <args>` for a test's image builds and removals, one at a time across test files: podman 4.3
 * fails a build whose layer cache lookup meets another file's `rmi` ("getting top layer info: layer
 * not known"). Sessions' containers need no lock; only the image store's writers take it.
 */
export function podmanImages(podman: string, args: string[]): SpawnSyncReturns<string> {
  return spawnSync('flock', [LOCK, podman, ...args], { encoding: 'utf8' });
}
