// The thread a custom evaluator module runs in: imports the module, says it is loaded, calls its
// default export with the session and posts back what it returned (or what it threw). Kept free of imports from this
// package so it loads from src/ (type-stripped) and dist/ alike; a thread, so a module that never
// returns, even in a busy loop, can be stopped.
import { parentPort, workerData } from 'node:worker_threads';

interface Job {
  modulePath: string;
  session: unknown;
}

async function runJob(job: Job): Promise<unknown> {
  const mod = (await import(job.modulePath)) as { default?: unknown; evaluate?: unknown };
  const fn = typeof mod.default === 'function' ? mod.default : mod.evaluate;
  if (typeof fn !== 'function') throw new Error('the module exports no default function (nor `evaluate`)');
  parentPort?.postMessage({ loaded: true }); // the call's deadline starts now
  return await (fn as (session: unknown) => unknown)(job.session);
}

runJob(workerData as Job).then(
  (value) => parentPort?.postMessage({ ok: true, value }),
  (error: unknown) =>
    parentPort?.postMessage({ ok: false, message: error instanceof Error ? error.message : String(error) }),
);
