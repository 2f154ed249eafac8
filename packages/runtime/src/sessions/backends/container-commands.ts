import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ProcStat, readProcStat } from '../../telemetry/process-usage.js';
import { type CommandCgroup, read, withSubfolders } from '../cgroups.js';

/** A process as /proc/<pid>/stat gives it: its parent and when it started (clock ticks since boot). */
type Process = ProcStat & { pid: number };

function procStat(pid: number): Process | undefined {
  const stat = readProcStat(pid); // undefined: exited meanwhile
  return stat && { ...stat, pid };
}

/** Now, in the clock ticks /proc/<pid>/stat counts start times in (USER_HZ is 100 on Linux). */
function bootTicks(): number {
  return Math.floor(Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 100);
}

/** Host pids of every process in a cgroup folder and the folders right below it (the engine's). */
function cgroupPids(dir: string): number[] {
  return withSubfolders(dir).flatMap((d) =>
    read(join(d, 'cgroup.procs')).split('\n').filter(Boolean).map(Number),
  );
}

/**
 * Ends what a session container's commands leave running, their `setsid` daemons included: `podman
 * exec` puts a command in the container's own cgroup, beside the worker, so once the last command
 * running in the session ends, every process of the container that is neither its init, nor the
 * worker (init's first child) and its descendants, and that started after the first of those
 * commands, is killed. `procsDir` is the session cgroup's folder whose `cgroup.procs` (and its
 * sub-folders') list the container's processes; `initPid` the container's init on the host.
 */
export function createCommandReaper(procsDir: string, initPid: number): () => CommandCgroup {
  let running = 0;
  let batchStart = Infinity;
  const reap = () => {
    const stats = cgroupPids(procsDir)
      .map(procStat)
      .filter((s): s is Process => s !== undefined);
    const worker = stats
      .filter((s) => s.ppid === initPid)
      .sort((a, b) => a.started - b.started || a.pid - b.pid)[0];
    const keep = new Set([initPid, ...(worker ? [worker.pid] : [])]);
    let grew = true;
    while (grew) {
      grew = false;
      for (const s of stats)
        if (!keep.has(s.pid) && s.ppid !== initPid && keep.has(s.ppid)) {
          keep.add(s.pid);
          grew = true;
        }
    }
    for (const s of stats) if (!keep.has(s.pid) && s.started >= batchStart) kill(s.pid);
  };
  return () => {
    running++;
    batchStart = Math.min(batchStart, bootTicks());
    let done = false;
    return {
      procsFiles: [],
      killAll: () => {
        if (done) return;
        done = true;
        if (--running > 0) return; // another command of the session still runs: the last one reaps
        reap();
        batchStart = Infinity;
      },
      remove: () => undefined,
    };
  };
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // exited meanwhile
  }
}
