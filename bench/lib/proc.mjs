// What /proc says about a process or one of its threads (Linux): the benchmarks' one reader of
// /proc/<pid>/stat, whose command name may itself hold spaces and ')'.
import { readFileSync } from 'node:fs';

/** USER_HZ, the unit of /proc's CPU times (100 on Linux). */
const TICKS_PER_SECOND = 100;

/**
 * A `/proc/<pid>/stat` or `/proc/<pid>/task/<tid>/stat`: the command name, the fields after it
 * ([1] parent pid, [2] process group, [11] and [12] user and system ticks) and the CPU time in ms;
 * undefined once the process or thread is gone.
 */
export function readStat(path) {
  let stat;
  try {
    stat = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  const close = stat.lastIndexOf(')');
  const fields = stat.slice(close + 2).split(' ');
  const cpuMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  return { name: stat.slice(stat.indexOf('(') + 1, close), fields, cpuMs };
}

/** CPU time (user + system, all threads) a process has used, in ms; NaN once it is gone. */
export const cpuMsOf = (pid) => readStat(`/proc/${pid}/stat`)?.cpuMs ?? NaN;
