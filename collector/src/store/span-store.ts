import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { lookupKey } from '../query/fields.js';
import { sessionIdOf } from '../trace-model/genai.js';
import type { Attributes, LogRecord, SessionSummary, SpanRecord, TraceSummary } from '../wire-types.js';
import { startCheckpointer } from './checkpointer.js';
import { GENAI_INDEX, HOT_ATTRIBUTES, SCHEMA, SCHEMA_VERSION } from './schema.js';
import { summarizeSession, summarizeTrace } from './summaries.js';

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
   * Checkpoint the WAL from a worker thread (default true) instead of inside commits on the
   * calling thread. Either way the writer checkpoints itself once the WAL passes WAL_CAP_BYTES.
   */
  backgroundCheckpoints?: boolean;
}

export interface TraceListFilter {
  service?: string;
  status?: 'error' | 'ok';
  minDurationMs?: number;
  /** Free text: a trace id, or a substring of any span's record (case-insensitive). */
  q?: string;
  sessionId?: string;
  limit?: number;
}

export interface RetentionOptions {
  /** Spans and logs older than this (by start time) are deleted. */
  maxAgeMs?: number;
  /** The database is trimmed (oldest first) until its live pages fit. */
  maxBytes?: number;
}

/** Fields every span record has, offered for autocompletion before any attribute key. */
export const FIXED_KEYS = [
  '@timestamp',
  'traceId',
  'spanId',
  'parentSpanId',
  'name',
  'kind',
  'durationNano',
  'startTimeUnixNano',
  'endTimeUnixNano',
  'status.code',
  'status.message',
  'scope.name',
  'scope.version',
  'flags',
  'traceState',
];

const SUMMARY_REFRESH_LIMIT = 2000;
/** Columns of one span row in the insert statements, and rows per multi-row insert. */
const SPAN_COLUMNS = 18;
const CHUNK = 32;
/** Past this WAL size the writer runs a checkpoint itself (the background one is falling behind). */
const WAL_CAP_BYTES = 256 * 1024 * 1024;
const SQLITE_CONSTRAINT_UNIQUE = 2067;

export type SpanStore = ReturnType<typeof createSpanStore>;

/** A number as JSON.stringify writes it. */
const num = (n: number): string => (Number.isFinite(n) ? String(n) : 'null');

/** Epoch ns → µs, the unit of the time columns. */
export const nsToUs = (ns: number): number => Math.floor(ns / 1000);

/** Deterministic "is this trace indexed" by the last 8 hex digits (the random part of X-Ray ids too). */
export function isTraceIndexed(traceId: string, percent: number): boolean {
  if (percent >= 100) return true;
  if (percent <= 0) return false;
  const n = parseInt(traceId.slice(-8), 16);
  return (Number.isNaN(n) ? 0 : n % 10_000) < percent * 100;
}

function inTransaction<T>(db: DatabaseSync, fn: () => T): T {
  db.exec('BEGIN');
  try {
    const result = fn();
    db.exec('COMMIT');
    return result;
  } catch (error) {
    db.exec('ROLLBACK');
    throw error;
  }
}

type HotValue = string | number | null;

/**
 * Fills `out` with the HOT_ATTRIBUTES column values of a span (looked up exactly as the query
 * language does) and returns the `hot_odd` flag: 1 when a value has a type its column cannot hold.
 */
export function hotValues(attributes: Attributes, out: HotValue[]): 1 | null {
  let odd: 1 | null = null;
  for (let i = 0; i < HOT_ATTRIBUTES.length; i++) {
    const h = HOT_ATTRIBUTES[i]!;
    const v = lookupKey(attributes, h.key);
    if (v === undefined || v === null) out[i] = null;
    else if (h.kind === 'text' ? typeof v === 'string' : typeof v === 'number' && Number.isFinite(v))
      out[i] = v as string | number;
    else {
      out[i] = null;
      odd = 1;
    }
  }
  return odd;
}

const HOT_COLUMNS = [...HOT_ATTRIBUTES.map((h) => h.column), 'hot_odd'];
const MIGRATE_CHUNK = 5000;

/**
 * Brings a data dir written by an older collector up to SCHEMA_VERSION, in one transaction (a crash
 * half-way leaves the old schema, migrated again on the next start). Version 1 → 2: adds the GenAI
 * columns and fills them from the stored records.
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
    db.exec(GENAI_INDEX);
    db.prepare('INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)').run('schema', String(SCHEMA_VERSION));
  });
}

/** The durable span/log store (node:sqlite, WAL). Synchronous: callers batch into insertBatch. */
export function createSpanStore(options: SpanStoreOptions) {
  mkdirSync(options.dataDir, { recursive: true });
  const path = join(options.dataDir, 'collector.sqlite');
  const db = new DatabaseSync(path);
  db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;
    PRAGMA temp_store = MEMORY; PRAGMA cache_size = -65536; PRAGMA mmap_size = 268435456;`);
  db.exec(SCHEMA);
  const version = db.prepare("SELECT value FROM meta WHERE key = 'schema'").get() as
    { value: string } | undefined;
  if (version?.value !== String(SCHEMA_VERSION)) migrate(db);
  const background = options.backgroundCheckpoints ?? true;
  // A reset WAL is cut back to 64 MiB, so one burst does not leave a huge file behind.
  db.exec('PRAGMA journal_size_limit = 67108864');
  if (background) db.exec('PRAGMA wal_autocheckpoint = 0');
  const checkpointer = background ? startCheckpointer(path) : undefined;
  let batchesSinceWalCheck = 0;
  /** The writer's fallback when the background checkpointer cannot keep up (or is not running). */
  function capWal(): void {
    if (!background || ++batchesSinceWalCheck < 64) return;
    batchesSinceWalCheck = 0;
    let size: number;
    try {
      size = statSync(`${path}-wal`).size;
    } catch {
      return;
    }
    if (size > WAL_CAP_BYTES) db.exec('PRAGMA wal_checkpoint(PASSIVE)');
  }
  const indexPercent = options.traceIndexPercent ?? 100;
  const maxKeys = options.maxAttributeKeys ?? 10_000;

  const spanInsert = (rows: number): string =>
    `INSERT INTO spans (trace_id, span_id, parent_span_id, start_us, end_us, duration_ns, service, session_id,
    name, status, kind, doc, ${HOT_COLUMNS.join(', ')}) VALUES ${Array.from(
      { length: rows },
      () => `(${new Array(SPAN_COLUMNS).fill('?').join(', ')})`,
    ).join(', ')}`;
  const insertSpan = db.prepare(spanInsert(1));
  const insertChunk = db.prepare(spanInsert(CHUNK));
  const insertLog = db.prepare(
    'INSERT INTO logs (trace_id, span_id, time_us, severity, doc) VALUES (?, ?, ?, ?, ?)',
  );
  const markTrace = db.prepare('INSERT OR IGNORE INTO dirty_traces (trace_id) VALUES (?)');
  const markSession = db.prepare('INSERT OR IGNORE INTO dirty_sessions (session_id) VALUES (?)');
  const upsertService = db.prepare(`INSERT INTO services (name, span_count, last_us) VALUES (?, ?, ?)
    ON CONFLICT(name) DO UPDATE SET span_count = span_count + excluded.span_count,
    last_us = max(last_us, excluded.last_us)`);
  const insertKey = db.prepare('INSERT OR IGNORE INTO attribute_keys (key) VALUES (?)');
  const spansOfTraceStmt = db.prepare('SELECT doc FROM spans WHERE trace_id = ? ORDER BY start_us, id');
  const logsOfTraceStmt = db.prepare('SELECT doc FROM logs WHERE trace_id = ? ORDER BY time_us, id');
  const traceIdsOfSession = db.prepare(
    'SELECT trace_id, min(start_us) AS s FROM spans WHERE session_id = ? GROUP BY trace_id ORDER BY s',
  );
  const traceSummaryStmt = db.prepare(
    'SELECT summary, (SELECT 1 FROM dirty_traces d WHERE d.trace_id = t.trace_id) AS dirty FROM traces t WHERE trace_id = ?',
  );

  const keys = new Set<string>(
    (db.prepare('SELECT key FROM attribute_keys').all() as { key: string }[]).map((r) => r.key),
  );

  // Raw attribute keys seen per prefix, so the hot path checks a Set without building strings.
  const seen = new Map<string, Set<string>>();
  for (const key of keys) {
    const prefix = key.startsWith('resource.attributes.') ? 'resource.attributes.' : 'attributes.';
    let set = seen.get(prefix);
    if (!set) seen.set(prefix, (set = new Set()));
    set.add(key.slice(prefix.length));
  }

  function rememberKeys(prefix: string, attrs: object): void {
    let set = seen.get(prefix);
    if (!set) seen.set(prefix, (set = new Set()));
    for (const k in attrs) {
      if (set.has(k)) continue;
      if (keys.size >= maxKeys) return;
      set.add(k);
      keys.add(prefix + k);
      insertKey.run(prefix + k);
    }
  }

  // Spans of one request share their resource and scope objects: serialize those once.
  let cachedResource: object | undefined;
  let cachedResourceJson = '';
  let cachedScope: object | undefined;
  let cachedScopeJson = '';
  /**
   * The span's stored JSON document, written field by field: ids and enum names need no escaping,
   * numbers are finite, and the resource/scope JSON shared by a request's spans is reused. Parses
   * to the same object as JSON.stringify(span).
   */
  function docJson(s: SpanRecord): string {
    if (s.resource !== cachedResource) {
      cachedResource = s.resource;
      cachedResourceJson = JSON.stringify(s.resource);
    }
    if (s.scope !== cachedScope) {
      cachedScope = s.scope;
      cachedScopeJson = JSON.stringify(s.scope);
    }
    let doc = `{"resource":${cachedResourceJson},"scope":${cachedScopeJson},"traceId":"${s.traceId}","spanId":"${s.spanId}"`;
    if (s.parentSpanId !== undefined) doc += `,"parentSpanId":"${s.parentSpanId}"`;
    if (s.traceState !== undefined) doc += `,"traceState":${JSON.stringify(s.traceState)}`;
    if (s.flags !== undefined) doc += `,"flags":${num(s.flags)}`;
    doc += `,"name":${JSON.stringify(s.name)},"kind":"${s.kind}","startTimeUnixNano":${num(s.startTimeUnixNano)},"endTimeUnixNano":${num(s.endTimeUnixNano)},"durationNano":${num(s.durationNano)},"attributes":${JSON.stringify(s.attributes)},"status":{"code":"${s.status.code}"`;
    if (s.status.message !== undefined) doc += `,"message":${JSON.stringify(s.status.message)}`;
    return `${doc}},"events":${s.events.length ? JSON.stringify(s.events) : '[]'},"links":${s.links.length ? JSON.stringify(s.links) : '[]'}}`;
  }

  const transaction = <T>(fn: () => T): T => inTransaction(db, fn);
  const hot: HotValue[] = [];
  const row: SQLInputValue[] = new Array<SQLInputValue>(CHUNK * SPAN_COLUMNS).fill(null);

  /** Writes the column values of one span into `out` from `offset` (the insert's column order). */
  function spanRow(s: SpanRecord, out: SQLInputValue[], offset: number): void {
    const svc = s.resource.attributes['service.name'];
    const odd = hotValues(s.attributes, hot);
    out[offset] = s.traceId;
    out[offset + 1] = s.spanId;
    out[offset + 2] = s.parentSpanId ?? null;
    out[offset + 3] = nsToUs(s.startTimeUnixNano);
    out[offset + 4] = nsToUs(s.startTimeUnixNano + s.durationNano);
    out[offset + 5] = s.durationNano;
    out[offset + 6] = typeof svc === 'string' ? svc : null;
    out[offset + 7] = sessionIdOf(s.attributes, s.resource.attributes) ?? null;
    out[offset + 8] = s.name;
    out[offset + 9] = s.status.code;
    out[offset + 10] = s.kind;
    out[offset + 11] = docJson(s);
    for (let k = 0; k < HOT_ATTRIBUTES.length; k++) out[offset + 12 + k] = hot[k]!;
    out[offset + 17] = odd;
  }

  /** Inserts the first `n` rows of `row` one by one; false where the span was already stored. */
  function insertRows(n: number): boolean[] {
    const done: boolean[] = [];
    for (let j = 0; j < n; j++) {
      try {
        insertSpan.run(...row.slice(j * SPAN_COLUMNS, (j + 1) * SPAN_COLUMNS));
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

  /** Stores spans and logs in one transaction (all or nothing). */
  function insertBatch(spans: readonly SpanRecord[], logs: readonly LogRecord[] = []): void {
    if (!spans.length && !logs.length) return;
    transaction(() => {
      const traces = new Set<string>();
      const sessions = new Set<string>();
      const services = new Map<string, { n: number; last: number }>();
      let lastResource: object | undefined;
      // Rows go in CHUNK at a time through one multi-row INSERT (one call, one statement step,
      // instead of CHUNK); a chunk holding a span already stored (an exporter retry) fails as a
      // whole and is inserted again row by row, where the stored copy wins.
      for (let i = 0; i < spans.length; i += CHUNK) {
        const n = Math.min(CHUNK, spans.length - i);
        for (let j = 0; j < n; j++) spanRow(spans[i + j]!, row, j * SPAN_COLUMNS);
        let inserted: boolean[] | undefined;
        if (n === CHUNK) {
          try {
            insertChunk.run(...row);
          } catch (error) {
            if ((error as { errcode?: number }).errcode !== SQLITE_CONSTRAINT_UNIQUE) throw error;
            inserted = insertRows(n);
          }
        } else inserted = insertRows(n);
        for (let j = 0; j < n; j++) {
          if (inserted && !inserted[j]) continue;
          const s = spans[i + j]!;
          const o = j * SPAN_COLUMNS;
          const service = row[o + 6] as string | null;
          const session = row[o + 7] as string | null;
          const endUs = row[o + 4] as number;
          if (isTraceIndexed(s.traceId, indexPercent)) traces.add(s.traceId);
          if (session !== null) sessions.add(session);
          if (service !== null) {
            const e = services.get(service);
            if (e) {
              e.n++;
              if (endUs > e.last) e.last = endUs;
            } else services.set(service, { n: 1, last: endUs });
          }
          if (keys.size < maxKeys) {
            rememberKeys('attributes.', s.attributes);
            if (s.resource !== lastResource) {
              lastResource = s.resource;
              rememberKeys('resource.attributes.', s.resource.attributes);
            }
          }
        }
      }
      for (const l of logs) {
        insertLog.run(
          l.traceId ?? null,
          l.spanId ?? null,
          nsToUs(l.timeUnixNano || l.observedTimeUnixNano),
          l.severityNumber,
          JSON.stringify(l),
        );
      }
      for (const id of traces) markTrace.run(id);
      for (const id of sessions) markSession.run(id);
      for (const [name, e] of services) upsertService.run(name, e.n, e.last);
    });
    capWal();
  }

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
    return ids.map((r) => traceSummary(r.trace_id)).filter((t) => t !== undefined);
  }

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
   * Recomputes up to `limit` stale trace and session summaries (marked dirty at ingest). Returns
   * how many were refreshed, so a background loop knows whether there is more to do.
   */
  function refreshSummaries(limit = SUMMARY_REFRESH_LIMIT): number {
    return transaction(() => {
      let n = 0;
      for (const { trace_id: id } of dirtyTraces.all(limit) as { trace_id: string }[]) {
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
      for (const { session_id: id } of dirtySessions.all(limit) as { session_id: string }[]) {
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

  function listTraces(filter: TraceListFilter = {}): TraceSummary[] {
    refreshSummaries();
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
    if (filter.sessionId) {
      where.push('trace_id IN (SELECT trace_id FROM spans WHERE session_id = ?)');
      params.push(filter.sessionId);
    }
    const q = filter.q?.trim();
    if (q) {
      if (/^[0-9a-fA-F]{32}$/.test(q)) {
        where.push('trace_id = ?');
        params.push(q.toLowerCase());
      } else {
        where.push("trace_id IN (SELECT trace_id FROM spans WHERE doc LIKE ? ESCAPE '\\')");
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
    refreshSummaries();
    const rows = listSessionsStmt.all(Math.max(1, Math.min(limit, 1000))) as { summary: string }[];
    return rows.map((r) => JSON.parse(r.summary) as SessionSummary);
  }

  function getSession(sessionId: string): { session: SessionSummary; traces: TraceSummary[] } | undefined {
    refreshSummaries();
    const traces = sessionTraces(sessionId);
    if (!traces.length) return undefined;
    return { session: summarizeSession(sessionId, traces), traces };
  }

  function services(): { name: string; spanCount: number; lastSeenUnixNano: number }[] {
    const rows = db.prepare('SELECT name, span_count, last_us FROM services ORDER BY last_us DESC').all() as {
      name: string;
      span_count: number;
      last_us: number;
    }[];
    return rows.map((r) => ({ name: r.name, spanCount: r.span_count, lastSeenUnixNano: r.last_us * 1000 }));
  }

  function attributeKeys(): string[] {
    return [...FIXED_KEYS, 'resource.attributes.service.name', ...[...keys].sort()].filter(
      (k, i, all) => all.indexOf(k) === i,
    );
  }

  const liveBytes = (): number => {
    const get = (p: string): number => Number((db.prepare(`PRAGMA ${p}`).get() as Record<string, number>)[p]);
    return (get('page_count') - get('freelist_count')) * get('page_size');
  };

  /** Deletes by age and by size (oldest first). Returns the number of records (spans, logs) deleted. */
  function applyRetention(opts: RetentionOptions, nowMs = Date.now()): number {
    let deleted = 0;
    const chunk = 5000;
    if (opts.maxAgeMs !== undefined && opts.maxAgeMs > 0) {
      const cutoffUs = (nowMs - opts.maxAgeMs) * 1000;
      deleted += Number(db.prepare('DELETE FROM spans WHERE start_us < ?').run(cutoffUs).changes);
      db.prepare('DELETE FROM logs WHERE time_us < ?').run(cutoffUs);
    }
    if (opts.maxBytes !== undefined && opts.maxBytes > 0) {
      const oldest = db.prepare(
        'DELETE FROM spans WHERE id IN (SELECT id FROM spans ORDER BY start_us LIMIT ?)',
      );
      const oldestLogs = db.prepare(
        'DELETE FROM logs WHERE id IN (SELECT id FROM logs ORDER BY time_us LIMIT ?)',
      );
      const countOf = (table: string): number =>
        (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
      for (let i = 0; i < 10_000; i++) {
        const live = liveBytes();
        if (live <= opts.maxBytes) break;
        // Delete about the share of rows that is over the cap (a little more), oldest first.
        const share = Math.min(1, ((live - opts.maxBytes) / live) * 1.1);
        const spansN = countOf('spans');
        const logsN = countOf('logs');
        if (!spansN && !logsN) break;
        const n =
          Number(oldest.run(Math.min(chunk, Math.ceil(spansN * share))).changes) +
          Number(oldestLogs.run(Math.min(chunk, Math.ceil(logsN * share))).changes);
        if (!n) break;
        deleted += n;
      }
    }
    if (deleted) {
      transaction(() => {
        db.exec(`INSERT OR IGNORE INTO dirty_traces SELECT trace_id FROM traces
          WHERE trace_id NOT IN (SELECT trace_id FROM spans)`);
        db.exec(`INSERT OR IGNORE INTO dirty_sessions SELECT session_id FROM sessions
          WHERE session_id NOT IN (SELECT session_id FROM spans WHERE session_id IS NOT NULL)`);
        db.exec(`DELETE FROM services;
          INSERT INTO services (name, span_count, last_us)
          SELECT service, count(*), max(end_us) FROM spans WHERE service IS NOT NULL GROUP BY service`);
      });
    }
    return deleted;
  }

  return {
    path,
    /** The raw connection, for the query engine (read-only use). */
    db,
    insertBatch,
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
      checkpointer?.stop();
      if (db.isOpen) db.close();
    },
  };
}
