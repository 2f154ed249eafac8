import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { detectIsolation, isolate, tmpRootsOf } from './isolation.js';

describe('tmpRootsOf', () => {
  it('names the top-level /tmp folder of each path once, and nothing outside /tmp', () => {
    expect(
      tmpRootsOf(['/tmp/ci/.node/bin/node', '/tmp/ci/agents/a', '/tmp/other', '/work/x', 'node']),
    ).toEqual(['/tmp/ci', '/tmp/other']);
  });
});

const isolation = detectIsolation('auto');

// A checkout cloned under /tmp (as CI and `mktemp -d` do) must keep working inside the sandbox's
// fresh /tmp: the artifact, and the node_modules above it, stay readable; the data dir does not.
describe.skipIf(isolation.mode !== 'bwrap')('bwrap sandbox with an artifact under /tmp', () => {
  const root = mkdtempSync('/tmp/agentrt-iso-');
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('runs the artifact, resolves its dependencies from above, and hides the data dir', () => {
    const app = join(root, 'checkout', 'agents', 'app');
    const dep = join(root, 'checkout', 'node_modules', 'dep');
    const dataDir = join(root, 'checkout', '.data');
    const sessionDir = join(dataDir, 'sessions', 'one');
    for (const dir of [app, dep, sessionDir]) mkdirSync(dir, { recursive: true });
    writeFileSync(join(dep, 'index.js'), 'module.exports = "dep loaded";');
    writeFileSync(join(dataDir, 'secret.txt'), 'another session');
    writeFileSync(
      join(app, 'main.cjs'),
      `const fs = require('node:fs');
       console.log(require('dep'));
       console.log(fs.existsSync(${JSON.stringify(join(dataDir, 'secret.txt'))}) ? 'data visible' : 'data hidden');`,
    );
    const argv = isolate(isolation, [process.execPath, 'main.cjs'], {
      sessionDir,
      cwd: app,
      hiddenDirs: [dataDir],
      readablePaths: [process.execPath],
    });
    const result = spawnSync(argv[0]!, argv.slice(1), { cwd: app, encoding: 'utf8', timeout: 20_000 });
    expect(result.stderr).toBe('');
    expect(result.stdout.trim().split('\n')).toEqual(['dep loaded', 'data hidden']);
  });
});
