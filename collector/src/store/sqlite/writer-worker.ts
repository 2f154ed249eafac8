// The writer thread's entry (started by writer-thread.ts): its own connection to the store. Group
// commit happens here: the batches that arrived while the last transaction ran are written together
// in the next one. Every batch gets an answer — `{ id }` once committed, `{ id, error }` when its
// transaction was rolled back — and `close` ends the thread once every batch sent before it is
// answered.
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { startCheckpointer } from './checkpointer.js';
import { type EncodedBatch, LOG_COLUMNS } from './span-rows.js';
import {
  CHECKPOINT_BYTES,
  WAL_CAP_BYTES,
  checkpointAt,
  createBatchWriter,
  openDatabase,
} from './span-writer.js';
import { createRetention, createSpanReader, createSummaryRefresher } from './span-store.js';
import type { WriterData, WriterReply, WriterRequest } from './writer-thread.js';

/** Spans per transaction at most, so one commit (and its answers) never waits on a huge backlog. */
const MAX_TRANSACTION_SPANS = 16_384;
/**
 * Row bytes written between checkpoints. The WAL grows by about four times the documents' bytes
 * (index pages and page headers come on top), so this is about CHECKPOINT_BYTES of WAL.
 */
const CHECKPOINT_ROW_BYTES = CHECKPOINT_BYTES / 4;

const port = parentPort!;
const { path, traceIndexPercent } = workerData as WriterData;
const db = openDatabase(path, WAL_CAP_BYTES);
// Waiting for the main thread's connection (summaries, a retention chunk) blocks only this thread,
// and the requests behind it wait instead of failing.
db.exec('PRAGMA busy_timeout = 60000');
const write = createBatchWriter(db, traceIndexPercent);
// Summaries are rebuilt here, off the main thread, in small transactions queued with the writes.
const summaries = createSummaryRefresher(db, createSpanReader(db));
// Retention likewise: one DELETE chunk per message.
const retention = createRetention(db);
const reply = (message: WriterReply): void => port.postMessage(message);

let sinceCheckpoint = 0;
const checkpointer = startCheckpointer(path, {
  // The bulk is copied; what was committed meanwhile is copied here, between transactions, so the
  // WAL is complete in the database and the next transaction starts it over.
  onDone: () => {
    try {
      db.exec('PRAGMA wal_checkpoint(PASSIVE)');
    } catch {
      // Busy: the next round catches up.
    }
  },
  onFailure: (error) => {
    // Without the thread, commits checkpoint as SQLite does by default (at a larger size).
    checkpointAt(db, CHECKPOINT_BYTES);
    reply({
      type: 'warn',
      message: `checkpoint thread stopped (${error.message}); commits checkpoint instead`,
    });
  },
});

/** About how many bytes the batch adds to the tables (its documents). */
function rowBytes(b: EncodedBatch): number {
  let n = b.docEnds.length ? b.docEnds[b.docEnds.length - 1]! : 0;
  for (let i = LOG_COLUMNS - 1; i < b.logs.length; i += LOG_COLUMNS) n += (b.logs[i] as string).length;
  return n;
}

async function close(): Promise<void> {
  await checkpointer.stop();
  db.close();
  port.close();
}

function refresh(m: Extract<WriterRequest, { type: 'refresh' }>): void {
  try {
    reply({ type: 'done', id: m.id, refreshed: summaries.refreshSummaries(m.limit, m.maxMs) });
  } catch (e) {
    reply({ type: 'done', id: m.id, refreshed: 0, error: e instanceof Error ? e.message : String(e) });
  }
}

function retain(m: Extract<WriterRequest, { type: 'retain' }>): void {
  try {
    if (m.finish) {
      retention.finish();
      reply({ type: 'done', id: m.id, refreshed: 0, more: false });
    } else {
      const step = retention.step(m.options, m.nowMs);
      reply({ type: 'done', id: m.id, refreshed: step.deleted, more: step.more });
    }
  } catch (e) {
    reply({ type: 'done', id: m.id, refreshed: 0, error: e instanceof Error ? e.message : String(e) });
  }
}

port.on('message', (first: WriterRequest) => {
  if (first.type === 'close') return void close();
  if (first.type === 'refresh') return refresh(first);
  if (first.type === 'retain') return retain(first);
  const ids = [first.id];
  const batches: EncodedBatch[] = [first.batch];
  let spans = first.batch.docEnds.length;
  /** A message that is not a write, taken while gathering writes: handled after their commit. */
  let after: Exclude<WriterRequest, { type: 'write' }> | undefined;
  while (spans < MAX_TRANSACTION_SPANS) {
    const next = receiveMessageOnPort(port)?.message as WriterRequest | undefined;
    if (!next) break;
    if (next.type !== 'write') {
      after = next;
      break;
    }
    ids.push(next.id);
    batches.push(next.batch);
    spans += next.batch.docEnds.length;
  }
  let error: string | undefined;
  try {
    write(batches);
  } catch (e) {
    error = e instanceof Error ? e.message : String(e);
  }
  for (const id of ids) reply(error === undefined ? { type: 'done', id } : { type: 'done', id, error });
  if (error === undefined) {
    for (const b of batches) sinceCheckpoint += rowBytes(b);
    if (sinceCheckpoint >= CHECKPOINT_ROW_BYTES && !checkpointer.running) {
      sinceCheckpoint = 0;
      checkpointer.run();
    }
  }
  if (after?.type === 'close') void close();
  else if (after?.type === 'refresh') refresh(after);
  else if (after?.type === 'retain') retain(after);
});
reply({ type: 'ready' });
