import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectCgroups, createSessionCgroup } from '../sessions/cgroups.js';
import { createUsageSampler, parseProcStat } from './process-usage.js';

const cgroups = process.getuid?.() === 0 ? detectCgroups().layout : undefined;

describe('per-session usage from /proc', () => {
  it('reads the fields after a command name that holds spaces and parentheses', () => {
    const line =
      '4242 (node (worker) x) S 4200 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 11 0 100 1000000 2560 18446744073709551615';
    expect(parseProcStat(line)).toEqual({
      ppid: 4200,
      cpuTicks: 300,
      started: 100,
      reapedTicks: 10,
      rssPages: 2560,
    });
    expect(parseProcStat('garbage')).toBeUndefined();
  });

  it.skipIf(process.platform !== 'linux')('sums a process tree and integrates memory over time', async () => {
    // A shell that burns CPU in a child: the child's time counts towards the root's session.
    // It says when it runs: sampled right after spawn, it may still be in exec, with no memory yet.
    const child = spawn(
      'sh',
      ['-c', 'node -e "const t=Date.now(); while (Date.now()-t < 5000);" & echo up; wait'],
      {
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    try {
      await once(child.stdout, 'data');
      let clock = 1_000_000;
      const sampler = createUsageSampler(() => clock);
      const first = sampler.sample([{ key: 's', pid: child.pid! }]).get('s')!;
      expect(first.rssBytes).toBeGreaterThan(0);
      expect(first.memoryGbHours).toBe(0);
      clock += 3_600_000; // one hour later by the sampler's clock
      let second = sampler.sample([{ key: 's', pid: child.pid! }]).get('s')!;
      expect(second.memoryGbHours).toBeCloseTo((first.rssBytes + second.rssBytes) / 2 / 1e9, 6);
      // The busy child (not the root shell) burns the CPU time; a loaded machine may take a while.
      for (let i = 0; i < 100 && second.cpuSeconds < 0.1; i++) {
        await new Promise((r) => setTimeout(r, 50));
        second = sampler.sample([{ key: 's', pid: child.pid! }]).get('s')!;
      }
      expect(second.cpuSeconds).toBeGreaterThanOrEqual(0.1);
      expect(sampler.sample([{ key: 'gone', pid: 2 ** 22 + 1 }]).size).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe.skipIf(!cgroups)('per-session usage from the session cgroup (root runtime)', () => {
  it('counts a process that left the tree, which /proc cannot see as the session’s', async () => {
    const id = `usage-test-${process.pid}`;
    const procs = join(cgroups!.version === 2 ? cgroups!.root : cgroups!.memory, id, 'cgroup.procs');
    const group = createSessionCgroup(cgroups!, id, {
      memoryBytes: 256 * 1024 * 1024,
      vcpus: 1,
      pids: 32,
    });
    // A shell in the cgroup starts a CPU burner in a new session and exits at once: the burner is
    // reparented away from the tree the runtime would walk in /proc, but stays in the cgroup.
    const shell = spawn(
      'sh',
      ['-c', 'read go; setsid node -e "while (process.cpuUsage().user < 1e6);" >/dev/null 2>&1 &'],
      { stdio: ['pipe', 'ignore', 'ignore'] },
    );
    try {
      group.add(shell.pid!);
      shell.stdin!.end('go\n');
      await new Promise((r) => shell.once('exit', r));
      const sampler = createUsageSampler();
      const root = { key: 's', pid: shell.pid!, cgroup: () => group.usage() };
      let usage = sampler.sample([root]).get('s')!;
      for (let i = 0; i < 300 && usage.cpuSeconds < 1; i++) {
        await new Promise((r) => setTimeout(r, 50));
        usage = sampler.sample([root]).get('s')!;
      }
      expect(usage.source).toBe('cgroup');
      expect(usage.cpuSeconds).toBeGreaterThanOrEqual(1); // the burner's 1 s of CPU time
      expect(usage.rssBytes).toBeGreaterThan(0);
      // The same session read from /proc: its root is gone, so nothing is counted.
      expect(createUsageSampler().sample([{ key: 's', pid: shell.pid! }]).size).toBe(0);
    } finally {
      for (const pid of readFileSync(procs, 'utf8').split('\n').filter(Boolean))
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // already gone
        }
      for (let i = 0; i < 40; i++) {
        try {
          group.remove();
          break;
        } catch {
          await new Promise((r) => setTimeout(r, 100)); // its processes are still exiting
        }
      }
    }
  });
});
