// A trace's export pages on SQLite (GET /api/traces/{id}/spans reads them): every record once, in
// (start, id) order, those stored between pages included; a big trace's keys are sorted once, not
// once a page — with no index in start order (schema 4), the pages of a 20,001-span trace cost
// about one whole read of the trace, where sorting again for each page cost eleven.
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeTraceRequestJson } from '../../otlp/decode-json.js';
import { hex, jsonRequest, jsonSpan, tempDir } from '../../testing.test-util.js';
import type { SpanRecord } from '../../wire-types.js';
import { type ExportKey, exportPageFromBytes } from '../export-page.js';
import { createReadOps } from './read-ops.js';
import { createSpanStore } from './span-store.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const f of cleanups.splice(0).reverse()) f();
});

const T0 = Date.UTC(2026, 10, 27, 3);
const TRACE = hex(0xbeef, 16);

/** `count` spans of TRACE from span number `from`, starting a ms apart (some sharing a start). */
function traceSpans(from: number, count: number, startMs = (i: number) => T0 + Math.floor(i / 2)) {
  const spans = Array.from({ length: count }, (_, k) =>
    jsonSpan({
      traceId: TRACE,
      spanId: hex(from + k + 1, 8),
      name: `s${from + k}`,
      durationMs: 1,
      startMs: startMs(from + k),
    }),
  );
  return decodeTraceRequestJson(JSON.stringify(jsonRequest('pages', spans))).spans;
}

/** A store, and a query thread's reads on a read-only connection of their own. */
function open() {
  const tmp = tempDir();
  const store = createSpanStore({ dataDir: tmp.dir, traceIndexPercent: 100 });
  const db = new DatabaseSync(join(tmp.dir, 'collector.sqlite'), { readOnly: true });
  cleanups.push(
    tmp.remove,
    () => store.close(),
    () => db.close(),
  );
  return { store, db, ops: () => createReadOps(db, () => db) };
}

/** The pages after `after`, up to `pages` of them, as the thread answers them; the last key read. */
function readPages(ops: ReturnType<typeof createReadOps>, after: ExportKey, pages = Infinity) {
  const lines: Uint8Array[] = [];
  for (let n = 0; n < pages; n++) {
    const page = exportPageFromBytes(ops.exportPage('spans', { traceId: TRACE }, after, 'records'));
    if (!page) break;
    lines.push(page.line);
    after = page.last;
  }
  return { lines, after };
}

/** The span names in pages. */
const namesOf = (lines: Uint8Array[]): string[] =>
  lines.flatMap((line) =>
    new TextDecoder()
      .decode(line)
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as SpanRecord).name),
  );

/** The records in pages (one a line). */
const countOf = (lines: Uint8Array[]): number =>
  lines.reduce((n, l) => n + l.filter((b) => b === 10).length, 0);

describe('a trace in export pages (SQLite)', () => {
  it('reads every span once in (start, id) order, and spans stored between pages too', () => {
    const { store, ops: thread } = open();
    const ops = thread();
    // Stored in reverse, in several batches: the order is the store's, not the arrival's.
    const spans = traceSpans(0, 2600).reverse();
    for (let i = 0; i < spans.length; i += 700) store.insertBatch(spans.slice(i, i + 700));
    const first = readPages(ops, [-Infinity, 0], 2);
    expect(countOf(first.lines)).toBe(2000);
    // Later than every span read so far: the next pages have them.
    store.insertBatch(traceSpans(5000, 3, () => T0 + 10_000));
    const rest = readPages(ops, first.after);
    const names = namesOf([...first.lines, ...rest.lines]);
    const expected = [...Array.from({ length: 2600 }, (_, i) => `s${i}`), 's5000', 's5001', 's5002'];
    // Two spans share each start: the row id (insertion order, reversed here) breaks the tie.
    const byKey = (list: string[]) => list.map((n) => Math.floor(Number(n.slice(1)) / 2)).join(',');
    expect(byKey(names)).toBe(byKey(expected));
    expect(new Set(names)).toEqual(new Set(expected));
    expect(names).toHaveLength(expected.length);
  });

  it('costs a big trace about one whole read, not a sort of every key per page', () => {
    const { store, ops, db } = open();
    const spans = traceSpans(0, 20_001).reverse();
    for (let i = 0; i < spans.length; i += 5000) store.insertBatch(spans.slice(i, i + 5000));
    const whole = db.prepare(`SELECT doc FROM spans WHERE trace_id = ? ORDER BY start_us, id`);
    // Best of three each (a loaded machine), alternating; CPU of this thread.
    let pagesUs = Infinity;
    let wholeUs = Infinity;
    for (let round = 0; round < 3; round++) {
      let t = process.cpuUsage();
      // A fresh thread's reads: nothing kept from the round before.
      const pages = readPages(ops(), [-Infinity, 0]).lines;
      t = process.cpuUsage(t);
      pagesUs = Math.min(pagesUs, t.user + t.system);
      expect(countOf(pages)).toBe(20_001);
      t = process.cpuUsage();
      expect(whole.all(TRACE)).toHaveLength(20_001);
      t = process.cpuUsage(t);
      wholeUs = Math.min(wholeUs, t.user + t.system);
    }
    // Sorting every key again for each of the 21 pages made this 11× (3.5–3.9× now, the pages encoded too).
    expect(pagesUs / wholeUs, `pages ${pagesUs} µs, whole ${wholeUs} µs`).toBeLessThan(6);
  });
});
