import { readFileSync, readdirSync } from 'node:fs';

/** Linux reports CPU time in clock ticks (USER_HZ, 100 on every supported platform) and RSS in pages. */
const CLOCK_TICKS_PER_SECOND = 100;
const PAGE_BYTES = 4096;

export interface ProcessUsage {
  /** user + system CPU time of the process tree, including reaped children (cumulative, never falls). */
  cpuSeconds: number;
  /** Resident memory of the process tree now. */
  rssBytes: number;
  /** Resident memory integrated over the time between samples (cumulative). */
  memoryGbHours: number;
  /** Where the figures come from: the session's cgroup, or its process tree in /proc. */
  source: 'cgroup' | 'proc';
}

/** A session's cgroup figures (CPU of every process ever in it, memory charged to it now). */
export interface CgroupFigures {
  cpuSeconds: number;
  memoryBytes: number;
}

/** One session to sample: its worker's pid, and its cgroup's figures when it has one. */
export interface UsageRoot {
  key: string;
  pid: number;
  cgroup?: () => CgroupFigures | undefined;
}

export interface UsageSampler {
  /**
   * Samples each session: from its cgroup when it has one (every process it ever ran, however it
   * left the tree), else its process tree (the root pid and all its descendants). Sessions that are
   * gone are left out.
   */
  sample(roots: readonly UsageRoot[]): Map<string, ProcessUsage>;
}

/** A process as `/proc/<pid>/stat` gives it (times in clock ticks; `started` counts from boot). */
export interface ProcStat {
  ppid: number;
  cpuTicks: number;
  reapedTicks: number;
  started: number;
  rssPages: number;
}

/** `/proc/<pid>/stat`: the fields after the command name, which may itself hold spaces and ')'. */
export function parseProcStat(text: string): ProcStat | undefined {
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const n = (i: number) => Number(rest[i]);
  const stat = {
    ppid: n(1),
    cpuTicks: n(11) + n(12),
    reapedTicks: n(13) + n(14),
    started: n(19),
    rssPages: n(21),
  };
  return Object.values(stat).every(Number.isFinite) ? stat : undefined;
}

/** One process's `/proc/<pid>/stat`; undefined once it has exited (or with no procfs). */
export function readProcStat(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Whether a process runs (exists and is not a zombie): `/proc/<pid>/stat`'s state, after the name. */
export function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !'ZXx'.includes(stat.charAt(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

/** Host pids of the processes whose parent is `pid` (none once it is gone). */
export function childrenOf(pid: number): number[] {
  return [...readAllStats()].filter(([, stat]) => stat.ppid === pid).map(([child]) => child);
}

/** Every process's `/proc/<pid>/stat` by pid (none without procfs). */
export function readAllStats(): Map<number, ProcStat> {
  const stats = new Map<number, ProcStat>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return stats; // no procfs (not Linux): no usage figures
  }
  for (const entry of entries) {
    if (entry.charCodeAt(0) > 57) continue; // not a pid
    const stat = readProcStat(Number(entry)); // undefined: exited between readdir and read
    if (stat) stats.set(Number(entry), stat);
  }
  return stats;
}

/**
 * Per-session CPU and memory (what AgentCore's usage logs bill: vCPU-seconds and memory GB-hours per
 * session): the kernel's figures of the session's cgroup when it runs in one, else `/proc`, where a
 * worker is a process tree (bubblewrap, a shell, node and what it spawns) and each figure the sum
 * over the tree.
 */
export function createUsageSampler(now: () => number = Date.now): UsageSampler {
  const previous = new Map<
    string,
    { atMs: number; cpuSeconds: number; memoryGbHours: number; rssBytes: number }
  >();
  return {
    sample(roots) {
      const out = new Map<string, ProcessUsage>();
      if (roots.length === 0) {
        previous.clear();
        return out;
      }
      const fromCgroup = new Map<string, CgroupFigures>();
      for (const root of roots) {
        const figures = root.cgroup?.();
        if (figures) fromCgroup.set(root.key, figures);
      }
      // /proc is read only for the sessions without a cgroup.
      const stats = fromCgroup.size < roots.length ? readAllStats() : new Map<number, ProcStat>();
      const children = new Map<number, number[]>();
      for (const [pid, stat] of stats) {
        const list = children.get(stat.ppid);
        if (list) list.push(pid);
        else children.set(stat.ppid, [pid]);
      }
      const atMs = now();
      const seen = new Set<string>();
      for (const { key, pid } of roots) {
        const group = fromCgroup.get(key);
        let cpuNow: number;
        let rssBytes: number;
        if (group) {
          cpuNow = group.cpuSeconds;
          rssBytes = group.memoryBytes;
        } else {
          const root = stats.get(pid);
          if (!root) continue;
          let ticks = root.reapedTicks;
          let pages = 0;
          const stack = [pid];
          while (stack.length) {
            const p = stack.pop()!;
            const s = stats.get(p);
            if (!s) continue;
            ticks += s.cpuTicks;
            pages += s.rssPages;
            stack.push(...(children.get(p) ?? []));
          }
          cpuNow = ticks / CLOCK_TICKS_PER_SECOND;
          rssBytes = pages * PAGE_BYTES;
        }
        const before = previous.get(key);
        // Trapezoid between the two samples; the first sample starts the integral.
        const hours = before ? (atMs - before.atMs) / 3_600_000 : 0;
        const memoryGbHours =
          (before?.memoryGbHours ?? 0) + (((before?.rssBytes ?? rssBytes) + rssBytes) / 2 / 1e9) * hours;
        // A child that exited before its parent reaped it drops out of the sum for a moment.
        const cpuSeconds = Math.max(before?.cpuSeconds ?? 0, cpuNow);
        previous.set(key, { atMs, cpuSeconds, memoryGbHours, rssBytes });
        out.set(key, { cpuSeconds, rssBytes, memoryGbHours, source: group ? 'cgroup' : 'proc' });
        seen.add(key);
      }
      for (const key of previous.keys()) if (!seen.has(key)) previous.delete(key);
      return out;
    },
  };
}
