import { readdirSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  type CgroupLayout,
  type CgroupUsage,
  type SessionLimits,
  CGROUP_GROUP,
  createSessionCgroup,
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
      release: () => undefined,
      procsDir: undefined,
    };
  const group = createSessionCgroup(layout, id, limits);
  let live = true;
  let lastHit: string | undefined;
  return {
    args: ['--cgroup-parent', `/${CGROUP_GROUP}/${id}`],
    procsDir: join(layout.version === 2 ? layout.root : layout.pids, id),
    limitHit: () => (live ? group.limitHit() : lastHit),
    usage: () => (live ? group.usage() : undefined),
    release: () => {
      lastHit = group.limitHit();
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
