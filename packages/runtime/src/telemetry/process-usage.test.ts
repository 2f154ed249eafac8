import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createUsageSampler, parseProcStat } from './process-usage.js';

describe('per-session usage from /proc', () => {
  it('reads the fields after a command name that holds spaces and parentheses', () => {
    const line =
      '4242 (node (worker) x) S 4200 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 11 0 100 1000000 2560 18446744073709551615';
    expect(parseProcStat(line)).toEqual({ ppid: 4200, cpuTicks: 300, reapedTicks: 10, rssPages: 2560 });
    expect(parseProcStat('garbage')).toBeUndefined();
  });

  it.skipIf(process.platform !== 'linux')('sums a process tree and integrates memory over time', async () => {
    // A shell that burns CPU in a child: the child's time counts towards the root's session.
    const child = spawn('sh', ['-c', 'node -e "const t=Date.now(); while (Date.now()-t < 5000);" & wait'], {
      stdio: 'ignore',
    });
    try {
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
