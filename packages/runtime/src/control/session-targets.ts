import { type SessionTarget } from '../sessions/backend.js';
import { type Store } from './store.js';

/** The versions sessions start on now: what a cluster's warm-pool keeper keeps pools of. */
export function readyTargets(store: Store): SessionTarget[] {
  return store.list('runtime', { offset: 0, limit: 100_000 }).flatMap((runtime) => {
    const version = store.get('version', `${runtime.id}#${runtime.latestVersion}`);
    return runtime.status === 'READY' && version?.status === 'READY' ? [{ runtime, version }] : [];
  });
}

/** The versions whose sessions keep their storage: the latest, and any an endpoint serves or moves to. */
export function storedVersions(store: Store, runtimeId: string): number[] | undefined {
  const runtime = store.get('runtime', runtimeId);
  if (!runtime) return undefined;
  const endpoints = store.list('endpoint', { parent: runtimeId, offset: 0, limit: 100_000 });
  const served = endpoints.flatMap((e) => [e.liveVersion, e.targetVersion]);
  return [runtime.latestVersion, ...served.filter((v): v is number => v !== undefined)];
}
