import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HOUR_MS, MINUTE_MS, expectSame, expectSameAnswers, fill } from './metric-fixtures.test-util.js';
import { type MetricQuery, type MetricQueryResult, queryMetric } from './metric-query.js';
import { type SqliteMetricStore, createMetricStore } from './sqlite-metric-store.js';
import { planSegments } from './rollups.js';

const HOUR_US = 3_600_000_000;
const FIVE_MIN_US = 300_000_000;

describe('planSegments', () => {
  it('reads whole windows in the middle, finer ones and raw points towards unaligned edges', () => {
    const from = 2 * HOUR_US + 7 * 60_000_000 + 5; // 02:07:00.000005
    const to = 5 * HOUR_US + 12 * 60_000_000; // 05:12
    expect(planSegments(from, to, [HOUR_US, FIVE_MIN_US])).toEqual([
      { widthUs: 0, fromUs: from, toUs: 2 * HOUR_US + 10 * 60_000_000 },
      { widthUs: FIVE_MIN_US, fromUs: 2 * HOUR_US + 10 * 60_000_000, toUs: 3 * HOUR_US },
      { widthUs: HOUR_US, fromUs: 3 * HOUR_US, toUs: 5 * HOUR_US },
      { widthUs: FIVE_MIN_US, fromUs: 5 * HOUR_US, toUs: 5 * HOUR_US + 10 * 60_000_000 },
      { widthUs: 0, fromUs: 5 * HOUR_US + 10 * 60_000_000, toUs: to },
    ]);
    expect(planSegments(from, to, [])).toEqual([{ widthUs: 0, fromUs: from, toUs: to }]);
    // Less than one whole window: finer widths, then raw.
    expect(planSegments(HOUR_US + 1, HOUR_US + 2, [HOUR_US, FIVE_MIN_US])).toEqual([
      { widthUs: 0, fromUs: HOUR_US + 1, toUs: HOUR_US + 2 },
    ]);
    expect(planSegments(5, 5, [HOUR_US])).toEqual([]);
  });
});

describe('metric roll-ups answer as the raw points do', () => {
  let dir: string;
  let store: SqliteMetricStore;
  beforeEach(() => {
    dir = mkdtempSync(join(os.tmpdir(), 'agentrt-rollups-'));
    store = createMetricStore({ dataDir: dir });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Roll-up answers against the raw points' for every query of the fixture over the ranges. */
  const compareAll = (ranges: readonly { startMs: number; endMs: number; stepMs: number }[]) =>
    expectSameAnswers(
      ranges,
      (q) => queryMetric(store, q),
      (q) => queryMetric(store, { ...q, rollups: false }),
    );

  // Under a loaded CI machine this takes several times its ~5 s here.
  it(
    'for every kind and function, aligned and unaligned ranges, coarse, fine and single buckets',
    { timeout: 180_000 },
    async () => {
      const endMs = Date.now();
      const startMs = await fill(store, endMs);
      const hourAligned = Math.ceil(startMs / HOUR_MS) * HOUR_MS;
      const ranges = [
        { startMs, endMs, stepMs: HOUR_MS },
        { startMs, endMs, stepMs: 24 * HOUR_MS },
        { startMs: startMs + 7 * MINUTE_MS + 123, endMs, stepMs: 2 * HOUR_MS },
        { startMs: hourAligned, endMs: hourAligned + 10 * HOUR_MS, stepMs: HOUR_MS },
        { startMs: endMs - 5 * HOUR_MS - 17_321, endMs: endMs - 999, stepMs: 5 * MINUTE_MS },
        { startMs: endMs - 3 * HOUR_MS, endMs, stepMs: 7 * MINUTE_MS }, // raw only
        { startMs: startMs - HOUR_MS, endMs: endMs + 1, stepMs: 3 * 24 * HOUR_MS }, // one bucket
        { startMs: startMs + 1234, endMs: endMs - 4321, stepMs: 15 * MINUTE_MS },
      ];
      expect(await compareAll(ranges)).toBe(29 * 2 * 8); // functions × groupings × ranges

      // The answers come from the roll-ups (not only raw points that agree): change the hour rows
      // and the one-hour query changes, the raw one does not.
      const q: MetricQuery = { name: 'd.sum', fn: 'sum', startMs, endMs, stepMs: HOUR_MS };
      const before = await queryMetric(store, q);
      store.db.exec(`UPDATE metric_rollups SET delta = delta + 1000 WHERE width_us = ${HOUR_US}`);
      const after = await queryMetric(store, q);
      const total = (r: MetricQueryResult) =>
        r.series.flatMap((s) => s.points).reduce((n, [, v]) => n + (v ?? 0), 0);
      // Every whole hour in the range whose row is written (the newest may still be in memory only).
      const unwrittenMs = (store.unwrittenFromUs() ?? Infinity) / 1000;
      const writtenToMs = Math.min(Math.floor(endMs / HOUR_MS) * HOUR_MS, unwrittenMs);
      const wholeHours = Math.round((writtenToMs - Math.ceil(startMs / HOUR_MS) * HOUR_MS) / HOUR_MS);
      expect(wholeHours).toBeGreaterThanOrEqual(24);
      expect(total(after) - total(before)).toBe(1000 * 2 * wholeHours); // 2 series × each whole hour
      expect(total(await queryMetric(store, { ...q, rollups: false }))).toBeCloseTo(total(before), 6);
    },
  );

  it('after a crash that left windows only in memory: the next open works them out from the points', async () => {
    const endMs = Date.now();
    const startMs = await fill(store, endMs, 200);
    expect(store.unwrittenFromUs()).toBeDefined(); // the newest windows are not written yet
    const want = await queryMetric(store, {
      name: 'h',
      fn: 'p50',
      by: ['Name'],
      startMs,
      endMs,
      stepMs: HOUR_MS,
    });
    store.db.close(); // as a killed process would: nothing written at close
    store = createMetricStore({ dataDir: dir });
    expect(store.unwrittenFromUs()).toBeUndefined();
    const hourRows = store.db
      .prepare(`SELECT count(*) AS n FROM metric_rollups WHERE width_us = ${HOUR_US}`)
      .get() as { n: number };
    expect(hourRows.n).toBeGreaterThan(0);
    for (const stepMs of [HOUR_MS, 5 * MINUTE_MS, endMs - startMs])
      for (const [name, fn] of [
        ['h', 'p50'],
        ['c.sum', 'sum'],
        ['g', 'avg'],
      ] as const) {
        const q: MetricQuery = { name, fn, by: ['Name'], startMs, endMs, stepMs };
        expectSame(
          await queryMetric(store, q),
          await queryMetric(store, { ...q, rollups: false }),
          `${name} ${stepMs}`,
        );
      }
    expectSame(
      await queryMetric(store, { name: 'h', fn: 'p50', by: ['Name'], startMs, endMs, stepMs: HOUR_MS }),
      want,
      'before and after the crash',
    );
  });

  it('bucket edges fall on multiples of the step, the first clipped to the start', async () => {
    const endMs = Date.now();
    const startMs = await fill(store, endMs, 180);
    const r = await queryMetric(store, { name: 'd.sum', fn: 'sum', startMs, endMs, stepMs: HOUR_MS });
    const times = r.series[0]!.points.map(([t]) => t);
    expect(times[0]).toBe(startMs);
    for (const t of times.slice(1)) expect(t % HOUR_MS).toBe(0);
    expect(times.length).toBe(Math.floor((endMs - 1) / HOUR_MS) - Math.floor(startMs / HOUR_MS) + 1);
    const one = await queryMetric(store, {
      name: 'd.sum',
      fn: 'sum',
      startMs,
      endMs,
      stepMs: endMs - startMs,
    });
    expect(one.series[0]!.points).toHaveLength(1);
  });

  it(
    'after retention cuts through a window, and after a reopen that builds roll-ups for an old store',
    { timeout: 180_000 },
    async () => {
      const endMs = Date.now();
      const startMs = await fill(store, endMs, 16 * 60);
      // Cut at 10 h 17 min ago: through an hour window and a five-minute one.
      const cutMs = endMs - 6 * HOUR_MS - 17 * MINUTE_MS;
      expect(await store.applyRetention({ maxAgeMs: endMs - cutMs, maxBytes: 1e12 })).toBeGreaterThan(0);
      const oldest = store.db.prepare('SELECT min(bucket_us) AS t FROM metric_rollups').get() as {
        t: number;
      };
      expect(oldest.t).toBeGreaterThan((cutMs - 2 * HOUR_MS) * 1000);
      const ranges = [
        { startMs, endMs, stepMs: HOUR_MS },
        { startMs, endMs, stepMs: 5 * MINUTE_MS },
        { startMs, endMs, stepMs: endMs - startMs },
      ];
      await compareAll(ranges);

      // A store from before roll-ups (schema 1): opening it builds them from the points.
      const wantSum = await queryMetric(store, {
        name: 'h',
        fn: 'p95',
        by: ['Name'],
        ...ranges[0]!,
        rollups: false,
      });
      store.db.exec('DELETE FROM metric_rollups; PRAGMA user_version = 1');
      await store.close();
      store = createMetricStore({ dataDir: dir });
      expect(
        (store.db.prepare('SELECT count(*) AS n FROM metric_rollups').get() as { n: number }).n,
      ).toBeGreaterThan(0);
      expectSame(
        await queryMetric(store, { name: 'h', fn: 'p95', by: ['Name'], ...ranges[0]! }),
        wantSum,
        'reopened',
      );
      await compareAll(ranges);
    },
  );
});
