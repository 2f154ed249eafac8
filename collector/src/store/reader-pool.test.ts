import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../logger.js';
import { decodeTraceRequestJson } from '../otlp/decode-json.js';
import { type SpanStore, createSpanStore } from './sqlite/span-store.js';
import { hex, jsonRequest, jsonSpan, tempDir } from '../testing.test-util.js';
import type { QueryResponse } from '../wire-types.js';
import { QueryFailure } from '../query/query-error.js';
import { ReaderBusyError } from './reader-errors.js';
import { createQueryPool } from './reader-pool.js';

const T0 = Date.UTC(2026, 10, 21, 12);
/** A query of seconds that matches nothing (one regex would take a few hundred ms on a fast machine). */
const SLOW = `filter ${Array.from({ length: 16 }, (_, i) => `attributes.blob like /^(a+)+b${i}$/`).join(' or ')} | stats count(*)`;
const decode = (json: Uint8Array): QueryResponse => JSON.parse(Buffer.from(json).toString()) as QueryResponse;

describe('query pool', () => {
  let store: SpanStore;
  let tmp: ReturnType<typeof tempDir>;

  beforeAll(() => {
    tmp = tempDir();
    store = createSpanStore({ dataDir: tmp.dir });
    // 24 spans with a 1M-character value: SLOW's 16 regexes over them take seconds in total (each
    // about 8 ms a row here) but only ~0.1 s per row, so the engine's between-rows budget check
    // (every 256 rows) never fires.
    const big = 'a'.repeat(1 << 20);
    const spans = Array.from({ length: 24 }, (_, i) =>
      jsonSpan({
        traceId: hex(1, 16),
        spanId: hex(i + 1, 8),
        name: 'big',
        startMs: T0 + i,
        durationMs: 1,
        attributes: { blob: big.slice(0, (1 << 20) - (i % 2)) },
      }),
    );
    store.insertBatch(decodeTraceRequestJson(JSON.stringify(jsonRequest('svc', spans))).spans);
  });
  afterAll(() => {
    store.close();
    tmp.remove();
  });

  it('answers queries from its threads, and their errors as 400 bodies', async () => {
    const pool = await createQueryPool({ path: store.path, logger: silentLogger, size: 1 });
    try {
      const r = decode(await pool.run('stats count(*) as n by name'));
      expect(r.rows).toEqual([{ name: 'big', n: 24 }]);
      const failed = await pool.run('filter name = ').catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(QueryFailure);
      expect((failed as QueryFailure).body).toMatchObject({ error: 'QuerySyntaxError', position: 14 });
      const bomb = await pool.run('filter attributes.blob like /(a)\\1/').catch((e: unknown) => e);
      expect((bomb as QueryFailure).body.message).toMatch(/RE2.*no backreferences/);
    } finally {
      await pool.close();
    }
  });

  it('stops a query at its deadline by replacing its thread, and keeps answering', async () => {
    const pool = await createQueryPool({
      path: store.path,
      logger: silentLogger,
      size: 1,
      timeoutMs: 300,
      graceMs: 100,
    });
    try {
      const started = performance.now();
      const slow = await pool.run(SLOW).catch((e: unknown) => e);
      const took = performance.now() - started;
      expect(slow).toBeInstanceOf(QueryFailure);
      expect((slow as QueryFailure).body.message).toMatch(/stopped at its 300 ms deadline/);
      expect(took).toBeLessThan(2000);
      expect(pool.stats.stoppedAtDeadline).toBe(1);
      // The replacement thread answers the next query once it is up (it starts in the background;
      // a query that waits past its own deadline for it is refused meanwhile).
      await expect
        .poll(
          async () => pool.run('filter name = "big" | stats count(*) as n').then(decode, () => undefined),
          {
            timeout: 10_000,
            interval: 200,
          },
        )
        .toMatchObject({ rows: [{ n: 24 }] });
      // At least the slow query's thread was replaced: on a loaded machine a poll may also pass its
      // deadline on the replacement while it starts, and be stopped with it.
      expect(pool.stats.replacedThreads).toBeGreaterThanOrEqual(1);
    } finally {
      await pool.close();
    }
  });

  it('queues queries while its threads are busy and refuses past the queue with 429', async () => {
    const pool = await createQueryPool({
      path: store.path,
      logger: silentLogger,
      size: 1,
      maxQueued: 1,
      timeoutMs: 300,
      graceMs: 100,
    });
    try {
      const results = await Promise.allSettled([pool.run(SLOW), pool.run(SLOW), pool.run(SLOW)]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
      expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(ReaderBusyError);
      // The queued one met its own deadline: it counts from when it was queued, waiting included.
      expect(((results[1] as PromiseRejectedResult).reason as QueryFailure).body.message).toMatch(
        /deadline|waited 300 ms/,
      );
    } finally {
      await pool.close();
    }
  });

  it('caps the bytes of a result with a hint instead of building it', async () => {
    const pool = await createQueryPool({
      path: store.path,
      logger: silentLogger,
      size: 1,
      maxResultBytes: 4 << 20,
    });
    try {
      const failed = (await pool
        .run('fields attributes.blob | limit 10')
        .catch((e: unknown) => e)) as QueryFailure;
      expect(failed.body.message).toMatch(/more than 4194304; select fewer fields/);
      expect(decode(await pool.run('fields attributes.blob | limit 2')).rows).toHaveLength(2);
    } finally {
      await pool.close();
    }
  });
});
