import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type CgroupLayout,
  createSessionCgroup,
  detectCgroups,
  layoutRoots,
  sweepStaleCgroups,
} from './cgroups.js';

const host = process.getuid?.() === 0 ? detectCgroups().layout : undefined;
/**
 * A cgroup folder of this test's own under agentrt's in each hierarchy: the runtimes other test files
 * start sweep agentrt's folder, and would take this test's aged cgroup before its own sweep does.
 */
const cgroups = host && ownLayout(host, `sweep-test-${process.pid}`);
function ownLayout(layout: CgroupLayout, name: string): CgroupLayout {
  if (layout.version === 2) {
    const root = join(layout.root, name);
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, 'cgroup.subtree_control'), '+memory +cpu +pids');
    return { version: 2, root };
  }
  const own = (dir: string) => (mkdirSync(join(dir, name), { recursive: true }), join(dir, name));
  const { memory, cpu, pids, cpuacct } = layout;
  return {
    version: 1,
    memory: own(memory),
    cpu: own(cpu),
    pids: own(pids),
    cpuacct: cpuacct && own(cpuacct),
  };
}
const limits = { memoryBytes: 256 * 1024 * 1024, vcpus: 1, pids: 64 };
const dirsOf = (id: string) => layoutRoots(cgroups!).map((root) => join(root, id));
const memoryDir = (id: string) => dirsOf(id)[0]!;
/** Dates a cgroup as made an hour ago (kernfs keeps the times it is given). */
const age = (id: string) => {
  const then = new Date(Date.now() - 3_600_000);
  for (const dir of dirsOf(id)) utimesSync(dir, then, then);
};

describe.skipIf(!cgroups)('sweeping session cgroups left by earlier runtimes (root)', () => {
  afterAll(() => {
    for (const root of layoutRoots(cgroups!)) rmdirSync(root);
  });
  it('removes empty ones past the age, keeps young ones and any with a process in it', async () => {
    const left = `sweep-left-${process.pid}`;
    const busy = `sweep-busy-${process.pid}`;
    createSessionCgroup(cgroups!, left, limits);
    const group = createSessionCgroup(cgroups!, busy, limits);
    const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      group.add(sleeper.pid!);
      // Young: a runtime may be about to move its worker in.
      sweepStaleCgroups(cgroups!);
      expect(existsSync(memoryDir(left))).toBe(true);
      age(left);
      age(busy);
      expect(sweepStaleCgroups(cgroups!)).toBe(dirsOf(left).length);
      for (const dir of dirsOf(left)) expect(existsSync(dir)).toBe(false);
      for (const dir of dirsOf(busy)) expect(existsSync(dir)).toBe(true);
    } finally {
      sleeper.kill('SIGKILL');
      await new Promise((r) => sleeper.once('exit', r));
      for (let i = 0; i < 40; i++) {
        try {
          group.remove();
          break;
        } catch {
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    }
    expect(existsSync(memoryDir(busy))).toBe(false);
  });
});
