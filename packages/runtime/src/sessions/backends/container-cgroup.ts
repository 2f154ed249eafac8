import { readdirSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  type CgroupLayout,
  type CgroupUsage,
  type SessionLimits,
  CGROUP_GROUP,
  createSessionCgroup,
  read,
  removeWhenEmpty,
} from '../cgroups.js';

const CGROUP_BASE = '/sys/fs/cgroup';

/** A session container's place in the session's own cgroup, and what that cgroup counts. */
export interface ContainerCgroup {
  /** The engine's flags: nest the container in the session's cgroup, or set the limits itself. */
  args: string[];
  /** Which limit killed a process of the session, if one did (kept once the cgroup is gone). */
  limitHit(): string | undefined;
  /** CPU and memory of every process the container ran, exited ones included. */
  usage(): CgroupUsage | undefined;
  /**
   * Once the container exited, before it is removed: keeps which limit killed it (v1 counts an OOM
   * kill in the container's own folder, which its removal takes away).
   */
  settle(): void;
  /** Once the container is removed: the session's cgroup, and the folders the engine made for it. */
  release(): void;
  /** The folder whose cgroup.procs (and its sub-folders') list the container's processes. */
  procsDir: string | undefined;
}

/**
 * The session's cgroup (the same limits, figures and messages as a bwrap session's), which the
 * container is nested in with `--cgroup-parent`, so its limits, usage and the limit that killed it
 * are read as for any session. Without cgroups (`layout` undefined) the engine sets the limits
 * itself from `fallback` and nothing is read.
 */
export function containerCgroup(
  layout: CgroupLayout | undefined,
  id: string,
  limits: SessionLimits,
  fallback: string[],
): ContainerCgroup {
  if (!layout)
    return {
      args: fallback,
      limitHit: () => undefined,
      usage: () => undefined,
      settle: () => undefined,
      release: () => undefined,
      procsDir: undefined,
    };
  const group = createSessionCgroup(layout, id, limits);
  // The engine removes a container's own cgroup as soon as it exits, and v1 counted its OOM kill
  // there: the session's folder keeps only that the limit was hit (memory.failcnt).
  const failcnt = layout.version === 1 ? join(layout.memory, id, 'memory.failcnt') : undefined;
  const hit = () =>
    group.limitHit() ??
    (failcnt && Number(read(failcnt).trim()) > 0
      ? `memory limit of ${Math.round(limits.memoryBytes / 2 ** 20)} MiB reached: the session used all of it and its container ended (AGENTRT_SESSION_MEMORY_MB)`
      : undefined);
  let live = true;
  let lastHit: string | undefined;
  return {
    args: ['--cgroup-parent', `/${CGROUP_GROUP}/${id}`],
    procsDir: join(layout.version === 2 ? layout.root : layout.pids, id),
    limitHit: () => (live ? hit() : lastHit),
    usage: () => (live ? group.usage() : undefined),
    settle: () => {
      if (!live) return;
      lastHit = hit();
      live = false;
    },
    release: () => {
      lastHit ??= live ? hit() : undefined;
      live = false;
      removeWhenEmpty(group);
      removeWhenEmpty({ remove: () => removeEngineFolders(id) });
    },
  };
}

/** The engine makes the parent in every v1 hierarchy (blkio, devices, …): remove the empty ones. */
function removeEngineFolders(id: string): void {
  let busy: unknown;
  for (const controller of readdirSync(CGROUP_BASE)) {
    try {
      rmdirSync(join(CGROUP_BASE, controller, CGROUP_GROUP, id));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') busy = error;
    }
  }
  if (busy) throw busy;
}
