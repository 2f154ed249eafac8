import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { requireHelper } from './helpers.js';

/** Per-session resource limits (the hosted service's defaults: 2 vCPU, 8 GiB). */
export interface SessionLimits {
  memoryBytes: number;
  /** CPU time per wall-clock second, in CPUs (CFS quota / period). */
  vcpus: number;
  /** Most processes and threads alive at once. */
  pids: number;
}

/** Where the per-session cgroups are made: v2 (one unified tree) or v1 (one tree per controller). */
export type CgroupLayout =
  | { version: 2; root: string }
  | { version: 1; memory: string; cpu: string; pids: string; cpuacct: string | undefined };

/** What a session's cgroup has counted: the kernel's figures for every process ever in it. */
export interface CgroupUsage {
  /** CPU time of all its processes, exited ones included (cumulative). */
  cpuSeconds: number;
  /** Memory charged to it now (memory.current; v1 memory.usage_in_bytes). */
  memoryBytes: number;
  /** The most memory it was charged at once. */
  memoryPeakBytes: number;
}

/** One session's cgroup(s). */
export interface SessionCgroup {
  /** Moves a process (and the children it forks later) into the cgroup. */
  add(pid: number): void;
  /** Why the session's processes died, when a limit was the cause. */
  limitHit(): string | undefined;
  /** CPU and memory as the kernel counts them for the session (its usage figures). */
  usage(): CgroupUsage;
  /** Removes the cgroup(s) once every process in them has exited. */
  remove(): void;
  /** A cgroup below this one for one command: its processes count against the session's limits. */
  child(name: string): CommandCgroup;
}

/** The cgroup(s) of one command inside its session's, so that all it started can be found and ended. */
export interface CommandCgroup {
  /** The `cgroup.procs` files a process writes its pid to, to join (one per v1 hierarchy). */
  procsFiles: string[];
  /** SIGKILLs every process in it, `setsid` daemons included. */
  killAll(): void;
  remove(): void;
}

/** The folder of agentrt's cgroups in each hierarchy. */
export const CGROUP_GROUP = 'agentrt';
const GROUP = CGROUP_GROUP;
/** How often killAll looks again for processes forked while it was killing. */
const KILL_ROUNDS = 20;
const CFS_PERIOD_US = 100_000;

function writable(path: string): boolean {
  try {
    // A cgroup tree we may create in: root here, or one delegated to the runtime's user.
    mkdirSync(join(path, GROUP), { recursive: true });
    accessSync(join(path, GROUP), constants.W_OK); // it may exist already, made by a root runtime
    return true;
  } catch {
    return false;
  }
}

/**
 * Finds where per-session cgroups can be made: the unified v2 tree when it is mounted at
 * /sys/fs/cgroup with the memory, cpu and pids controllers, else the v1 memory, cpu and pids trees.
 * Undefined (with the reason) when neither is usable, e.g. the runtime is not root.
 */
export function detectCgroups(base = '/sys/fs/cgroup'): { layout?: CgroupLayout; reason?: string } {
  const controllers = join(base, 'cgroup.controllers');
  if (existsSync(controllers)) {
    const have = readFileSync(controllers, 'utf8').trim().split(/\s+/);
    const missing = ['memory', 'cpu', 'pids'].filter((c) => !have.includes(c));
    if (missing.length > 0) return { reason: `cgroup v2 lacks the ${missing.join(', ')} controller(s)` };
    if (!writable(base)) return { reason: `cannot create cgroups under ${base} (not root, no delegation)` };
    try {
      writeFileSync(join(base, GROUP, 'cgroup.subtree_control'), '+memory +cpu +pids');
    } catch (error) {
      return { reason: `cannot enable memory, cpu and pids controllers: ${(error as Error).message}` };
    }
    return { layout: { version: 2, root: join(base, GROUP) } };
  }
  const trees = { memory: join(base, 'memory'), cpu: join(base, 'cpu'), pids: join(base, 'pids') };
  const absent = Object.entries(trees).filter(([, dir]) => !existsSync(join(dir, 'cgroup.procs')));
  if (absent.length > 0)
    return { reason: `no cgroup v2 and no cgroup v1 ${absent.map(([name]) => name).join(', ')} hierarchy` };
  if (!Object.values(trees).every(writable))
    return { reason: `cannot create cgroups under ${base} (not root, no delegation)` };
  // cpuacct (CPU seconds used) is its own hierarchy on some hosts, folded into cpu on others.
  const cpuacct = join(base, 'cpuacct');
  const separateAcct =
    existsSync(join(cpuacct, 'cgroup.procs')) && !existsSync(join(trees.cpu, 'cpuacct.usage'));
  return {
    layout: {
      version: 1,
      memory: join(trees.memory, GROUP),
      cpu: join(trees.cpu, GROUP),
      pids: join(trees.pids, GROUP),
      cpuacct: separateAcct && writable(cpuacct) ? join(cpuacct, GROUP) : undefined,
    },
  };
}

/** The folders the session cgroups are made in: one on v2, one per hierarchy on v1. */
export function layoutRoots(layout: CgroupLayout): string[] {
  return layout.version === 2
    ? [layout.root]
    : [layout.memory, layout.cpu, layout.pids, ...(layout.cpuacct ? [layout.cpuacct] : [])];
}

/**
 * Removes the session cgroups that earlier runtimes left behind: a runtime that exits (or is killed)
 * right after its last worker cannot wait for the kernel to let the cgroup go. Only empty ones older
 * than `olderThanMs` are touched, so a cgroup another runtime just made for a session it is starting
 * (made and joined within one tick) is never taken. Best effort; returns how many it removed.
 */
export function sweepStaleCgroups(layout: CgroupLayout, olderThanMs = 60_000): number {
  const roots = layoutRoots(layout);
  const cutoff = Date.now() - olderThanMs;
  let removed = 0;
  for (const root of roots) {
    let names: string[];
    try {
      names = readdirSync(root, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      continue;
    }
    for (const name of names) {
      const dir = join(root, name);
      try {
        if (statSync(dir).mtimeMs > cutoff || read(join(dir, 'cgroup.procs')).trim() !== '') continue;
        rmdirSync(dir);
        removed++;
      } catch {
        // Busy (processes still exiting) or gone already: the next start tries again.
      }
    }
  }
  return removed;
}

/** A cgroup file's text, or '' once the cgroup is gone. */
export function read(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return ''; // gone with its cgroup
  }
}

function field(text: string, name: string): number {
  const match = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
  return match ? Number(match[1]) : 0;
}

/**
 * OOM kills under a v1 memory cgroup: v1 counts a kill in the cgroup of the process killed, so the
 * folders below (a command's, a container's) count too, though the limit hit was this one's.
 */
function oomKillsV1(dir: string): number {
  return withSubfolders(dir).reduce(
    (sum, d) => sum + field(read(join(d, 'memory.oom_control')), 'oom_kill'),
    0,
  );
}

/** A cgroup folder and the folders right below it (a command's, an engine's container); [] once gone. */
export function withSubfolders(dir: string): string[] {
  try {
    const below = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory());
    return [dir, ...below.map((e) => join(dir, e.name))];
  } catch {
    return []; // gone with its cgroup
  }
}

const mib = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MiB`;

/** Creates the cgroup(s) of one worker with its limits. */
export function createSessionCgroup(layout: CgroupLayout, id: string, limits: SessionLimits): SessionCgroup {
  const quota = String(Math.max(1000, Math.round(limits.vcpus * CFS_PERIOD_US)));
  const memoryLimit = `memory limit of ${mib(limits.memoryBytes)} reached: the kernel killed a process of this session (AGENTRT_SESSION_MEMORY_MB)`;
  const pidsLimit = `process limit of ${limits.pids} reached: fork failed in this session (AGENTRT_SESSION_PIDS)`;
  if (layout.version === 2) {
    const dir = join(layout.root, id);
    mkdirSync(dir);
    writeFileSync(join(dir, 'memory.max'), String(limits.memoryBytes));
    writeFileSync(join(dir, 'memory.swap.max'), '0');
    writeFileSync(join(dir, 'cpu.max'), `${quota} ${CFS_PERIOD_US}`);
    writeFileSync(join(dir, 'pids.max'), String(limits.pids));
    return {
      add: (pid) => writeFileSync(join(dir, 'cgroup.procs'), String(pid)),
      limitHit: () => {
        if (field(read(join(dir, 'memory.events')), 'oom_kill') > 0) return memoryLimit;
        if (field(read(join(dir, 'pids.events')), 'max') > 0) return pidsLimit;
        return undefined;
      },
      usage: () => ({
        cpuSeconds: field(read(join(dir, 'cpu.stat')), 'usage_usec') / 1e6,
        memoryBytes: Number(read(join(dir, 'memory.current')).trim()) || 0,
        memoryPeakBytes: Number(read(join(dir, 'memory.peak')).trim()) || 0,
      }),
      remove: () => rmdirSync(dir),
      child: (name) => createCommandCgroup([join(dir, name)]),
    };
  }
  const dirs: Record<string, string> = {
    memory: join(layout.memory, id),
    cpu: join(layout.cpu, id),
    pids: join(layout.pids, id),
  };
  if (layout.cpuacct) dirs.cpuacct = join(layout.cpuacct, id);
  const acct = dirs.cpuacct ?? dirs.cpu!;
  for (const dir of Object.values(dirs)) mkdirSync(dir);
  writeFileSync(join(dirs.memory!, 'memory.limit_in_bytes'), String(limits.memoryBytes));
  // Without swap accounting (memsw) swap is not limited; these hosts have none configured.
  writeFileSync(join(dirs.cpu!, 'cpu.cfs_period_us'), String(CFS_PERIOD_US));
  writeFileSync(join(dirs.cpu!, 'cpu.cfs_quota_us'), quota);
  writeFileSync(join(dirs.pids!, 'pids.max'), String(limits.pids));
  return {
    add: (pid) => {
      for (const dir of Object.values(dirs)) writeFileSync(join(dir, 'cgroup.procs'), String(pid));
    },
    limitHit: () => {
      if (oomKillsV1(dirs.memory!) > 0) return memoryLimit;
      if (field(read(join(dirs.pids!, 'pids.events')), 'max') > 0) return pidsLimit;
      return undefined;
    },
    usage: () => ({
      cpuSeconds: Number(read(join(acct, 'cpuacct.usage')).trim()) / 1e9 || 0,
      memoryBytes: Number(read(join(dirs.memory!, 'memory.usage_in_bytes')).trim()) || 0,
      memoryPeakBytes: Number(read(join(dirs.memory!, 'memory.max_usage_in_bytes')).trim()) || 0,
    }),
    remove: () => {
      for (const dir of Object.values(dirs)) rmdirSync(dir);
    },
    // The pids hierarchy first: the one whose members killAll reads.
    child: (name) =>
      createCommandCgroup(
        [dirs.pids!, dirs.memory!, dirs.cpu!, ...(dirs.cpuacct ? [dirs.cpuacct] : [])].map((d) =>
          join(d, name),
        ),
      ),
  };
}

/** Makes the command cgroup folders; the first one's members are the ones killed. */
function createCommandCgroup(dirs: string[]): CommandCgroup {
  for (const dir of dirs) mkdirSync(dir);
  const members = join(dirs[0] as string, 'cgroup.procs');
  const kill = join(dirs[0] as string, 'cgroup.kill');
  return {
    procsFiles: dirs.map((d) => join(d, 'cgroup.procs')),
    killAll: () => {
      if (existsSync(kill)) return writeFileSync(kill, '1'); // v2, Linux 5.14+: all at once
      for (let round = 0; round < KILL_ROUNDS; round++) {
        const pids = read(members).split('\n').filter(Boolean).map(Number);
        if (pids.length === 0) return;
        for (const pid of pids) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // exited meanwhile
          }
        }
      }
    },
    remove: () => {
      for (const dir of [...dirs].reverse()) rmdirSync(dir);
    },
  };
}

/**
 * `argv` behind a shell that first moves itself into `procsFiles` (so does everything it execs and
 * forks). The shell runs on the host by absolute path with HELPER_ENV; the files are the runtime's.
 */
export function joinCgroupArgv(procsFiles: readonly string[], argv: readonly string[]): string[] {
  const join = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';
  return [requireHelper('sh'), '-c', join, 'agentrt-join', ...procsFiles, '--', ...argv];
}

/** A cgroup can only go once its last process has: retry for a few seconds after it emptied. */
export function removeWhenEmpty(group: { remove(): void }, attempt = 0): void {
  try {
    group.remove();
  } catch {
    // Processes still exiting (EBUSY): try again shortly.
    if (attempt < 20) setTimeout(() => removeWhenEmpty(group, attempt + 1), 250).unref();
  }
}
