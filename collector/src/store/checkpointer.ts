import { Worker } from 'node:worker_threads';

// A WAL checkpoint copies committed pages from the -wal file into the database and syncs it. SQLite
// runs one inside the COMMIT that crosses 1000 WAL pages, on the committing (main) thread — under
// ingest that was a third of the store's time. Here a worker thread with its own connection runs
// PASSIVE checkpoints (they never block the writer or readers) on the other core instead.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { DatabaseSync } = require('node:sqlite');
const db = new DatabaseSync(workerData.path);
db.exec('PRAGMA busy_timeout = 1000');
const checkpoint = () => {
  try {
    db.exec('PRAGMA wal_checkpoint(PASSIVE)');
  } catch {
    // Busy or closing: the next round (or the writer's own fallback) catches up.
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  const closed = new Int32Array(workerData.closed);
  Atomics.store(closed, 0, 1);
  Atomics.notify(closed, 0);
  parentPort.close();
});
`;

export interface Checkpointer {
  /**
   * Closes the worker's connection and waits (synchronously, up to 5 s) until it has, so the
   * caller's own close is the last one (which checkpoints and removes the WAL).
   */
  stop(): void;
}

/** Starts the background checkpointer for the database at `path` (WAL mode). */
export function startCheckpointer(path: string, intervalMs = 100): Checkpointer {
  const closed = new SharedArrayBuffer(4);
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, intervalMs, closed } });
  worker.unref();
  // A failed worker only means checkpoints fall back to the writer (see span-store's WAL cap).
  let failed = false;
  worker.on('error', () => (failed = true));
  let stopped = false;
  return {
    stop(): void {
      if (stopped) return;
      stopped = true;
      if (!failed) {
        worker.postMessage('stop');
        Atomics.wait(new Int32Array(closed), 0, 0, 5000);
      }
      void worker.terminate();
    },
  };
}
