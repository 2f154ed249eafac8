import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { type PinnedArtifact, snapshotRootOf } from '../sessions/artifact.js';
import { fixtureUri } from '../test-support.js';
import { createArtifactPins } from './artifacts.js';
import { type Store, type VersionRecord } from './store.js';
import { createSqliteStore } from './store/sqlite-store.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('artifact pins', () => {
  it('never reject a prune: a failed pass is a warning (a prune runs unawaited)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'agentrt-pins-'));
    made.push(dataDir);
    const config = resolveRuntimeConfig({ dataDir, fileArtifacts: 'snapshot' }, {});
    const broken = {
      list: () => {
        throw new Error('store unreachable');
      },
    } as unknown as Store;
    const warnings: string[] = [];
    const logger = createLogger({ level: 'warn', sink: (line) => void warnings.push(line) });
    await expect(createArtifactPins(config, broken, logger).prune()).resolves.toBeUndefined();
    expect(warnings.join('')).toMatch(/artifact snapshots not pruned.*store unreachable/);
  });

  it('keep the snapshot of a version still being stored when a prune comes during the pin', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'agentrt-pins-'));
    made.push(dataDir);
    const config = resolveRuntimeConfig({ dataDir, fileArtifacts: 'snapshot' }, {});
    const store = createSqliteStore(dataDir);
    const pins = createArtifactPins(config, store, createLogger({ level: 'error', sink: () => undefined }));
    const uri = fixtureUri('echo');
    let pinned: PinnedArtifact | undefined;
    await pins.pin(uri, async (artifact) => {
      pinned = artifact;
      // Another runtime deleted meanwhile asks for a prune, and this version's write takes a while.
      void pins.prune();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const version: VersionRecord = {
        runtimeId: 'rt',
        version: 1,
        config: { agentRuntimeArtifact: { containerConfiguration: { containerUri: uri } } },
        status: 'READY',
        createdAt: new Date().toISOString(),
        ...(artifact ? { artifact } : {}),
      } as VersionRecord;
      await store.put('version', 'rt#1', version, 'rt', 1);
    });
    await pins.prune();
    expect(pinned?.kind).toBe('snapshot');
    const sha = pinned?.kind === 'snapshot' ? pinned.sha256 : '';
    expect(existsSync(join(snapshotRootOf(dataDir), sha))).toBe(true);
    await store.close();
  });
});
