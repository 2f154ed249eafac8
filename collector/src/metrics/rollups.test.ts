import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type MetricPoint } from './metric-point.js';
import { type MetricQuery, type MetricQueryResult, queryMetric } from './metric-query.js';
import { type MetricStore, createMetricStore } from './metric-store.js';
import { planSegments } from './rollups.js';

const HOUR_US = 3_600_000_000;
const FIVE_MIN_US = 300_000_000;
const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

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

/**
 * 26 hours of one-minute exports of every kind the store rolls up, with what makes roll-ups hard:
 * cumulative counters that restart (new start time) or drop (a reset without one), a histogram whose
 * bucket layout changes, exponential histograms at two scales, gauges over several series, exports
 * retried, and ingest calls that end mid-window so windows are added to across calls.
 */
function fill(store: MetricStore, endMs: number, minutes = 26 * 60) {
  const startMs = endMs - minutes * MINUTE_MS;
  const ns = (ms: number) => ms * 1e6;
  const cum = new Map<string, { start: number; value: number }>();
  const hist = new Map<string, { start: number; counts: number[]; count: number; sum: number }>();
  let batch: MetricPoint[] = [];
  const base = (name: string, t: number, start: number, attributes: Record<string, string>) => ({
    name,
    description: '',
    unit: 'ms',
    resource: { 'service.name': attributes.svc ?? 'svc' },
    scope: 'test',
    attributes,
    startTimeUnixNano: ns(start),
    timeUnixNano: ns(t),
  });
  for (let i = 0; i < minutes; i++) {
    const t = startMs + i * MINUTE_MS + 13_000 + (i % 7) * 1000; // off the minute, irregular
    for (const name of ['a', 'b', 'c']) {
      let c = cum.get(name) ?? { start: startMs, value: 0 };
      if (name === 'b' && i === Math.floor(minutes * 0.4)) c = { start: t - 1000, value: 0 }; // restarted process
      c.value += (i % 5) + 1;
      if (name === 'c' && i === Math.floor(minutes * 0.6)) c.value = 2; // dropped without a new start time: a reset
      cum.set(name, c);
      batch.push({
        ...base('c.sum', t, c.start, { Name: name }),
        kind: 'sum',
        temporality: 'cumulative',
        monotonic: true,
        value: c.value,
      });
      batch.push({
        ...base('g', t, t, { Name: name, svc: name === 'c' ? 'other' : 'svc' }),
        kind: 'gauge',
        temporality: 'unspecified',
        monotonic: false,
        value: Math.sin(i / 30) * 10 + name.charCodeAt(0),
      });
    }
    for (const name of ['a', 'b']) {
      batch.push({
        ...base('d.sum', t, t - MINUTE_MS, { Name: name }),
        kind: 'sum',
        temporality: 'delta',
        monotonic: false,
        value: ((i * 7) % 11) - 3,
      });
      const layoutB = name === 'b' && i >= Math.floor(minutes * 0.5);
      const bounds = layoutB ? [10, 100, 1000] : [10, 50, 100, 500];
      let h = hist.get(name) ?? { start: startMs, counts: [], count: 0, sum: 0 };
      if (name === 'b' && i === Math.floor(minutes * 0.5))
        h = { start: h.start, counts: [], count: 0, sum: 0 };
      if (!h.counts.length) h.counts = new Array<number>(bounds.length + 1).fill(0);
      const v = 5 + ((i * 37 + name.length) % 900);
      const idx = bounds.findIndex((b) => v <= b);
      h.counts[idx === -1 ? bounds.length : idx]! += 1;
      h.count += 1;
      h.sum += v;
      hist.set(name, h);
      batch.push({
        ...base('h', t, h.start, { Name: name }),
        kind: 'histogram',
        temporality: 'cumulative',
        monotonic: false,
        count: h.count,
        sum: h.sum,
        bounds,
        bucketCounts: [...h.counts],
      });
      const scale = i % 3 === 0 ? 2 : 3;
      batch.push({
        ...base('e', t, t - MINUTE_MS, { Name: name }),
        kind: 'exponential_histogram',
        temporality: 'delta',
        monotonic: false,
        count: 4,
        sum: 4 * v,
        min: v / 2,
        max: v * 2,
        scale,
        zeroCount: 1,
        positive: { offset: 20 + (i % 9), counts: [1, 0, 2] },
      });
    }
    if (i % 37 === 36 || i === minutes - 1) {
      expect(store.ingest(batch).rejected).toBe(0);
      if (i % 74 === 73) store.ingest(batch.filter((p) => p.temporality === 'delta')); // a retry
      batch = [];
    }
  }
  return startMs;
}

const FNS: Record<string, string[]> = {
  'c.sum': ['sum', 'rate', 'avg', 'min', 'max', 'count'],
  'd.sum': ['sum', 'avg', 'min', 'max', 'count'],
  g: ['avg', 'min', 'max', 'sum', 'count'],
  h: ['p50', 'p95', 'sum', 'count', 'avg', 'min', 'max'],
  e: ['p50', 'p99', 'count', 'avg', 'min', 'max'],
};

function expectSame(rolled: MetricQueryResult, raw: MetricQueryResult, what: string) {
  expect(
    rolled.series.map((s) => s.group),
    what,
  ).toEqual(raw.series.map((s) => s.group));
  rolled.series.forEach((s, i) => {
    const want = raw.series[i]!.points;
    expect(
      s.points.map(([t]) => t),
      what,
    ).toEqual(want.map(([t]) => t));
    s.points.forEach(([, v], j) => {
      const w = want[j]![1];
      if (w === null || v === null) expect(v, `${what} @${j}`).toBe(w);
      else
        expect(Math.abs(v - w), `${what} @${j}: ${v} vs ${w}`).toBeLessThanOrEqual(
          1e-9 * Math.max(1, Math.abs(w)),
        );
    });
  });
}

describe('metric roll-ups answer as the raw points do', () => {
  let dir: string;
  let store: MetricStore;
  beforeEach(() => {
    dir = mkdtempSync(join(os.tmpdir(), 'agentrt-rollups-'));
    store = createMetricStore({ dataDir: dir });
  });
  afterEach(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const compareAll = (ranges: { startMs: number; endMs: number; stepMs: number }[]) => {
    let compared = 0;
    for (const [name, fns] of Object.entries(FNS))
      for (const fn of fns)
        for (const by of [[], ['Name']])
          for (const r of ranges) {
            const q: MetricQuery = { name, fn, by, ...r };
            const what = `${name} ${fn} by ${by.join()} ${r.startMs}..${r.endMs} step ${r.stepMs}`;
            expectSame(queryMetric(store, q), queryMetric(store, { ...q, rollups: false }), what);
            compared++;
          }
    return compared;
  };

  // Under a loaded CI machine this takes several times its ~5 s here.
  it(
    'for every kind and function, aligned and unaligned ranges, coarse, fine and single buckets',
    { timeout: 180_000 },
    () => {
      const endMs = Date.now();
      const startMs = fill(store, endMs);
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
      expect(compareAll(ranges)).toBe(29 * 2 * 8); // functions × groupings × ranges

      // The answers come from the roll-ups (not only raw points that agree): change the hour rows
      // and the one-hour query changes, the raw one does not.
      const q: MetricQuery = { name: 'd.sum', fn: 'sum', startMs, endMs, stepMs: HOUR_MS };
      const before = queryMetric(store, q);
      store.db.exec(`UPDATE metric_rollups SET delta = delta + 1000 WHERE width_us = ${HOUR_US}`);
      const after = queryMetric(store, q);
      const total = (r: MetricQueryResult) =>
        r.series.flatMap((s) => s.points).reduce((n, [, v]) => n + (v ?? 0), 0);
      // Every whole hour in the range whose row is written (the newest may still be in memory only).
      const unwrittenMs = (store.unwrittenFromUs() ?? Infinity) / 1000;
      const writtenToMs = Math.min(Math.floor(endMs / HOUR_MS) * HOUR_MS, unwrittenMs);
      const wholeHours = Math.round((writtenToMs - Math.ceil(startMs / HOUR_MS) * HOUR_MS) / HOUR_MS);
      expect(wholeHours).toBeGreaterThanOrEqual(24);
      expect(total(after) - total(before)).toBe(1000 * 2 * wholeHours); // 2 series × each whole hour
      expect(total(queryMetric(store, { ...q, rollups: false }))).toBeCloseTo(total(before), 6);
    },
  );

  it('after a crash that left windows only in memory: the next open works them out from the points', () => {
    const endMs = Date.now();
    const startMs = fill(store, endMs, 200);
    expect(store.unwrittenFromUs()).toBeDefined(); // the newest windows are not written yet
    const want = queryMetric(store, { name: 'h', fn: 'p50', by: ['Name'], startMs, endMs, stepMs: HOUR_MS });
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
        expectSame(queryMetric(store, q), queryMetric(store, { ...q, rollups: false }), `${name} ${stepMs}`);
      }
    expectSame(
      queryMetric(store, { name: 'h', fn: 'p50', by: ['Name'], startMs, endMs, stepMs: HOUR_MS }),
      want,
      'before and after the crash',
    );
  });

  it('bucket edges fall on multiples of the step, the first clipped to the start', () => {
    const endMs = Date.now();
    const startMs = fill(store, endMs, 180);
    const r = queryMetric(store, { name: 'd.sum', fn: 'sum', startMs, endMs, stepMs: HOUR_MS });
    const times = r.series[0]!.points.map(([t]) => t);
    expect(times[0]).toBe(startMs);
    for (const t of times.slice(1)) expect(t % HOUR_MS).toBe(0);
    expect(times.length).toBe(Math.floor((endMs - 1) / HOUR_MS) - Math.floor(startMs / HOUR_MS) + 1);
    const one = queryMetric(store, { name: 'd.sum', fn: 'sum', startMs, endMs, stepMs: endMs - startMs });
    expect(one.series[0]!.points).toHaveLength(1);
  });

  it(
    'after retention cuts through a window, and after a reopen that builds roll-ups for an old store',
    { timeout: 180_000 },
    () => {
      const endMs = Date.now();
      const startMs = fill(store, endMs, 16 * 60);
      // Cut at 10 h 17 min ago: through an hour window and a five-minute one.
      const cutMs = endMs - 6 * HOUR_MS - 17 * MINUTE_MS;
      expect(store.applyRetention({ maxAgeMs: endMs - cutMs, maxBytes: 1e12 })).toBeGreaterThan(0);
      const oldest = store.db.prepare('SELECT min(bucket_us) AS t FROM metric_rollups').get() as {
        t: number;
      };
      expect(oldest.t).toBeGreaterThan((cutMs - 2 * HOUR_MS) * 1000);
      const ranges = [
        { startMs, endMs, stepMs: HOUR_MS },
        { startMs, endMs, stepMs: 5 * MINUTE_MS },
        { startMs, endMs, stepMs: endMs - startMs },
      ];
      compareAll(ranges);

      // A store from before roll-ups (schema 1): opening it builds them from the points.
      const wantSum = queryMetric(store, {
        name: 'h',
        fn: 'p95',
        by: ['Name'],
        ...ranges[0]!,
        rollups: false,
      });
      store.db.exec('DELETE FROM metric_rollups; PRAGMA user_version = 1');
      store.close();
      store = createMetricStore({ dataDir: dir });
      expect(
        (store.db.prepare('SELECT count(*) AS n FROM metric_rollups').get() as { n: number }).n,
      ).toBeGreaterThan(0);
      expectSame(
        queryMetric(store, { name: 'h', fn: 'p95', by: ['Name'], ...ranges[0]! }),
        wantSum,
        'reopened',
      );
      compareAll(ranges);
    },
  );
});
