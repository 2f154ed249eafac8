import { spawnSync } from 'node:child_process';
import { type IsolationSetting } from '../config.js';

export type IsolationMode = 'bwrap' | 'process-group';

export interface Isolation {
  mode: IsolationMode;
  /** Why this mode: shown once in the startup log. */
  reason: string;
  /** setpriv --pdeathsig: workers die with the runtime even when it is SIGKILLed. */
  pdeathsig: boolean;
}

/**
 * Namespaces, a read-only root, fresh /dev and /proc; the network namespace stays shared. Exported so
 * `agentrt doctor` probes bwrap with exactly the sandbox the runtime will ask for.
 */
export const SANDBOX_ARGS: readonly string[] = [
  '--unshare-pid',
  '--unshare-ipc',
  '--unshare-uts',
  '--die-with-parent',
  '--ro-bind',
  '/',
  '/',
  '--dev',
  '/dev',
  '--proc',
  '/proc',
];

function works(command: string, args: string[]): boolean {
  const result = spawnSync(command, args, { stdio: 'ignore', timeout: 5000 });
  return result.status === 0;
}

/** Decides once, at startup, how workers are isolated. */
export function detectIsolation(setting: IsolationSetting): Isolation {
  const pdeathsig = process.platform === 'linux' && works('setpriv', ['--pdeathsig', 'KILL', '--', 'true']);
  if (setting === 'none')
    return { mode: 'process-group', reason: 'isolation turned off (AGENTRT_ISOLATION=none)', pdeathsig };
  if (process.platform !== 'linux')
    return { mode: 'process-group', reason: `bwrap needs Linux (this is ${process.platform})`, pdeathsig };
  const ok = works('bwrap', [...SANDBOX_ARGS, 'true']);
  if (ok)
    return {
      mode: 'bwrap',
      reason: 'bwrap found: PID, IPC, UTS and mount namespaces, read-only root',
      pdeathsig,
    };
  const reason = 'bwrap is not on PATH or cannot create namespaces here';
  if (setting === 'bwrap') throw new Error(`AGENTRT_ISOLATION=bwrap but ${reason}`);
  return { mode: 'process-group', reason: `${reason}: process groups and private temp dirs only`, pdeathsig };
}

/**
 * The top-level folders of /tmp that hold any of `paths`. A fresh /tmp would hide them, so they are
 * bound back read-only: a checkout, a Node install or an artifact that lives under /tmp (a CI clone,
 * `mktemp -d`) must stay reachable, including the node_modules folders above the artifact.
 */
export function tmpRootsOf(paths: readonly string[]): string[] {
  const roots = new Set<string>();
  for (const path of paths) {
    const match = /^\/tmp\/[^/]+/.exec(path);
    if (match) roots.add(match[0]);
  }
  return [...roots];
}

/**
 * Wraps a worker command. Under bwrap the worker sees a read-only root, fresh /tmp, its own
 * writable session dir and nothing of `hiddenDirs` (the data dir holding every other session);
 * the network namespace is shared so it can listen on loopback. `readablePaths` (the Node binary,
 * preload modules) stay visible read-only even when they live under /tmp.
 */
export function isolate(
  isolation: Isolation,
  argv: string[],
  options: { sessionDir: string; cwd: string; hiddenDirs: string[]; readablePaths?: string[] },
): string[] {
  let out = argv;
  if (isolation.mode === 'bwrap') {
    out = [
      'bwrap',
      ...SANDBOX_ARGS,
      '--hostname',
      'agentrt-session',
      '--tmpfs',
      '/tmp',
      ...tmpRootsOf([options.cwd, ...argv, ...(options.readablePaths ?? [])]).flatMap((dir) => [
        '--ro-bind',
        dir,
        dir,
      ]),
      ...options.hiddenDirs.flatMap((dir) => ['--tmpfs', dir]),
      // The artifact stays visible (read-only) even when it lives under /tmp or the data dir.
      '--ro-bind',
      options.cwd,
      options.cwd,
      '--bind',
      options.sessionDir,
      options.sessionDir,
      '--chdir',
      options.cwd,
      '--',
      ...argv,
    ];
  }
  if (isolation.pdeathsig) out = ['setpriv', '--pdeathsig', 'KILL', '--', ...out];
  return out;
}
