// GET /api/logs on ClickHouse: the same filters and rows as the SQLite store's queryLogs
// (logs/log-query.ts). 18.16 has no JSON path functions (JSONExtract came in 19.x), so the filters on
// fields inside the record (session, service, body text) narrow in SQL by the record's JSON text and
// are checked exactly on the parsed record. The cursor is the record's time in µs (ClickHouse has no
// row ids): `after` gives the records timed after it, oldest first.
import type { LogQuery, LogQueryResult, LogRow } from '../../logs/log-query.js';
import type { LogRecord } from '../../wire-types.js';
import { literal } from './rows.js';

export interface ClickHouseLogsContext {
  select<T>(sql: string): Promise<T[]>;
  /** The logs table, and the session → trace pairs (both Distributed with a cluster). */
  logs: string;
  sessionTraces: string;
}

/** `"key":value` as JSON.stringify writes it inside a record: a LIKE pattern for that pair. */
function pairPattern(key: string, value: string): string {
  const text = `${JSON.stringify(key)}:${JSON.stringify(value)}`;
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

const sessionOf = (r: LogRecord): unknown =>
  r.attributes['session.id'] ?? r.resource.attributes['session.id'];

function bodyText(r: LogRecord): string {
  const body = (r as { body?: unknown }).body;
  return (typeof body === 'string' ? body : JSON.stringify(body ?? null)).toLowerCase();
}

export async function queryClickHouseLogs(ctx: ClickHouseLogsContext, q: LogQuery): Promise<LogQueryResult> {
  const where: string[] = [];
  if (q.afterCursor !== undefined) where.push(`time_us > ${literal(Math.floor(q.afterCursor))}`);
  if (q.startMs !== undefined) where.push(`time_us >= ${literal(Math.floor(q.startMs * 1000))}`);
  if (q.endMs !== undefined) where.push(`time_us < ${literal(Math.floor(q.endMs * 1000))}`);
  if (q.traceId !== undefined) where.push(`trace_id = ${literal(q.traceId)}`);
  if (q.minSeverity !== undefined) where.push(`severity >= ${literal(q.minSeverity)}`);
  if (q.sessionId !== undefined) {
    where.push(
      `(doc LIKE ${literal(pairPattern('session.id', q.sessionId))} OR trace_id IN (SELECT trace_id FROM ${ctx.sessionTraces} WHERE session_id = ${literal(q.sessionId)}))`,
    );
  }
  if (q.service !== undefined) where.push(`doc LIKE ${literal(pairPattern('service.name', q.service))}`);
  if (q.text !== undefined) where.push(`positionCaseInsensitiveUTF8(doc, ${literal(q.text)}) > 0`);
  const order = q.afterCursor !== undefined ? 'ASC' : 'DESC';
  const rows = await ctx.select<{ time_us: number; doc: string }>(
    `SELECT time_us, doc FROM ${ctx.logs}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY time_us ${order}, time_ns ${order}, span_id ${order} LIMIT ${q.limit}`,
  );
  // The exact checks of what SQL matched by text (a body quoting `"session.id":"x"` matches there).
  const sessionTraces =
    q.sessionId === undefined
      ? undefined
      : new Set(
          (
            await ctx.select<{ trace_id: string }>(
              `SELECT DISTINCT trace_id FROM ${ctx.sessionTraces} WHERE session_id = ${literal(q.sessionId)}`,
            )
          ).map((r) => r.trace_id),
        );
  let cursor = q.afterCursor ?? 0;
  const logs: LogRow[] = [];
  for (const r of rows) {
    const record = JSON.parse(r.doc) as LogRecord;
    const session = sessionOf(record);
    const service = record.resource.attributes['service.name'];
    if (
      q.sessionId !== undefined &&
      session !== q.sessionId &&
      !(record.traceId && sessionTraces!.has(record.traceId))
    )
      continue;
    if (q.service !== undefined && service !== q.service) continue;
    if (q.text !== undefined && !bodyText(record).includes(q.text.toLowerCase())) continue;
    const at = Number(r.time_us);
    cursor = Math.max(cursor, at);
    const row: LogRow = { ...record, cursor: at, service: typeof service === 'string' ? service : '' };
    if (typeof session === 'string') row.sessionId = session;
    logs.push(row);
  }
  if (q.afterCursor === undefined && !rows.length) {
    const [last] = await ctx.select<{ t: number }>(`SELECT max(time_us) AS t FROM ${ctx.logs}`);
    cursor = Number(last?.t ?? 0);
  }
  return { logs, cursor };
}
