import type { ServerResponse } from 'node:http';
import type { StatementSync } from 'node:sqlite';
import { logsToOtlpJson, spansToOtlpJson } from '../otlp/encode-json.js';
import type { SpanStore } from '../store/span-store.js';
import type { LogRecord, SpanRecord } from '../wire-types.js';
import { HttpError } from './http-error.js';

/** What to export: one trace, or a time window (epoch µs, end exclusive). */
export type ExportSelection = { traceId: string } | { startUs: number; endUs: number };

export interface ExportStreamerOptions {
  /** Records per line (one OTLP request each). Default 1000. */
  chunkRecords?: number;
  /** A line ends once its records' JSON passes this many characters (default 1 MiB). */
  chunkBytes?: number;
  /** Exports running at once; more get 429 (default 2). */
  maxConcurrent?: number;
}

/**
 * Exports as OTLP/JSON lines: ExportTraceServiceRequest lines of up to `chunkRecords` spans (or about
 * `chunkBytes` of records), then
 * ExportLogsServiceRequest lines. Each chunk is read by its own short statement (keyset by time and
 * id), written, and the next is read only once the client took it (back-pressure): memory stays at
 * one chunk however much is exported, and the event loop serves other requests between chunks.
 * Each line is a request `traces import` (or any OTLP/HTTP receiver) takes as it is.
 */
export function createExportStreamer(store: SpanStore, options: ExportStreamerOptions = {}) {
  const chunk = options.chunkRecords ?? 1000;
  const chunkBytes = options.chunkBytes ?? 1 << 20;
  const maxConcurrent = options.maxConcurrent ?? 2;
  let running = 0;
  const statements = new Map<string, StatementSync>();
  const prepared = (sql: string): StatementSync => {
    let s = statements.get(sql);
    if (!s) statements.set(sql, (s = store.prepare(sql)));
    return s;
  };

  /** Rows of one table after the key (time, id), up to a chunk, for the selection. */
  function page(
    table: 'spans' | 'logs',
    sel: ExportSelection,
    after: [number, number],
  ): { id: number; t: number; doc: string }[] {
    const time = table === 'spans' ? 'start_us' : 'time_us';
    const where = 'traceId' in sel ? 'trace_id = ?' : `${time} >= ? AND ${time} < ?`;
    const args = 'traceId' in sel ? [sel.traceId] : [sel.startUs, sel.endUs];
    const rows: { id: number; t: number; doc: string }[] = [];
    let bytes = 0;
    const stmt = prepared(
      `SELECT id, ${time} AS t, doc FROM ${table} WHERE ${where} AND (${time}, id) > (?, ?) ORDER BY ${time}, id LIMIT ?`,
    );
    for (const r of stmt.iterate(...args, after[0], after[1], chunk) as Iterable<{
      id: number;
      t: number;
      doc: string;
    }>) {
      rows.push(r);
      bytes += r.doc.length;
      // Big records (prompts, tool output) make shorter lines: a line stays about a megabyte.
      if (bytes >= chunkBytes) break;
    }
    return rows;
  }

  async function write(res: ServerResponse, line: string): Promise<boolean> {
    if (res.destroyed) return false;
    if (!res.write(line)) {
      // Wait for the client to take it; a client that goes away ends the export.
      await new Promise<void>((resolve) => {
        const done = (): void => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    }
    return !res.destroyed;
  }

  return {
    /** Exports running now. */
    get running(): number {
      return running;
    },
    async stream(sel: ExportSelection, res: ServerResponse): Promise<void> {
      if (running >= maxConcurrent) {
        throw new HttpError(429, 'too_many_exports', `${running} exports are running; retry shortly`, {
          headers: { 'retry-after': '2' },
        });
      }
      if ('traceId' in sel && !page('spans', sel, [-Infinity, 0]).length)
        throw new HttpError(404, 'not_found', `trace ${sel.traceId} not found`);
      running++;
      try {
        res.writeHead(200, { 'content-type': 'application/x-ndjson' });
        for (const table of ['spans', 'logs'] as const) {
          for (let after: [number, number] = [-Infinity, 0]; ;) {
            const rows = page(table, sel, after);
            if (!rows.length) break;
            const last = rows[rows.length - 1]!;
            after = [last.t, last.id];
            const docs = rows.map((r) => JSON.parse(r.doc) as SpanRecord & LogRecord);
            const body = table === 'spans' ? spansToOtlpJson(docs) : logsToOtlpJson(docs);
            if (!(await write(res, `${JSON.stringify(body)}\n`))) return;
          }
        }
        res.end();
      } finally {
        running--;
      }
    },
  };
}
