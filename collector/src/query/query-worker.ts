// A query thread's entry (started by query-pool.ts): its own read-only connection to the store;
// runs one query at a time and answers with the response's JSON bytes (moved, not copied).
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';
import { createReadOps } from '../store/read-ops.js';
import { runQuery } from './engine.js';
import type { QueryPoolData, QueryReply, QueryRequest } from './query-pool.js';
import { QueryError } from './query-error.js';
import { resultBytes } from './result-bytes.js';
import { deadlineError, isDeadlineStop, withDeadline } from './sqlite-deadline.js';

const port = parentPort!;
const { path, maxResultBytes, maxRows } = workerData as QueryPoolData;
const db = new DatabaseSync(path, { readOnly: true });
// Reads never wait on the writer in WAL mode; the timeout covers a checkpoint's brief lock.
db.exec(`PRAGMA busy_timeout = 5000; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -32768;
  PRAGMA mmap_size = 268435456;`);
const encoder = new TextEncoder();
const reads = createReadOps(db);
const reply = (message: QueryReply, transfer: ArrayBuffer[] = []): void =>
  port.postMessage(message, transfer);

port.on('message', (m: QueryRequest) => {
  if (m.type === 'close') {
    db.close();
    port.close();
    return;
  }
  if (m.type === 'check') {
    try {
      const rows = db.prepare('PRAGMA quick_check(20)').all() as { quick_check: string }[];
      const json = encoder.encode(JSON.stringify(rows.map((r) => r.quick_check)));
      reply({ type: 'result', id: m.id, json }, [json.buffer]);
    } catch (error) {
      // A header too damaged to read is itself the finding.
      const json = encoder.encode(JSON.stringify([error instanceof Error ? error.message : String(error)]));
      reply({ type: 'result', id: m.id, json }, [json.buffer]);
    }
    return;
  }
  const started = performance.now();
  try {
    const response =
      m.type === 'read'
        ? withDeadline(db, started + m.deadlineMs, () =>
            (reads[m.op] as (...args: unknown[]) => unknown)(...m.args),
          )
        : runQuery(db, m.query, { ...m.options, maxRows });
    const json = resultBytes(response, maxResultBytes, m.type);
    // The bytes move to the main thread (no copy).
    reply({ type: 'result', id: m.id, json }, [json.buffer as ArrayBuffer]);
  } catch (error) {
    const query = m.type === 'read' ? '' : m.query;
    if (m.type === 'read' && isDeadlineStop(error))
      reply({ type: 'error', id: m.id, body: deadlineError(started).toBody(query) });
    else if (error instanceof QueryError) reply({ type: 'error', id: m.id, body: error.toBody(query) });
    else reply({ type: 'error', id: m.id, message: error instanceof Error ? error.message : String(error) });
  }
});
reply({ type: 'ready' });
