// A query thread's entry (started by ../reader-pool.ts): its own read-only connection to the store;
// runs one query at a time and answers with the response's JSON bytes (moved, not copied).
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';
import { metricFailure } from '../../metrics/metric-read.js';
import { createReadOps } from './read-ops.js';
import { runQuery } from '../../query/engine.js';
import type { QueryPoolData, QueryReply, QueryRequest } from '../query-protocol.js';
import { QueryError } from '../../query/query-error.js';
import { resultBytes } from '../../query/result-bytes.js';
import { deadlineError, isDeadlineStop, withDeadline } from '../../query/sqlite-deadline.js';

const port = parentPort!;
const { path, metricsPath, maxResultBytes, maxRows } = workerData as QueryPoolData;

/** A read-only connection; reads never wait on the writer in WAL mode (the timeout covers a checkpoint's brief lock). */
function openReadOnly(file: string): DatabaseSync {
  const connection = new DatabaseSync(file, { readOnly: true });
  connection.exec(`PRAGMA busy_timeout = 5000; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -32768;
    PRAGMA mmap_size = 268435456;`);
  return connection;
}

const db = openReadOnly(path);
let metricsDb: DatabaseSync | undefined;
const metrics = (): DatabaseSync => (metricsDb ??= openReadOnly(metricsPath!));
const encoder = new TextEncoder();
const reads = createReadOps(db, metrics);
const reply = (message: QueryReply, transfer: ArrayBuffer[] = []): void =>
  port.postMessage(message, transfer);

port.on('message', (m: QueryRequest) => {
  if (m.type === 'close') {
    metricsDb?.close();
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
  void answer(m);
});

/** Runs a query or read (one at a time: the pool sends the next once this one is answered). */
async function answer(m: Extract<QueryRequest, { type: 'query' | 'read' }>): Promise<void> {
  const started = performance.now();
  try {
    const response =
      m.type === 'read'
        ? await withDeadline(db, started + m.deadlineMs, () =>
            // A metric read's statements run on the metrics connection: the deadline is on it too.
            m.op === 'metric' ? withDeadline(metrics(), started + m.deadlineMs, () => run(m)) : run(m),
          )
        : runQuery(db, m.query, { ...m.options, maxRows });
    const json = resultBytes(response, maxResultBytes, m.type);
    // The bytes move to the main thread (no copy).
    reply({ type: 'result', id: m.id, json }, [json.buffer as ArrayBuffer]);
  } catch (error) {
    const query = m.type === 'read' ? '' : m.query;
    const metric = metricFailure(error);
    if (metric) reply({ type: 'error', id: m.id, ...metric });
    else if (m.type === 'read' && isDeadlineStop(error))
      reply({ type: 'error', id: m.id, body: deadlineError(started, undefined, m.op).toBody(query) });
    else if (error instanceof QueryError) reply({ type: 'error', id: m.id, body: error.toBody(query) });
    else reply({ type: 'error', id: m.id, message: error instanceof Error ? error.message : String(error) });
  }
}

const run = (m: Extract<QueryRequest, { type: 'read' }>): unknown =>
  (reads[m.op] as (...args: unknown[]) => unknown)(...m.args);
reply({ type: 'ready' });
