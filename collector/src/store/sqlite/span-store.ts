import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { DEADLINE_GUARD_SQL, checkDeadline, registerDeadlineCheck } from '../../query/sqlite-deadline.js';
import type {
  LogRecord,
  SessionResponse,
  SessionSummary,
  SpanRecord,
  TraceSummary,
} from '../../wire-types.js';
import { DROPPED_INDEXES, GENAI_INDEX, SCHEMA, SCHEMA_VERSION, SIGNAL_TRACE } from './schema.js';
import { type EncodedBatch, type HotValue, createRowEncoder, hotValues, nsToUs } from './span-rows.js';
import {
  CHECKPOINT_BYTES,
  WAL_CAP_BYTES,
  createBatchWriter,
  inTransaction,
  isTraceIndexed,
  openDatabase,
} from './span-writer.js';
import { summarizeSession, summarizeTrace } from '../summaries.js';
import { FIXED_KEYS, type RetentionOptions, type TraceListFilter, noiseFilter } from '../read-options.js';
import { HOT_ATTRIBUTES } from '../../query/fields.js';

export { isTraceIndexed };

export interface SpanStoreOptions {
  /** Directory holding `collector.sqlite` (+ WAL files); created when missing. */
  dataDir: string;
  /**
   * Share of traces (0–100) that get a trace summary row (the trace list), chosen deterministically
   * by trace id. Every span stays searchable whatever the setting.
   */
  traceIndexPercent?: number;
  /** Cap on distinct attribute keys remembered for autocompletion (hostile senders). */
  maxAttributeKeys?: number;
  /**
   * Another thread checkpoints the WAL (the collector's writer thread): this connection's commits
   * then checkpoint only a WAL past WAL_CAP_BYTES, so the main thread never copies it otherwise.
   */
  backgroundCheckpoints?: boolean;
}

const SUMMARY_REFRESH_LIMIT = 2000;

export type SpanStore = ReturnType<typeof createSpanStore>;

const HOT_COLUMNS = [...HOT_ATTRIBUTES.map((h) => h.column), 'hot_odd'];
const MIGRATE_CHUNK = 5000;

/**
 * Brings a data dir written by an older collector up to SCHEMA_VERSION, in one transaction (a crash
 * half-way leaves the old schema, migrated again on the next start). Version 1 → 2: adds the GenAI
 * columns and fills them from the stored records. 2 → 3: the GenAI index ordered by time.
 */
function migrate(db: DatabaseSync): void {
  const have = new Set(
    (db.prepare('PRAGMA table_info(spans)').all() as { name: string }[]).map((r) => r.name),
  );
  const missing = HOT_COLUMNS.filter((c) => !have.has(c));
  inTransaction(db, () => {
    if (missing.length) {
      for (const c of missing)
        db.exec(`ALTER TABLE spans ADD COLUMN ${c}${c === 'hot_odd' ? ' INTEGER' : ''}`);
      const page = db.prepare('SELECT id, doc FROM spans WHERE id > ? ORDER BY id LIMIT ?');
      const update = db.prepare(
        `UPDATE spans SET ${HOT_COLUMNS.map((c) => `${c} = ?`).join(', ')} WHERE id = ?`,
      );
      const values: HotValue[] = [];
      for (let last = 0; ;) {
        const rows = page.all(last, MIGRATE_CHUNK) as { id: number; doc: string }[];
        if (!rows.length) break;
        for (const r of rows) {
          last = r.id;
          const odd = hotValues((JSON.parse(r.doc) as SpanRecord).attributes ?? {}, values);
          if (odd || values.some((v) => v !== null)) update.run(...values, odd, r.id);
        }
      }
    }
    for (const name of DROPPED_INDEXES) db.exec(`DROP INDEX IF EXISTS ${name}`);
    db.exec(GENAI_INDEX);
    db.prepare('INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)').run('schema', String(SCHEMA_VERSION));
  });
}

/**
 * Rebuilds stale trace and session summaries (marked dirty at ingest) on a writable connection:
 * the collector's writer thread, between its ingest transactions.
 */
export function createSummaryRefresher(db: DatabaseSync, reader: SpanReader) {
  const { spansOfTrace, sessionTraces } = reader;
  const transaction = <T>(fn: () => T): T => inTransaction(db, fn);
  const dirtyTraces = db.prepare('SELECT trace_id FROM dirty_traces LIMIT ?');
  const cleanTrace = db.prepare('DELETE FROM dirty_traces WHERE trace_id = ?');
  const upsertTrace = db.prepare(`INSERT OR REPLACE INTO traces
    (trace_id, start_us, duration_ns, service, error_count, summary) VALUES (?, ?, ?, ?, ?, ?)`);
  const deleteTrace = db.prepare('DELETE FROM traces WHERE trace_id = ?');
  const dirtySessions = db.prepare('SELECT session_id FROM dirty_sessions LIMIT ?');
  const cleanSession = db.prepare('DELETE FROM dirty_sessions WHERE session_id = ?');
  const upsertSession = db.prepare(
    'INSERT OR REPLACE INTO sessions (session_id, last_us, summary) VALUES (?, ?, ?)',
  );
  const deleteSession = db.prepare('DELETE FROM sessions WHERE session_id = ?');

  /**
   * Recomputes up to `limit` stale trace and session summaries (marked dirty at ingest), in one
   * transaction that stops after `maxMs` of work (at least one summary). Returns how many were
   * refreshed (0: nothing stale), so a background loop knows whether there is more to do.
   */
  function refreshSummaries(limit = SUMMARY_REFRESH_LIMIT, maxMs = Infinity): number {
    const until = performance.now() + maxMs;
    return transaction(() => {
      let n = 0;
      for (const { trace_id: id } of dirtyTraces.all(limit) as { trace_id: string }[]) {
        if (n && performance.now() > until) return n;
        n++;
        cleanTrace.run(id);
        const spans = spansOfTrace(id);
        if (!spans.length) {
          deleteTrace.run(id);
          continue;
        }
        const s = summarizeTrace(id, spans);
        upsertTrace.run(
          id,
          nsToUs(s.startTimeUnixNano),
          s.durationNano,
          s.serviceName || null,
          s.errorCount,
          JSON.stringify(s),
        );
      }
      // Sessions once the traces are caught up: a session's summary is made of its traces', and
      // each stale one would be rebuilt from its spans again for every session it belongs to.
      if (n >= limit) return n;
      for (const { session_id: id } of dirtySessions.all(limit) as { session_id: string }[]) {
        if (n && performance.now() > until) return n;
        n++;
        cleanSession.run(id);
        const traces = sessionTraces(id);
        if (!traces.length) {
          deleteSession.run(id);
          continue;
        }
        const s = summarizeSession(id, traces);
        upsertSession.run(id, nsToUs(s.lastSeenUnixNano), JSON.stringify(s));
      }
      return n;
    });
  }

  return { refreshSummaries };
}

/**
 * The read side of the store over any connection to it: the collector runs it on its query
 * threads' read-only connections (reader-worker.ts), createSpanStore on its own. Summaries are read
 * as stored (a stale one is computed from its trace's spans); refreshing them is a write
 * (createSummaryRefresher). Statements that can scan without bound carry the deadline guard.
 */
export function createSpanReader(db: DatabaseSync) {
  registerDeadlineCheck(db);
  const spansOfTraceStmt = db.prepare('SELECT doc FROM spans WHERE trace_id = ? ORDER BY start_us, id');
  const logsOfTraceStmt = db.prepare('SELECT doc FROM logs WHERE trace_id = ? ORDER BY time_us, id');
  const traceIdsOfSession = db.prepare(
    `SELECT trace_id, min(start_us) AS s FROM spans WHERE ${DEADLINE_GUARD_SQL} AND session_id = ? GROUP BY trace_id ORDER BY s`,
  );
  const traceSummaryStmt = db.prepare(
    'SELECT summary, (SELECT 1 FROM dirty_traces d WHERE d.trace_id = t.trace_id) AS dirty FROM traces t WHERE trace_id = ?',
  );
  const servicesStmt = db.prepare('SELECT name, span_count, last_us FROM services ORDER BY last_us DESC');

  function spansOfTrace(traceId: string): SpanRecord[] {
    return (spansOfTraceStmt.all(traceId) as { doc: string }[]).map((r) => JSON.parse(r.doc) as SpanRecord);
  }

  function logsOfTrace(traceId: string): LogRecord[] {
    return (logsOfTraceStmt.all(traceId) as { doc: string }[]).map((r) => JSON.parse(r.doc) as LogRecord);
  }

  /** A trace's summary: the stored one when fresh, else computed from its spans. */
  function traceSummary(traceId: string): TraceSummary | undefined {
    const row = traceSummaryStmt.get(traceId) as { summary: string | null; dirty: number } | undefined;
    if (row?.summary && !row.dirty) return JSON.parse(row.summary) as TraceSummary;
    const spans = spansOfTrace(traceId);
    return spans.length ? summarizeTrace(traceId, spans) : undefined;
  }

  function sessionTraces(sessionId: string): TraceSummary[] {
    const ids = traceIdsOfSession.all(sessionId) as { trace_id: string }[];
    return ids
      .map((r) => {
        // Stale summaries are computed here from the spans: a session of many traces is long work.
        checkDeadline(db);
        return traceSummary(r.trace_id);
      })
      .filter((t) => t !== undefined);
  }

  function listTraces(filter: TraceListFilter = {}): TraceSummary[] {
    const where = ['1'];
    const params: (string | number)[] = [];
    if (filter.service) {
      where.push('service = ?');
      params.push(filter.service);
    }
    if (filter.status === 'error') where.push('error_count > 0');
    if (filter.status === 'ok') where.push('error_count = 0');
    if (filter.minDurationMs !== undefined) {
      where.push('duration_ns >= ?');
      params.push(Math.round(filter.minDurationMs * 1e6));
    }
    if (filter.startMs !== undefined) {
      where.push('start_us >= ?');
      params.push(Math.round(filter.startMs * 1000));
    }
    if (filter.endMs !== undefined) {
      where.push('start_us < ?');
      params.push(Math.round(filter.endMs * 1000));
    }
    if (filter.sessionId) {
      where.push('trace_id IN (SELECT trace_id FROM spans WHERE session_id = ?)');
      params.push(filter.sessionId);
    }
    const q = filter.q?.trim();
    const noise = noiseFilter(filter);
    if (noise === 'exclude') where.push(SIGNAL_TRACE);
    if (noise === 'only') where.push(`NOT (${SIGNAL_TRACE})`);
    if (q) {
      if (/^[0-9a-fA-F]{32}$/.test(q)) {
        where.push('trace_id = ?');
        params.push(q.toLowerCase());
      } else {
        // A full scan of every record: the deadline guard stops it (sqlite-deadline.ts).
        where.push(
          `trace_id IN (SELECT trace_id FROM spans WHERE ${DEADLINE_GUARD_SQL} AND doc LIKE ? ESCAPE '\\')`,
        );
        params.push(`%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
      }
    }
    params.push(Math.max(1, Math.min(filter.limit ?? 100, 1000)));
    const rows = db
      .prepare(`SELECT summary FROM traces WHERE ${where.join(' AND ')} ORDER BY start_us DESC LIMIT ?`)
      .all(...params) as { summary: string }[];
    return rows.map((r) => JSON.parse(r.summary) as TraceSummary);
  }

  const listSessionsStmt = db.prepare('SELECT summary FROM sessions ORDER BY last_us DESC LIMIT ?');

  function listSessions(limit = 100): SessionSummary[] {
    const rows = listSessionsStmt.all(Math.max(1, Math.min(limit, 1000))) as { summary: string }[];
    return rows.map((r) => JSON.parse(r.summary) as SessionSummary);
  }

  function getSession(sessionId: string): SessionResponse | undefined {
    const traces = sessionTraces(sessionId);
    if (!traces.length) return undefined;
    return { session: summarizeSession(sessionId, traces), traces };
  }

  function services(): { name: string; spanCount: number; lastSeenUnixNano: number }[] {
    const rows = servicesStmt.all() as {
      name: string;
      span_count: number;
      last_us: number;
    }[];
    return rows.map((r) => ({ name: r.name, spanCount: r.span_count, lastSeenUnixNano: r.last_us * 1000 }));
  }

  return {
    spansOfTrace,
    logsOfTrace,
    traceSummary,
    sessionTraces,
    listTraces,
    listSessions,
    getSession,
    services,
  };
}

export type SpanReader = ReturnType<typeof createSpanReader>;

/** Rows deleted per retention statement (each its own short transaction). */
const RETENTION_CHUNK = 5000;

/**
 * Retention in steps: each `step` is one DELETE of at most RETENTION_CHUNK rows (expired spans, then
 * expired logs, then the oldest rows while the database is over its size), so the collector runs
 * them on its writer thread between ingest commits; `finish` then marks the summaries of what was
 * deleted stale and recounts the services.
 */
export function createRetention(db: DatabaseSync) {
  const chunk = RETENTION_CHUNK;
  const expired = db.prepare(
    'DELETE FROM spans WHERE id IN (SELECT id FROM spans WHERE start_us < ? ORDER BY start_us LIMIT ?)',
  );
  const expiredLogs = db.prepare(
    'DELETE FROM logs WHERE id IN (SELECT id FROM logs WHERE time_us < ? ORDER BY time_us LIMIT ?)',
  );
  const oldest = db.prepare('DELETE FROM spans WHERE id IN (SELECT id FROM spans ORDER BY start_us LIMIT ?)');
  const oldestLogs = db.prepare(
    'DELETE FROM logs WHERE id IN (SELECT id FROM logs ORDER BY time_us LIMIT ?)',
  );
  const countOf = (table: 'spans' | 'logs'): number =>
    (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  const liveBytes = (): number => {
    const get = (p: string): number => Number((db.prepare(`PRAGMA ${p}`).get() as Record<string, number>)[p]);
    return (get('page_count') - get('freelist_count')) * get('page_size');
  };

  return {
    /**
     * One chunk of retention work. `deleted`: spans (and, by size, logs) deleted, as applyRetention
     * counts them; `more`: whether this step did anything (call again).
     */
    step(opts: RetentionOptions, nowMs = Date.now()): { deleted: number; more: boolean } {
      if (opts.maxAgeMs !== undefined && opts.maxAgeMs > 0) {
        const cutoffUs = (nowMs - opts.maxAgeMs) * 1000;
        const n = Number(expired.run(cutoffUs, chunk).changes);
        if (n) return { deleted: n, more: true };
        if (Number(expiredLogs.run(cutoffUs, chunk).changes)) return { deleted: 0, more: true };
      }
      if (opts.maxBytes !== undefined && opts.maxBytes > 0) {
        const live = liveBytes();
        if (live > opts.maxBytes) {
          // Delete about the share of rows that is over the cap (a little more), oldest first.
          const share = Math.min(1, ((live - opts.maxBytes) / live) * 1.1);
          const spansN = countOf('spans');
          const logsN = countOf('logs');
          const n =
            Number(oldest.run(Math.min(chunk, Math.ceil(spansN * share))).changes) +
            Number(oldestLogs.run(Math.min(chunk, Math.ceil(logsN * share))).changes);
          if (n) return { deleted: n, more: true };
        }
      }
      return { deleted: 0, more: false };
    },
    /** After deleting: summaries of traces and sessions that lost spans go stale, services recounted. */
    finish(): void {
      inTransaction(db, () => {
        db.exec(`INSERT OR IGNORE INTO dirty_traces SELECT trace_id FROM traces
          WHERE trace_id NOT IN (SELECT trace_id FROM spans)`);
        db.exec(`INSERT OR IGNORE INTO dirty_sessions SELECT session_id FROM sessions
          WHERE session_id NOT IN (SELECT session_id FROM spans WHERE session_id IS NOT NULL)`);
        db.exec(`DELETE FROM services;
          INSERT INTO services (name, span_count, last_us)
          SELECT service, count(*), max(end_us) FROM spans WHERE service IS NOT NULL GROUP BY service`);
      });
    },
  };
}

/**
 * The durable span/log store (node:sqlite, WAL). Synchronous: callers batch into insertBatch, or
 * encode batches here and write them on another connection (the collector's writer thread).
 */
export function createSpanStore(options: SpanStoreOptions) {
  mkdirSync(options.dataDir, { recursive: true });
  const path = join(options.dataDir, 'collector.sqlite');
  const db = openDatabase(path, options.backgroundCheckpoints ? WAL_CAP_BYTES : CHECKPOINT_BYTES);
  db.exec(SCHEMA);
  const version = db.prepare("SELECT value FROM meta WHERE key = 'schema'").get() as
    { value: string } | undefined;
  if (version?.value !== String(SCHEMA_VERSION)) migrate(db);
  const indexPercent = options.traceIndexPercent ?? 100;
  const encoder = createRowEncoder(
    (db.prepare('SELECT key FROM attribute_keys').all() as { key: string }[]).map((r) => r.key),
    options.maxAttributeKeys ?? 10_000,
  );
  const writeBatch = createBatchWriter(db, indexPercent);
  const reader = createSpanReader(db);
  const { spansOfTrace, logsOfTrace, traceSummary, services } = reader;
  const { refreshSummaries } = createSummaryRefresher(db, reader);

  /** Stores spans and logs in one transaction (all or nothing). */
  function insertBatch(spans: readonly SpanRecord[], logs: readonly LogRecord[] = []): void {
    if (!spans.length && !logs.length) return;
    const batch = encoder.encode(spans, logs);
    try {
      writeBatch([batch]);
    } catch (error) {
      encoder.forget(batch);
      throw error;
    }
  }

  function listTraces(filter: TraceListFilter = {}): TraceSummary[] {
    refreshSummaries();
    return reader.listTraces(filter);
  }

  function listSessions(limit = 100): SessionSummary[] {
    refreshSummaries();
    return reader.listSessions(limit);
  }

  function getSession(sessionId: string): SessionResponse | undefined {
    refreshSummaries();
    return reader.getSession(sessionId);
  }

  function attributeKeys(): string[] {
    // In memory, at most maxAttributeKeys of them: cheap enough for the main thread.
    return [...new Set([...FIXED_KEYS, 'resource.attributes.service.name', ...[...encoder.keys()].sort()])];
  }

  const retention = createRetention(db);

  /** Deletes by age and by size (oldest first). Returns the number of records (spans, logs) deleted. */
  function applyRetention(opts: RetentionOptions, nowMs = Date.now()): number {
    let deleted = 0;
    for (let step = retention.step(opts, nowMs); step.more; step = retention.step(opts, nowMs))
      deleted += step.deleted;
    if (deleted) retention.finish();
    return deleted;
  }

  return {
    path,
    /** The raw connection, for the query engine (read-only use). */
    db,
    insertBatch,
    /**
     * Encodes records for a batch writer on another connection (span-writer.ts); a batch that
     * then fails goes back through forgetBatch.
     */
    encodeBatch: (spans: readonly SpanRecord[], logs: readonly LogRecord[] = []): EncodedBatch =>
      encoder.encode(spans, logs),
    forgetBatch: (batch: EncodedBatch): void => encoder.forget(batch),
    spansOfTrace,
    logsOfTrace,
    traceSummary,
    refreshSummaries,
    listTraces,
    listSessions,
    getSession,
    services,
    attributeKeys,
    applyRetention,
    prepare: (sql: string): StatementSync => db.prepare(sql),
    close: (): void => {
      if (db.isOpen) db.close();
    },
  };
}
