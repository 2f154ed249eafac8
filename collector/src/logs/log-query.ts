import { type DatabaseSync } from 'node:sqlite';
import { DEADLINE_GUARD_SQL } from '../query/sqlite-deadline.js';
import type { LogRecord } from '../wire-types.js';

/** Filters of GET /api/logs; every one given must hold. */
export interface LogQuery {
  sessionId?: string;
  traceId?: string;
  /** resource `service.name` */
  service?: string;
  /** lowest severity number (OTLP: 5 DEBUG, 9 INFO, 13 WARN, 17 ERROR, 21 FATAL) */
  minSeverity?: number;
  /** case-insensitive substring of the body */
  text?: string;
  startMs?: number;
  endMs?: number;
  /** only records stored after this cursor (a `cursor` of an earlier answer): live tail */
  afterCursor?: number;
  limit: number;
}

/** A stored log record with its row cursor and the fields the views show in columns. */
export interface LogRow extends LogRecord {
  cursor: number;
  service: string;
  sessionId?: string;
}

export interface LogQueryResult {
  logs: LogRow[];
  /** Pass as `after` to get only newer records (the highest cursor seen, or the one given). */
  cursor: number;
}

export const SEVERITY_NAMES: Record<string, number> = {
  trace: 1,
  debug: 5,
  info: 9,
  warn: 13,
  error: 17,
  fatal: 21,
};

const SESSION = `coalesce(json_extract(doc, '$.attributes."session.id"'), json_extract(doc, '$.resource.attributes."session.id"'))`;

/**
 * Log records by session, trace, service, severity and text, newest first (oldest first with a
 * cursor, for a live tail). The collector runs it on a query thread (read-ops.ts). A session's records are the ones tagged with its `session.id` and the
 * ones of its traces, so runtime logs and agent logs of one conversation come together.
 */
export function queryLogs(db: DatabaseSync, q: LogQuery): LogQueryResult {
  // The deadline guard first: a search matching nothing scans every record (a query thread's
  // deadline stops it there).
  const where: string[] = [DEADLINE_GUARD_SQL];
  const args: (string | number)[] = [];
  if (q.afterCursor !== undefined) {
    where.push('id > ?');
    args.push(q.afterCursor);
  }
  if (q.startMs !== undefined) {
    where.push('time_us >= ?');
    args.push(Math.floor(q.startMs * 1000));
  }
  if (q.endMs !== undefined) {
    where.push('time_us < ?');
    args.push(Math.floor(q.endMs * 1000));
  }
  if (q.traceId !== undefined) {
    where.push('trace_id = ?');
    args.push(q.traceId);
  }
  if (q.minSeverity !== undefined) {
    where.push('severity >= ?');
    args.push(q.minSeverity);
  }
  if (q.sessionId !== undefined) {
    where.push(`(${SESSION} = ? OR trace_id IN (SELECT DISTINCT trace_id FROM spans WHERE session_id = ?))`);
    args.push(q.sessionId, q.sessionId);
  }
  if (q.service !== undefined) {
    where.push(`json_extract(doc, '$.resource.attributes."service.name"') = ?`);
    args.push(q.service);
  }
  if (q.text !== undefined) {
    where.push(`instr(lower(json_extract(doc, '$.body')), lower(?)) > 0`);
    args.push(q.text);
  }
  const order = q.afterCursor !== undefined ? 'ASC' : 'DESC';
  const rows = db
    .prepare(`SELECT id, doc FROM logs WHERE ${where.join(' AND ')} ORDER BY id ${order} LIMIT ?`)
    .all(...args, q.limit) as { id: number; doc: string }[];
  let cursor = q.afterCursor ?? 0;
  const logs = rows.map((r) => {
    cursor = Math.max(cursor, r.id);
    const record = JSON.parse(r.doc) as LogRecord;
    const session = record.attributes['session.id'] ?? record.resource.attributes['session.id'];
    const service = record.resource.attributes['service.name'];
    const row: LogRow = { ...record, cursor: r.id, service: typeof service === 'string' ? service : '' };
    if (typeof session === 'string') row.sessionId = session;
    return row;
  });
  if (q.afterCursor === undefined && !rows.length) {
    const { id } = (db.prepare('SELECT max(id) AS id FROM logs').get() as { id: number | null }) ?? {};
    cursor = id ?? 0;
  }
  return { logs, cursor };
}
