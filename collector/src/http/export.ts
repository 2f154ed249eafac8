import type { ServerResponse } from 'node:http';
import { HttpError } from '@agentrt/kit';
import type { ExportSelection } from '../store/export-page.js';
import type { Backend } from '../store/store.js';

export interface ExportStreamerOptions {
  /** Exports of time ranges running at once, and of single traces besides; more get 429 (default 2). */
  maxConcurrent?: number;
}

/**
 * Exports as OTLP/JSON lines: ExportTraceServiceRequest lines (each about a megabyte of records),
 * then ExportLogsServiceRequest lines. Each page is read and encoded elsewhere (a query thread: a
 * short keyset statement by time and id), written, and the next is read only once the client took
 * it (back-pressure): memory stays at a page or two however much is exported, and the main thread
 * only passes bytes on. Each line is a request `traces import` (or any OTLP/HTTP receiver) takes
 * as it is. An export reads what was acknowledged before it started (and may see later records).
 */
export function createExportStreamer(
  store: Pick<Backend, 'exportPage' | 'caughtUp'>,
  options: ExportStreamerOptions = {},
) {
  const readPage = store.exportPage;
  const maxConcurrent = options.maxConcurrent ?? 2;
  /** Exports running now: of time ranges, and of single traces (slots of their own). */
  const running = { ranges: 0, traces: 0 };

  async function write(res: ServerResponse, line: Uint8Array): Promise<boolean> {
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

  /** Runs an export in a slot of its kind, or refuses it with 429 when they are all taken. */
  async function inSlot(kind: 'ranges' | 'traces', run: () => Promise<void>): Promise<void> {
    const busy = running[kind];
    if (busy >= maxConcurrent) {
      throw new HttpError(
        429,
        `${busy} ${kind === 'traces' ? 'trace exports' : 'exports'} are running; retry shortly`,
        { code: 'too_many_exports', headers: { 'retry-after': '2' } },
      );
    }
    running[kind]++;
    try {
      await run();
    } finally {
      running[kind]--;
    }
  }

  return {
    /** Exports running now. */
    get running(): number {
      return running.ranges + running.traces;
    },
    async stream(sel: ExportSelection, res: ServerResponse): Promise<void> {
      // One trace (the UI's "export trace") is not held up by exports of whole time ranges: it
      // has slots of its own, as many again as there are for ranges
      await inSlot('traceId' in sel ? 'traces' : 'ranges', async () => {
        await store.caughtUp();
        let page = await readPage('spans', sel, [-Infinity, 0]);
        if ('traceId' in sel && !page)
          throw new HttpError(404, `trace ${sel.traceId} not found`, { code: 'not_found' });
        res.writeHead(200, { 'content-type': 'application/x-ndjson' });
        for (const table of ['spans', 'logs'] as const) {
          if (table === 'logs') page = await readPage('logs', sel, [-Infinity, 0]);
          while (page) {
            if (!(await write(res, page.line))) return;
            page = await readPage(table, sel, page.last);
          }
        }
        res.end();
      });
    },
    /**
     * Every span (or log record) of these traces (a session's, or one trace's), one stored record
     * a line, trace after trace and each in start order: a page at a time, like any export, so a
     * trace or session of any size streams in the memory of a page and its first records reach the
     * client before the rest are read. Takes a slot of the single-trace exports. `notFound` is
     * thrown (before any byte is sent) when there is not one record.
     */
    async streamRecords(
      table: 'spans' | 'logs',
      traceIds: readonly string[],
      res: ServerResponse,
      notFound?: HttpError,
    ): Promise<void> {
      await inSlot('traces', async () => {
        await store.caughtUp();
        let started = false;
        for (const traceId of traceIds) {
          let page = await readPage(table, { traceId }, [-Infinity, 0], 'records');
          while (page) {
            if (!started) res.writeHead(200, { 'content-type': 'application/x-ndjson' });
            started = true;
            if (!(await write(res, page.line))) return;
            page = await readPage(table, { traceId }, page.last, 'records');
          }
        }
        if (!started && notFound) throw notFound;
        if (!started) res.writeHead(200, { 'content-type': 'application/x-ndjson' });
        res.end();
      });
    },
  };
}
