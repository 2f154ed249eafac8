// The SQL side of ingest: encoded batches (span-rows.ts) into the tables, one transaction each. The
// collector runs it on its writer thread (writer-thread.ts); createSpanStore runs it in-process.
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import {
  COL,
  type EncodedBatch,
  LOG_COLUMNS,
  LOG_INSERT_COLUMNS,
  SPAN_COLUMNS,
  SPAN_INSERT_COLUMNS,
} from './span-rows.js';

/** Rows per multi-row span INSERT. */
const CHUNK = 32;
const SQLITE_CONSTRAINT_UNIQUE = 2067;
/**
 * WAL size after which a commit checkpoints (copies the WAL into the database and starts it over):
 * 40 MiB, far above SQLite's default of 1000 pages, so index pages written by many commits reach the
 * database once per checkpoint.
 */
export const CHECKPOINT_BYTES = 40 * 1024 * 1024;
/**
 * The same for connections whose checkpoints another thread runs (checkpointer.ts): only a WAL
 * that grew this far anyway (that thread fell behind, or is gone) is checkpointed in a commit.
 */
export const WAL_CAP_BYTES = 256 * 1024 * 1024;
/**
 * Page size of a new database (an existing one keeps its own): at commit SQLite writes every page a
 * transaction touched to the WAL, one write per page; 8 KiB pages halve the writes of a batch of
 * spans (half of it index pages that random ids and durations scatter) for about the same bytes.
 */
const NEW_PAGE_SIZE = 8192;

/**
 * Opens the store's database file with the settings every connection of the collector uses;
 * commits checkpoint past `checkpointBytes` of WAL.
 */
export function openDatabase(path: string, checkpointBytes = CHECKPOINT_BYTES): DatabaseSync {
  const db = new DatabaseSync(path);
  db.exec(`PRAGMA page_size = ${NEW_PAGE_SIZE}; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
    PRAGMA busy_timeout = 5000; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -65536;
    PRAGMA mmap_size = 268435456; PRAGMA journal_size_limit = 67108864;`);
  checkpointAt(db, checkpointBytes);
  return db;
}

/** Makes the connection's commits checkpoint once the WAL holds `bytes` (in the database's pages). */
export function checkpointAt(db: DatabaseSync, bytes: number): void {
  const { page_size: pageSize } = db.prepare('PRAGMA page_size').get() as { page_size: number };
  db.exec(`PRAGMA wal_autocheckpoint = ${Math.ceil(bytes / pageSize)}`);
}

/**
 * Runs `fn` in a write transaction. IMMEDIATE takes the write lock up front (waiting up to the busy
 * timeout while another connection writes): a deferred transaction that read first could not
 * upgrade once the other connection had committed (SQLITE_BUSY_SNAPSHOT, no waiting).
 */
export function inTransaction<T>(db: DatabaseSync, fn: () => T): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    const result = fn();
    db.exec('COMMIT');
    return result;
  } catch (error) {
    try {
      db.exec('ROLLBACK');
    } catch {
      // SQLite already rolled back (it does on some errors, e.g. SQLITE_FULL): the first error is
      // the one to report.
    }
    throw error;
  }
}

/** Deterministic "is this trace indexed" by the last 8 hex digits (the random part of X-Ray ids too). */
export function isTraceIndexed(traceId: string, percent: number): boolean {
  if (percent >= 100) return true;
  if (percent <= 0) return false;
  const n = parseInt(traceId.slice(-8), 16);
  return (Number.isNaN(n) ? 0 : n % 10_000) < percent * 100;
}

/**
 * The batch writer over `db`: batches (spans, logs, new attribute keys) in one transaction, plus the
 * bookkeeping read back from the rows (dirty traces and sessions, per-service counts).
 */
export function createBatchWriter(db: DatabaseSync, traceIndexPercent: number) {
  // The document arrives as UTF-8 bytes; CAST stores them as the TEXT they are.
  const ROW = SPAN_COLUMNS + 1;
  const spanInsert = (rows: number): string =>
    `INSERT INTO spans (${SPAN_INSERT_COLUMNS.join(', ')}, doc) VALUES ${Array.from(
      { length: rows },
      () => `(${new Array(SPAN_COLUMNS).fill('?').join(', ')}, CAST(? AS TEXT))`,
    ).join(', ')}`;
  const insertSpan = db.prepare(spanInsert(1));
  const insertChunk = db.prepare(spanInsert(CHUNK));
  const insertLog = db.prepare(
    `INSERT INTO logs (${LOG_INSERT_COLUMNS.join(', ')}) VALUES (${new Array(LOG_COLUMNS).fill('?').join(', ')})`,
  );
  const markTrace = db.prepare('INSERT OR IGNORE INTO dirty_traces (trace_id) VALUES (?)');
  const markSession = db.prepare('INSERT OR IGNORE INTO dirty_sessions (session_id) VALUES (?)');
  const upsertService = db.prepare(`INSERT INTO services (name, span_count, last_us) VALUES (?, ?, ?)
    ON CONFLICT(name) DO UPDATE SET span_count = span_count + excluded.span_count,
    last_us = max(last_us, excluded.last_us)`);
  const insertKey = db.prepare('INSERT OR IGNORE INTO attribute_keys (key) VALUES (?)');
  const args: SQLInputValue[] = Array.from({ length: CHUNK * ROW }, () => null);

  /** Fills `args` from `at` with span `i`'s column values and document. */
  function bind(b: EncodedBatch, i: number, at: number): void {
    const o = i * SPAN_COLUMNS;
    for (let k = 0; k < SPAN_COLUMNS; k++) args[at + k] = b.spans[o + k]!;
    args[at + SPAN_COLUMNS] = b.docs.subarray(i ? b.docEnds[i - 1]! : 0, b.docEnds[i]!);
  }

  /** Inserts spans `from`… one by one; false where the span was already stored. */
  function insertRows(b: EncodedBatch, from: number, n: number): boolean[] {
    const done: boolean[] = [];
    for (let j = 0; j < n; j++) {
      bind(b, from + j, 0);
      try {
        insertSpan.run(...args.slice(0, ROW));
        done.push(true);
      } catch (error) {
        // The same span again (an exporter retry): the first copy stays. A plain INSERT that
        // fails on the unique index is much cheaper than INSERT OR REPLACE on every row.
        if ((error as { errcode?: number }).errcode !== SQLITE_CONSTRAINT_UNIQUE) throw error;
        done.push(false);
      }
    }
    return done;
  }

  /** Stores the batches in one transaction (all or nothing). */
  return function write(batches: readonly EncodedBatch[]): void {
    if (!batches.some((b) => b.spans.length || b.logs.length)) return;
    inTransaction(db, () => {
      const traces = new Set<string>();
      const sessions = new Set<string>();
      const services = new Map<string, { n: number; last: number }>();
      for (const b of batches) {
        const rows = b.spans;
        const count = rows.length / SPAN_COLUMNS;
        // Rows go in CHUNK at a time through one multi-row INSERT (one call, one statement step,
        // instead of CHUNK); a chunk holding a span already stored (an exporter retry) fails as a
        // whole and is inserted again row by row, where the stored copy wins.
        for (let i = 0; i < count; i += CHUNK) {
          const n = Math.min(CHUNK, count - i);
          let inserted: boolean[] | undefined;
          if (n === CHUNK) {
            for (let j = 0; j < CHUNK; j++) bind(b, i + j, j * ROW);
            try {
              insertChunk.run(...args);
            } catch (error) {
              if ((error as { errcode?: number }).errcode !== SQLITE_CONSTRAINT_UNIQUE) throw error;
              inserted = insertRows(b, i, n);
            }
          } else inserted = insertRows(b, i, n);
          for (let j = 0; j < n; j++) {
            if (inserted && !inserted[j]) continue;
            const o = (i + j) * SPAN_COLUMNS;
            const traceId = rows[o + COL.traceId] as string;
            const service = rows[o + COL.service] as string | null;
            const session = rows[o + COL.session] as string | null;
            const endUs = rows[o + COL.endUs] as number;
            if (isTraceIndexed(traceId, traceIndexPercent)) traces.add(traceId);
            if (session !== null) sessions.add(session);
            if (service !== null) {
              const e = services.get(service);
              if (e) {
                e.n++;
                if (endUs > e.last) e.last = endUs;
              } else services.set(service, { n: 1, last: endUs });
            }
          }
        }
        for (let i = 0; i < b.logs.length; i += LOG_COLUMNS)
          insertLog.run(...b.logs.slice(i, i + LOG_COLUMNS));
        for (const key of b.keys) insertKey.run(key);
      }
      for (const id of traces) markTrace.run(id);
      for (const id of sessions) markSession.run(id);
      for (const [name, e] of services) upsertService.run(name, e.n, e.last);
    });
  };
}
