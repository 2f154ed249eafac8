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
}

export interface UsageSampler {
  /** Samples each tree (a root pid and all its descendants); trees that are gone are left out. */
  sample(roots: readonly { key: string; pid: number }[]): Map<string, ProcessUsage>;
}

interface ProcStat {
  ppid: number;
  cpuTicks: number;
  reapedTicks: number;
  rssPages: number;
}

/** `/proc/<pid>/stat`: the fields after the command name, which may itself hold spaces and ')'. */
export function parseProcStat(text: string): ProcStat | undefined {
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const n = (i: number) => Number(rest[i]);
  const stat = { ppid: n(1), cpuTicks: n(11) + n(12), reapedTicks: n(13) + n(14), rssPages: n(21) };
  return Object.values(stat).every(Number.isFinite) ? stat : undefined;
}

function readAllStats(): Map<number, ProcStat> {
  const stats = new Map<number, ProcStat>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return stats; // no procfs (not Linux): no usage figures
  }
  for (const entry of entries) {
    if (entry.charCodeAt(0) > 57) continue; // not a pid
    try {
      const stat = parseProcStat(readFileSync(`/proc/${entry}/stat`, 'utf8'));
      if (stat) stats.set(Number(entry), stat);
    } catch {
      // the process exited between readdir and read
    }
  }
  return stats;
}

/**
 * Per-session CPU and memory from `/proc` (what AgentCore's usage logs bill: vCPU-seconds and
 * memory GB-hours per session). A worker is a process tree (bubblewrap, a shell, node and what it
 * spawns), so each figure is the sum over the tree.
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
      const stats = readAllStats();
      const children = new Map<number, number[]>();
      for (const [pid, stat] of stats) {
        const list = children.get(stat.ppid);
        if (list) list.push(pid);
        else children.set(stat.ppid, [pid]);
      }
      const atMs = now();
      const seen = new Set<string>();
      for (const { key, pid } of roots) {
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
        const rssBytes = pages * PAGE_BYTES;
        const before = previous.get(key);
        // Trapezoid between the two samples; the first sample starts the integral.
        const hours = before ? (atMs - before.atMs) / 3_600_000 : 0;
        const memoryGbHours =
          (before?.memoryGbHours ?? 0) + (((before?.rssBytes ?? rssBytes) + rssBytes) / 2 / 1e9) * hours;
        // A child that exited before its parent reaped it drops out of the sum for a moment.
        const cpuSeconds = Math.max(before?.cpuSeconds ?? 0, ticks / CLOCK_TICKS_PER_SECOND);
        previous.set(key, { atMs, cpuSeconds, memoryGbHours, rssBytes });
        out.set(key, { cpuSeconds, rssBytes, memoryGbHours });
        seen.add(key);
      }
      for (const key of previous.keys()) if (!seen.has(key)) previous.delete(key);
      return out;
    },
  };
}
