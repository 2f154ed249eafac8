import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../testing.test-util.js';
import { createSpanStore } from '../store/sqlite/span-store.js';
import { runQuery } from './engine.js';
import { QueryError } from './query-error.js';
import { DEADLINE_FUNCTION, withDeadline } from './sqlite-deadline.js';

const ROWS = 200_000;

describe('a deadline SQLite enforces inside one statement', () => {
  let tmp: ReturnType<typeof tempDir>;
  let db: DatabaseSync;

  beforeAll(() => {
    tmp = tempDir();
    // The span table, filled by SQL (fast): one GROUP BY over it is one long statement.
    const store = createSpanStore({ dataDir: tmp.dir });
    store.close();
    db = new DatabaseSync(`${tmp.dir}/collector.sqlite`);
    db.exec(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT ${ROWS})
      INSERT INTO spans (trace_id, span_id, start_us, end_us, duration_ns, name, status, kind, doc)
      SELECT printf('%032x', x / 10), printf('%016x', x), x, x + 1, 1000, 'op ' || (x % 7), 'OK',
        'INTERNAL', json_object('spanId', printf('%016x', x), 'attributes', json_object('blob', hex(randomblob(40))))
      FROM c`);
  });
  afterAll(() => {
    db?.close();
    tmp?.remove();
  });

  it('stops a single GROUP BY statement at its deadline instead of running it to the end', () => {
    // One statement: stats by spanId groups every row in SQL (a temp b-tree over all of them).
    const query = 'stats count(*) by spanId';
    // CPU time, not wall time: on a loaded machine the process may wait hundreds of ms for a core
    // in either run (CI once read 291 ms stopped against 320 ms in full, both mostly waiting).
    const cpuMs = (since: NodeJS.CpuUsage) => {
      const used = process.cpuUsage(since);
      return (used.user + used.system) / 1000;
    };
    let t = process.cpuUsage();
    const full = runQuery(db, query, { maxQueryMs: 60_000 });
    const fullMs = cpuMs(t);
    expect(full.rows).toHaveLength(ROWS);

    t = process.cpuUsage();
    let error: unknown;
    try {
      runQuery(db, query, { maxQueryMs: 5 });
    } catch (e) {
      error = e;
    }
    const stoppedMs = cpuMs(t);
    expect(error).toBeInstanceOf(QueryError);
    expect((error as QueryError).message).toMatch(/query stopped after \d+ ms/);
    // Stopped in the scan, long before the statement's end (the old floor was the whole statement).
    expect(stoppedMs).toBeLessThan(fullMs / 4);
  });

  it('is off outside a query, and a nested deadline never extends the outer one', () => {
    const stmt = db.prepare(`SELECT count(*) AS n FROM spans WHERE ${DEADLINE_FUNCTION}()`);
    withDeadline(db, Infinity, () => expect(stmt.get()).toEqual({ n: ROWS }));
    expect(() => withDeadline(db, performance.now() - 1, () => stmt.get())).toThrow(/deadline passed/);
    expect(() =>
      withDeadline(db, performance.now() - 1, () => withDeadline(db, Infinity, () => stmt.get())),
    ).toThrow(/deadline passed/);
    expect(stmt.get()).toEqual({ n: ROWS });
  });
});
