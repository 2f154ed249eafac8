import { Worker } from 'node:worker_threads';

// A WAL checkpoint copies committed pages from the -wal file into the database and syncs both
// files. Run by the committing thread it holds up the next transaction: on the writer thread that
// was a third of its time (copying, and waiting for the disk). The writer hands the bulk of it to
// this thread, with its own connection: PASSIVE checkpoints never block the writer or readers.
// A checkpoint only copies what was committed when it started, and the WAL starts over only once
// all of it is copied, so the writer runs a last, small checkpoint itself when this one is done
// (writer-worker.ts): its next transaction then writes the WAL from the start.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { DatabaseSync } = require('node:sqlite');
const db = new DatabaseSync(workerData.path);
db.exec('PRAGMA busy_timeout = 1000; PRAGMA wal_autocheckpoint = 0');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
parentPort.on('message', (m) => {
  if (m === 'stop') {
    db.close();
    parentPort.close();
    return;
  }
  // Passes until what the writer appended meanwhile is small.
  for (let i = 0; i < 4; i++) {
    let r;
    try {
      r = checkpoint.get();
    } catch {
      break; // busy: the writer's own checkpoint catches up
    }
    if (r.log - r.checkpointed <= workerData.tailFrames) break;
  }
  parentPort.postMessage('done');
});
`;

export interface Checkpointer {
  /** Starts a checkpoint unless one is running; `onDone` is called when it has finished. */
  run(): void;
  /** Whether a checkpoint is running. */
  readonly running: boolean;
  /** Closes the thread's connection; resolves once the thread has exited. */
  stop(): Promise<void>;
}

/**
 * Starts the checkpoint thread for the database at `path` (WAL mode). `onDone` follows every run;
 * `onFailure` is called once if the thread dies (the caller checkpoints itself from then on).
 */
export function startCheckpointer(
  path: string,
  handlers: { onDone: () => void; onFailure: (error: Error) => void },
  tailFrames = 512,
): Checkpointer {
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, tailFrames } });
  worker.unref();
  let running = false;
  let failed = false;
  let stopped = false;
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.on('message', () => {
    running = false;
    handlers.onDone();
  });
  const fail = (error: Error): void => {
    if (failed || stopped) return;
    failed = true;
    running = false;
    handlers.onFailure(error);
  };
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`checkpoint thread exited with code ${code}`)));
  return {
    run(): void {
      if (running || failed || stopped) return;
      running = true;
      worker.postMessage('run');
    },
    get running(): boolean {
      return running;
    },
    stop(): Promise<void> {
      if (!stopped) {
        stopped = true;
        worker.ref();
        if (failed) void worker.terminate();
        else worker.postMessage('stop');
      }
      return exited;
    },
  };
}
