import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../test-support.js';
import { SECURE_PATH, spawnHelper } from './helpers.js';
import { detectIsolation } from './isolation.js';
import { planSandbox, sandboxUserCannotRead } from './sandbox-session.js';
import { dependencyPaths, outermost } from './sandbox-view.js';

describe('sandbox view helpers', () => {
  it('keeps only the outermost of nested paths', () => {
    expect(outermost(['/a/b/c', '/a/b', '/x', '/a/bc', 'relative'])).toEqual(['/x', '/a/b', '/a/bc']);
  });

  it('finds the node_modules above an artifact and the workspace packages they link to', () => {
    const root = mkdtempSync(join(os.tmpdir(), 'agentrt-view-'));
    try {
      const app = join(root, 'repo', 'examples', 'app');
      const pkg = join(root, 'repo', 'packages', 'lib');
      mkdirSync(app, { recursive: true });
      mkdirSync(pkg, { recursive: true });
      mkdirSync(join(root, 'repo', 'node_modules', '@scope'), { recursive: true });
      symlinkSync(pkg, join(root, 'repo', 'node_modules', '@scope', 'lib'));
      expect(dependencyPaths(app)).toEqual([join(root, 'repo', 'node_modules'), pkg]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('planSandbox', () => {
  it('refuses a session dir too long for its Unix sockets, naming the setting to change', () => {
    expect(() =>
      planSandbox({
        isolation: {
          mode: 'bwrap',
          network: 'allowlist-only',
          reason: '',
          off: [],
          pdeathsig: false,
          hostIds: undefined,
          cgroups: undefined,
        },
        argv: ['node'],
        cwd: '/',
        sessionDir: `/tmp/${'d'.repeat(100)}`,
        readablePaths: [],
        hostPorts: [],
        otlpPort: 4318,
        hiddenDirs: [],
        workerId: 'long',
        scratchBytes: 64 * 1024 * 1024,
        limits: { memoryBytes: 1, vcpus: 1, pids: 1 },
      }),
    ).toThrow(/too long for its Unix sockets .*AGENTRT_DATA_DIR/);
  });
});

describe('the sandbox user reading the artifact (root runtime)', () => {
  const ids = { uid: 65534, gid: 65534 };
  const isolation = {
    mode: 'bwrap' as const,
    network: 'allowlist-only' as const,
    reason: '',
    off: [],
    pdeathsig: false,
    hostIds: ids,
    cgroups: undefined,
  };

  it('names the file, its mode and the settings when the artifact is not readable by that user', () => {
    const root = mkdtempSync(join(os.tmpdir(), 'agentrt-unreadable-'));
    try {
      const app = join(root, 'app');
      mkdirSync(join(app, 'dist'), { recursive: true });
      const main = join(app, 'dist', 'main.js');
      writeFileSync(main, 'console.log(1)');
      chmodSync(app, 0o755);
      chmodSync(main, 0o600);
      const plan = () =>
        planSandbox({
          isolation,
          argv: [process.execPath, main],
          cwd: app,
          sessionDir: join(root, 's'),
          readablePaths: [],
          hostPorts: [],
          otlpPort: 4318,
          hiddenDirs: [],
          workerId: 'unreadable',
          scratchBytes: 64 * 1024 * 1024,
          limits: { memoryBytes: 1, vcpus: 1, pids: 1 },
        });
      expect(plan).toThrow(
        /host uid 65534\) cannot read the artifact: .*main\.js \(mode 0600, .*AGENTRT_SANDBOX_UID/,
      );
      chmodSync(main, 0o644);
      chmodSync(join(app, 'dist'), 0o700);
      expect(sandboxUserCannotRead(app, [process.execPath, main], ids)).toMatch(/dist \(mode 0700/);
      chmodSync(join(app, 'dist'), 0o711);
      expect(sandboxUserCannotRead(app, [process.execPath, main], ids)).toBeUndefined();
      chmodSync(app, 0o700);
      expect(sandboxUserCannotRead(app, [process.execPath, main], ids)).toMatch(/app \(mode 0700/);
      // The owner's own bits apply to the owner, whatever the others may do.
      const owner = { uid: process.getuid!(), gid: 65534 };
      expect(sandboxUserCannotRead(app, [process.execPath, main], owner)).toBeUndefined();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

const isolation = (() => {
  try {
    return detectIsolation({ setting: 'auto', sandboxIds: { uid: 65534, gid: 65534 } });
  } catch {
    return undefined; // root without a sandbox: the runtime refuses to start; nothing to probe here
  }
})();

/** Without the runtime's fd 3/4 pipes: drop the info/block options bwrap would wait on. */
function withoutRuntimeFds(argv: string[]): string[] {
  const fdOptions = ['--info-fd', '--block-fd'];
  return argv.filter((a, i, all) => !fdOptions.includes(a) && !fdOptions.includes(all[i - 1]!));
}

/** Starts a helper chain the way the runtime does (spawnHelper), collecting its output. */
function runHelper(argv: string[], cwd: string, tenantEnv: Record<string, string>) {
  const child = spawnHelper(argv, { cwd, tenantEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: false });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const done = new Promise<{ stdout: string; stderr: string }>((resolve) =>
    child.on('close', () => {
      clearTimeout(timer);
      resolve({ stdout, stderr });
    }),
  );
  return { child, done, stdout: () => stdout };
}

// A checkout cloned under /tmp (as CI and `mktemp -d` do) must keep working inside the sandbox:
// the artifact, and the node_modules above it, stay readable; the data dir does not.
describe.skipIf(isolation?.mode !== 'bwrap')('bwrap sandbox with an artifact under /tmp', () => {
  const root = mkdtempSync('/tmp/agentrt-iso-');
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('runs the artifact, resolves its dependencies from above, and hides the data dir', async () => {
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
    const plan = planSandbox({
      isolation: { ...isolation!, network: 'allowlist-only' },
      argv: [process.execPath, 'main.cjs'],
      cwd: app,
      sessionDir,
      readablePaths: [join(process.execPath, '..', '..')],
      hostPorts: [],
      otlpPort: 4318,
      hiddenDirs: [dataDir],
      workerId: 'iso-test',
      scratchBytes: 64 * 1024 * 1024,
      limits: { memoryBytes: 256 * 1024 * 1024, vcpus: 1, pids: 64 },
    });
    const result = await runHelper(withoutRuntimeFds(plan.argv), app, {}).done;
    expect(result.stderr).toBe('');
    expect(result.stdout.trim().split('\n')).toEqual(['dep loaded', 'data hidden']);
  });

  it("hands the tenant's environment to the worker only, never to the helpers in front of it", async () => {
    const envApp = join(root, 'env-app');
    mkdirSync(envApp, { mode: 0o755 });
    const plan = planSandbox({
      isolation: { ...isolation!, network: 'allowlist-only' },
      argv: ['/bin/sh', '-c', 'printf "%s\\n" "$SECRET_OF_THE_TENANT"; sleep 2'],
      cwd: envApp,
      sessionDir: join(root, 'env-session'),
      readablePaths: [],
      hostPorts: [],
      otlpPort: 4318,
      hiddenDirs: [],
      workerId: 'iso-env',
      scratchBytes: 64 * 1024 * 1024,
      limits: { memoryBytes: 256 * 1024 * 1024, vcpus: 1, pids: 64 },
    });
    const value = "it's 'quoted' $HOME `id` \\n end";
    const run = runHelper(withoutRuntimeFds(plan.argv), envApp, {
      SECRET_OF_THE_TENANT: value,
      LD_PRELOAD: '/nonexistent.so',
    });
    await waitFor(() => run.stdout().includes('\n'), 10_000, 'the worker printed');
    // The helper the runtime spawned (setpriv, then bwrap in the same process) runs without it.
    const helperEnv = readFileSync(`/proc/${run.child.pid}/environ`, 'utf8').split('\0');
    expect(helperEnv.filter(Boolean).sort()).toEqual(['LANG=C', `PATH=${SECURE_PATH}`]);
    const result = await run.done;
    expect(result.stdout.trim()).toBe(value);
  });
});
