import { existsSync, lstatSync, readdirSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, sep } from 'node:path';

/** Where the session's bridges live inside the sandbox (the session's `run` dir is bound there). */
export const SANDBOX_RUN_DIR = '/run/agentrt';
/** The port a sandboxed worker listens on inside its own network namespace, as in a real container. */
export const SANDBOX_WORKER_PORT = 8080;
/** The session's home inside its sandbox: in the scratch tmpfs, so it shares its size limit. */
export const SCRATCH_HOME = '/tmp/.home';
/** The user and group a worker has inside its user namespace. */
export const SANDBOX_ID = 1000;

/**
 * The few files of /etc a process needs to resolve names, load shared libraries and check TLS
 * certificates. Nothing else of /etc (no shadow, no passwd of the host, no machine secrets).
 */
const ETC_ENTRIES = [
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'nsswitch.conf',
  'hosts',
  'host.conf',
  'gai.conf',
  'ssl',
  'ca-certificates',
  'ca-certificates.conf',
  'localtime',
  'alternatives',
  'mime.types',
  'protocols',
  'services',
  'os-release',
];

/** The devices a worker needs, without ptys: what bwrap's --dev makes, less devpts. */
const MINIMAL_DEV = [
  '--tmpfs',
  '/dev',
  ...['null', 'zero', 'full', 'random', 'urandom', 'tty'].flatMap((d) => [
    '--dev-bind',
    `/dev/${d}`,
    `/dev/${d}`,
  ]),
  ...['stdin', 'stdout', 'stderr'].flatMap((name, fd) => [
    '--symlink',
    `/proc/self/fd/${fd}`,
    `/dev/${name}`,
  ]),
  '--symlink',
  '/proc/self/fd',
  '/dev/fd',
  '--perms',
  '1777',
  '--dir',
  '/dev/shm',
];

/** The system's own programs and libraries (read-only); merged-/usr links stay links. */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

function isUnder(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

/** Every `node_modules` above a directory, nearest first (Node resolves packages upwards). */
export function nodeModulesAbove(artifactDir: string): string[] {
  const found: string[] = [];
  for (let dir = dirname(artifactDir); ; dir = dirname(dir)) {
    const modules = join(dir, 'node_modules');
    if (existsSync(modules)) found.push(modules);
    if (dir === dirname(dir)) return found;
  }
}

/**
 * The read-only paths an artifact needs besides itself: every `node_modules` folder above it, by
 * its real path, and the targets of the symlinks in them (npm workspaces link their packages
 * there). Paths already under another entry are dropped.
 */
export function dependencyPaths(artifactDir: string): string[] {
  return nodeModulesAbove(artifactDir).flatMap((modules) => {
    const real = realpathSync(modules);
    return [real, ...linkTargets(real)];
  });
}

/** The `node_modules` above an artifact that are links (a snapshot's to its workspace's), with their targets. */
export function dependencyLinks(artifactDir: string): { path: string; target: string }[] {
  return nodeModulesAbove(artifactDir)
    .filter((modules) => lstatSync(modules).isSymbolicLink())
    .map((path) => ({ path, target: readlinkSync(path) }));
}

/** Real paths that the top-level (and `@scope/`) symlinks of a node_modules folder point to. */
function linkTargets(modules: string): string[] {
  const targets: string[] = [];
  const visit = (dir: string, depth: number) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return; // unreadable: Node would not resolve through it either
    }
    for (const name of names) {
      const path = join(dir, name);
      let info;
      try {
        info = lstatSync(path);
      } catch {
        continue; // vanished while listing
      }
      if (info.isSymbolicLink()) {
        try {
          const target = realpathSync(path);
          if (!isUnder(target, modules) && statSync(target).isDirectory()) targets.push(target);
        } catch {
          // A dangling link resolves to nothing inside the sandbox either.
        }
      } else if (depth === 0 && name.startsWith('@') && info.isDirectory()) visit(path, 1);
    }
  };
  visit(modules, 0);
  return targets;
}

/** Keeps the shortest paths: a path inside another one is already visible through it. */
export function outermost(paths: readonly string[]): string[] {
  const sorted = [...new Set(paths.filter((p) => isAbsolute(p)))].sort((a, b) => a.length - b.length);
  const kept: string[] = [];
  for (const path of sorted) if (!kept.some((k) => isUnder(path, k))) kept.push(path);
  return kept;
}

export interface SandboxViewOptions {
  /** The artifact directory (read-only, the worker's cwd). */
  cwd: string;
  /** The worker's own command line: an absolute program outside the system dirs is bound read-only. */
  argv: readonly string[];
  /** Other files or folders to show read-only (the Node install, preload modules). */
  readablePaths: readonly string[];
  /** The session's host directory: holds `home`, `tmp`, `run` and the generated `etc` files. */
  sessionDir: string;
  /** sessionStorage: a host folder mounted read-write at `mountPath` (under /mnt). */
  storage?: { hostDir: string; mountPath: string } | undefined;
  /**
   * bwrap's full /dev, with ptys (/dev/pts). Without root, its devpts mount makes bwrap nest a second
   * user namespace that commands (nsenter) cannot enter, so a non-root runtime gets MINIMAL_DEV.
   */
  ptys: boolean;
  /** Size of the session's scratch tmpfs (/tmp, and HOME inside it). */
  scratchBytes: number;
  /** Generated /etc files (passwd, group, resolv.conf) in the session dir, bound read-only. */
  etcFiles: readonly string[];
  /** Folders hidden under an empty tmpfs when a readable path contains them (the data dir). */
  hiddenDirs?: readonly string[] | undefined;
}

/**
 * The bwrap arguments of the filesystem a worker sees: the system's programs and libraries, a few
 * /etc files, the Node install, the artifact and its dependencies — all read-only — plus its own
 * bridge dir, a sized scratch tmpfs at /tmp holding its home, and its session storage. Nothing else of the host exists inside.
 */
export function sandboxViewArgs(options: SandboxViewOptions): string[] {
  const args: string[] = [];
  const made = new Set(['/', '/tmp', '/run', '/etc', '/proc', '/dev', ...SYSTEM_DIRS]);
  const place = (dest: string) => {
    // bwrap would create missing parents as 0700 root folders the worker could not pass through.
    const parents: string[] = [];
    for (let dir = dirname(dest); !made.has(dir); dir = dirname(dir)) parents.unshift(dir);
    for (const dir of parents) {
      args.push('--perms', '0755', '--dir', dir);
      made.add(dir);
    }
    made.add(dest);
  };
  const bind = (source: string, dest: string, writable: boolean) => {
    place(dest);
    args.push(writable ? '--bind' : '--ro-bind', source, dest);
  };
  for (const dir of SYSTEM_DIRS) {
    let info;
    try {
      info = lstatSync(dir);
    } catch {
      continue; // not on this system
    }
    if (info.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else if (info.isDirectory()) args.push('--ro-bind', dir, dir);
  }
  args.push('--perms', '0755', '--dir', '/etc');
  for (const name of ETC_ENTRIES) args.push('--ro-bind-try', join('/etc', name), join('/etc', name));
  args.push('--proc', '/proc', ...(options.ptys ? ['--dev', '/dev'] : MINIMAL_DEV));
  for (const file of options.etcFiles) bind(join(options.sessionDir, 'etc', file), `/etc/${file}`, false);
  // The session's scratch space: a tmpfs of a fixed size (charged to its memory), never the host's disk.
  args.push('--perms', '1777', '--size', String(options.scratchBytes), '--tmpfs', '/tmp');
  args.push('--tmpfs', '/run');
  bind(join(options.sessionDir, 'run'), SANDBOX_RUN_DIR, true);
  const program = options.argv[0];
  const readable = outermost([
    options.cwd,
    ...dependencyPaths(options.cwd),
    ...options.readablePaths,
    ...(program && isAbsolute(program) ? [program] : []),
  ]).filter((p) => !SYSTEM_DIRS.some((d) => isUnder(p, d)) && existsSync(p));
  for (const path of readable) bind(path, path, false);
  for (const link of dependencyLinks(options.cwd)) {
    place(link.path);
    args.push('--symlink', link.target, link.path);
  }
  for (const dir of options.hiddenDirs ?? [])
    if (readable.some((p) => isUnder(dir, p) && dir !== p)) args.push('--tmpfs', dir);
  // HOME and TMPDIR name these host paths: inside, they lead into the scratch tmpfs (the sandbox's
  // first shell makes SCRATCH_HOME as the session's user before the worker runs).
  for (const [name, target] of [
    ['home', SCRATCH_HOME],
    ['tmp', '/tmp'],
  ] as const) {
    place(join(options.sessionDir, name));
    args.push('--symlink', target, join(options.sessionDir, name));
  }
  if (options.storage) bind(options.storage.hostDir, options.storage.mountPath, true);
  args.push('--chdir', options.cwd);
  return args;
}
