import { type Logger } from '../logger.js';
import { type SessionTarget, sessionStorageMount } from './backend.js';
import { DEMAND_WINDOW_MS, createWarmDemand } from './warm-demand.js';
import { type Worker } from './worker.js';

/** A pre-started worker, adopted by the next new session of its version. */
export interface PooledWorker {
  worker: Worker;
  sessionDir: string;
  /** Tells the worker's telemetry relay which session it now serves. */
  adopt: (sessionId: string) => void;
  ready: Promise<void>;
  isReady: boolean;
}

/** What the pool needs of the session manager: how to start a ready worker, in its turn. */
export interface WarmPoolOptions {
  floor: number;
  cap: number;
  stopGraceMs: number;
  logger: Logger;
  closing: () => boolean;
  /** Starts a worker for the version in a start slot; `onWorker` gets it as soon as it is spawned. */
  start: (
    target: SessionTarget,
    onWorker: (started: Pick<PooledWorker, 'worker' | 'sessionDir' | 'adopt'>) => void,
  ) => Promise<void>;
}

const keyOf = (runtimeId: string, version: number) => `${runtimeId}#${version}`;

/**
 * Pre-started workers per runtime version, as many as its recent demand asks (createWarmDemand):
 * each new session records demand and takes a ready worker when there is one; the pool grows back
 * to the target, and shrinks once the demand has aged out.
 */
export function createWarmPool(options: WarmPoolOptions) {
  const pools = new Map<string, PooledWorker[]>();
  const demand = createWarmDemand(options.floor, options.cap);
  const rechecks = new Map<string, NodeJS.Timeout>();
  const retire = (entry: PooledWorker, grace = options.stopGraceMs) =>
    entry.ready.then(
      () => entry.worker.stop(grace),
      () => entry.worker?.stop(0),
    );

  const add = (target: SessionTarget, pool: PooledWorker[]) => {
    const entry: PooledWorker = {
      worker: undefined as unknown as Worker,
      sessionDir: '',
      adopt: () => undefined,
      ready: Promise.resolve(),
      isReady: false,
    };
    pool.push(entry);
    const drop = () => {
      const i = pool.indexOf(entry);
      if (i >= 0) pool.splice(i, 1);
    };
    entry.ready = options.start(target, (started) => {
      Object.assign(entry, started);
      started.worker.onExit(() => entry.worker === started.worker && drop());
    });
    entry.ready.then(
      () => (entry.isReady = !options.closing()),
      (error: unknown) => {
        drop();
        void entry.worker?.stop(0);
        options.logger.warn('warm pool worker failed to start', {
          runtimeId: target.runtime.id,
          version: target.version.version,
          error: (error as Error).message,
        });
      },
    );
  };

  /** Brings the version's pool to its target: starts the missing workers, stops the extra ready ones. */
  const fill = (target: SessionTarget): void => {
    // A sessionStorage mount is per session id, which a pre-started worker does not know yet.
    if (options.closing() || sessionStorageMount(target)) return;
    const key = keyOf(target.runtime.id, target.version.version);
    const want = demand.target(key);
    const pool = pools.get(key) ?? [];
    pools.set(key, pool);
    keep(target, pool, want);
    recheck(target, key);
  };

  /** Starts the missing workers of the version's pool, stops the extra ready ones. */
  const keep = (target: SessionTarget, pool: PooledWorker[], want: number) => {
    while (pool.length < want) add(target, pool);
    for (let extra = pool.length - want; extra > 0; extra--) {
      const i = pool.findIndex((e) => e.isReady);
      if (i < 0) break;
      void retire(pool.splice(i, 1)[0]!);
    }
  };

  /** Sizes the pool again once its demand ages out. */
  const recheck = (target: SessionTarget, key: string) => {
    if (demand.decaying(key) && !rechecks.has(key)) {
      const timer = setTimeout(() => {
        rechecks.delete(key);
        fill(target);
      }, DEMAND_WINDOW_MS / 3);
      timer.unref();
      rechecks.set(key, timer);
    }
  };

  /** Drops the pools `which` picks; resolves once their workers stopped. */
  const drop = (which: (key: string) => boolean, grace?: number) => {
    const gone = [...pools.entries()].filter(([k]) => which(k));
    for (const [k] of gone) {
      pools.delete(k);
      demand.forget(k);
      clearTimeout(rechecks.get(k));
      rechecks.delete(k);
    }
    return Promise.all(gone.flatMap(([, pool]) => pool.map((e) => retire(e, grace))));
  };

  return {
    fill,
    /** A new session of the version: counts as demand; a ready worker if there is one (then refills). */
    take(target: SessionTarget): PooledWorker | undefined {
      const key = keyOf(target.runtime.id, target.version.version);
      demand.record(key);
      const pool = pools.get(key);
      const i = pool?.findIndex((e) => e.isReady && !e.worker.exited) ?? -1;
      const [entry] = pool && i >= 0 ? pool.splice(i, 1) : [];
      return entry;
    },
    /** The version's pool only: pools of the runtime's other versions go. */
    refresh(target: SessionTarget): void {
      const kept = keyOf(target.runtime.id, target.version.version);
      void drop((k) => k.startsWith(`${target.runtime.id}#`) && k !== kept);
      fill(target);
    },
    dropRuntime: (runtimeId: string) => drop((k) => k.startsWith(`${runtimeId}#`)),
    count: (runtimeId?: string) =>
      [...pools.entries()]
        .filter(([k]) => runtimeId === undefined || k.startsWith(`${runtimeId}#`))
        .reduce((n, [, p]) => n + p.filter((e) => e.isReady).length, 0),
    close: () => drop(() => true),
  };
}
