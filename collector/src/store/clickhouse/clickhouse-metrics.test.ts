// Metric points on ClickHouse: a real clickhouse-server, the SQLite metric store beside it over the
// same points, the official OpenTelemetry metric exporter moving between two collectors.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../logger.js';
import {
  expectSameAnswers,
  HOUR_MS,
  MINUTE_MS,
  fill,
  metricQuery,
  sendCumulativeThrough,
  total,
} from '../../metrics/metric-fixtures.test-util.js';
import { queryMetric } from '../../metrics/metric-query.js';
import type { MetricReader } from '../../metrics/metric-store.js';
import { createMetricStore } from '../../metrics/sqlite-metric-store.js';
import { postJson, startCollector, tempDir } from '../../testing.test-util.js';
import { type ClickHouseLocation, parseStoreSetting } from '../store.js';
import {
  type ClickHouseHarness,
  clickHouseSkipReason,
  clickHouseSql,
  startClickHouse,
} from './clickhouse-harness.test-util.js';
import { type ClickHouseStore, createClickHouseStore } from './clickhouse-store.js';

let ch: ClickHouseHarness;
const cleanups: (() => Promise<void>)[] = [];

const storeUrl = (database: string): string =>
  `clickhouse://default:@127.0.0.1:${ch.nodes[0]!.httpPort}/${database}`;

async function collectorOn(database: string) {
  const c = await startCollector({ store: storeUrl(database), summaryRefreshIntervalMs: 0 });
  cleanups.push(c.cleanup);
  return c;
}

describe.skipIf(clickHouseSkipReason)(
  `metrics on ClickHouse ${clickHouseSkipReason ?? ''}`,
  { timeout: 120_000 },
  () => {
    beforeAll(async () => {
      ch = await startClickHouse();
    });
    afterAll(async () => {
      for (const f of cleanups.splice(0)) await f().catch(() => undefined);
      await ch?.stop();
    });

    it('answers every function, grouping and range over 26 hours of every kind as the SQLite store does, from its roll-ups and from its points', async () => {
      const dir = tempDir('agentrt-ch-metrics-');
      const sqlite = createMetricStore({ dataDir: dir.dir });
      const store: ClickHouseStore = await createClickHouseStore({
        ...(parseStoreSetting(storeUrl('agentrt_metrics_same')) as ClickHouseLocation),
        logger: silentLogger,
        spoolDir: join(dir.dir, 'spool'),
      });
      cleanups.push(async () => {
        await store.close();
        await sqlite.close();
        dir.remove();
      });
      const endMs = Date.now();
      // The same points, resets, bucket layout changes and retried exports into both stores.
      const startMs = await fill(sqlite, endMs);
      expect(await fill(store.metrics, endMs)).toBe(startMs);
      const ranges = [
        { startMs, endMs, stepMs: HOUR_MS },
        { startMs: startMs + 7 * MINUTE_MS + 123, endMs, stepMs: 2 * HOUR_MS },
        { startMs: endMs - 5 * HOUR_MS - 17_321, endMs: endMs - 999, stepMs: 5 * MINUTE_MS },
        { startMs: endMs - 3 * HOUR_MS, endMs, stepMs: 7 * MINUTE_MS },
        { startMs: startMs - HOUR_MS, endMs: endMs + 1, stepMs: 3 * 24 * HOUR_MS }, // one bucket
      ];
      const compared = await expectSameAnswers(
        ranges,
        (q) => queryMetric(store.metrics, q),
        (q) => queryMetric(sqlite, { ...q, rollups: false }),
      );
      expect(compared).toBe(29 * 2 * ranges.length);
      // ClickHouse's own roll-ups off: its points alone give the same answers.
      await expectSameAnswers(
        ranges,
        (q) => queryMetric(store.metrics, { ...q, rollups: false }),
        (q) => queryMetric(sqlite, { ...q, rollups: false }),
      );
      expect(await store.metrics.names()).toEqual(await sqlite.names());
      // A percentile's buckets past the cap a query sets: both stores stop reading with one refusal.
      const bucketsOf = async (m: MetricReader, maxBucketValues: number) =>
        m.totals({
          ids: (await m.seriesOf('h')).map((s) => s.id),
          startUs: startMs * 1000,
          endUs: endMs * 1000,
          stepUs: MINUTE_MS * 1000,
          firstIndex: Math.floor(startMs / MINUTE_MS),
          oneBucket: false,
          buckets: true,
          maxBucketValues,
        });
      for (const m of [sqlite, store.metrics]) {
        await expect(bucketsOf(m, 50)).rejects.toThrow(/more than 50 histogram bucket values/);
        expect((await bucketsOf(m, 1e9)).buckets.length).toBeGreaterThan(50);
      }
      // Every point is one row, as in SQLite (whose primary key keeps a retried point once): the
      // retried exports were skipped at ingest, not left for a merge.
      const { n } = sqlite.db.prepare('SELECT count(*) AS n FROM metric_points').get() as { n: number };
      expect(
        Number(await clickHouseSql(ch.url, 'SELECT count() FROM agentrt_metrics_same.metric_points')),
      ).toBe(n);
      // One series row per series and day it has points (retention drops days, series with them).
      const [rows, seriesDays, series] = (
        await clickHouseSql(
          ch.url,
          'SELECT count(), uniqExact(series_id, date), uniqExact(series_id) FROM agentrt_metrics_same.metric_series FORMAT TSV',
        )
      )
        .trim()
        .split('\t')
        .map(Number);
      expect(rows).toBe(seriesDays);
      expect(series).toBe((await sqlite.names()).reduce((k, m) => k + m.series, 0));

      // The hourly answers come from the roll-ups (not only points that agree): add 1000 to every
      // hour row and the hourly sum changes by 1000 per series and whole hour; the points' does not.
      // (The rows are made from the points' hours: an INSERT … SELECT that reads the table it writes
      // added some of them more than once on 18.16, for the hour before a day's end.)
      const q = { name: 'd.sum', fn: 'sum', startMs, endMs, stepMs: HOUR_MS };
      const sum = async (query: typeof q & { rollups?: boolean }) =>
        total(await queryMetric(store.metrics, query));
      const before = await sum(q);
      await clickHouseSql(
        ch.url,
        `INSERT INTO agentrt_metrics_same.metric_rollup SELECT date, series_id, toInt64(${HOUR_MS * 1000}) AS width_us, hour AS bucket_us, sumState(toFloat64(1000)) AS d, sumState(toFloat64(0)) AS v, sumState(toFloat64(0)) AS c, countState() AS n, minState(toFloat64(0)) AS mn, maxState(toFloat64(0)) AS mx FROM (SELECT DISTINCT date, series_id, intDiv(time_us, ${HOUR_MS * 1000}) * ${HOUR_MS * 1000} AS hour FROM agentrt_metrics_same.metric_points) GROUP BY date, series_id, width_us, bucket_us`,
      );
      const wholeHours = Math.floor(endMs / HOUR_MS) - Math.ceil(startMs / HOUR_MS);
      expect(wholeHours).toBeGreaterThanOrEqual(24);
      // Two series (Name a and b) of d.sum; the other metrics' rows changed too, but not this sum.
      expect((await sum(q)) - before).toBe(1000 * 2 * wholeHours);
      expect(await sum({ ...q, rollups: false })).toBeCloseTo(before, 6);
    });

    it('two collectors: an exporter moving between them counts each increase once, and both answer for it', async () => {
      const a = await collectorOn('agentrt_metrics_two');
      const b = await collectorOn('agentrt_metrics_two');
      // Cumulative totals 3, 7, 12 sent to a, b, a; then 12 again, to b.
      const steps = [
        [0, 3],
        [1, 4],
        [0, 5],
      ] as const;
      const sent = await sendCumulativeThrough([a.url, b.url], 'moving', steps, 1);
      for (const c of [a, b]) {
        const sums = await metricQuery(c.url, { name: 'moving.requests', fn: 'sum', stepMs: '60000' });
        expect(total(sums)).toBe(sent);
        const count = await metricQuery(c.url, { name: 'moving.latency', fn: 'count', stepMs: '3600000' });
        expect(total(count)).toBe(sent);
        // 6 values at 5 (each export's first two) and 6 at 50: the median is the top of (−∞,10].
        const p50 = await metricQuery(c.url, { name: 'moving.latency', fn: 'p50', stepMs: '3600000' });
        expect(total(p50)).toBeCloseTo(10, 6);
        const names = (await (await fetch(`${c.url}/api/metrics`)).json()) as { metrics: { name: string }[] };
        expect(names.metrics.map((m) => m.name)).toEqual(
          expect.arrayContaining(['moving.latency', 'moving.requests']),
        );
        const form = await postJson(`${c.url}/api/query`, { query: 'metric moving.requests sum since 1h' });
        const rows = ((await form.json()) as { rows: { sum: number }[] }).rows;
        expect(rows.reduce((n, r) => n + r.sum, 0)).toBe(sent);
      }
      // One stops; the other keeps answering for what either stored.
      await a.close();
      expect(total(await metricQuery(b.url, { name: 'moving.requests', fn: 'sum' }))).toBe(sent);
    });

    it('takes many exporters at once (their requests batched), counting every increase once', async () => {
      const c = await collectorOn('agentrt_metrics_many');
      const t0 = Date.now() - 60_000;
      // 40 requests in flight at once: 20 exporters (one series each) × 2 cumulative exports, the
      // second of each sent only after its first was taken (an exporter exports in order).
      const exportOf = (exporter: number, value: number, at: number, start = t0 - 1000) => ({
        resourceMetrics: [
          {
            resource: {
              attributes: [{ key: 'service.name', value: { stringValue: `exporter-${exporter}` } }],
            },
            scopeMetrics: [
              {
                metrics: [
                  {
                    name: 'many.requests',
                    sum: {
                      aggregationTemporality: 2,
                      isMonotonic: true,
                      dataPoints: [
                        {
                          startTimeUnixNano: String(start * 1e6),
                          timeUnixNano: String(at * 1e6),
                          asInt: String(value),
                        },
                      ],
                    },
                  },
                ],
              },
            ],
          },
        ],
      });
      await Promise.all(
        Array.from({ length: 20 }, async (_, e) => {
          for (const [value, at] of [
            [e + 1, t0],
            [2 * (e + 1), t0 + 1000],
          ] as const) {
            const res = await postJson(`${c.url}/v1/metrics`, exportOf(e, value, at));
            expect(res.status).toBe(200);
            expect(((await res.json()) as { partialSuccess?: unknown }).partialSuccess).toBeUndefined();
          }
        }),
      );
      // Each exporter's counter reached 2(e + 1): Σ over 20 exporters = 2 × 210.
      const sums = await metricQuery(c.url, { name: 'many.requests', fn: 'sum', stepMs: '3600000' });
      expect(total(sums)).toBe(420);
      const byService = await metricQuery(c.url, {
        name: 'many.requests',
        fn: 'sum',
        by: 'service.name',
        stepMs: '3600000',
      });
      expect(byService.series).toHaveLength(20);
    });

    it('answers 503 with Retry-After for metrics while ClickHouse is down, and takes them again once it is back', async () => {
      const c = await collectorOn('agentrt_metrics_down');
      const gauge = (v: number) => ({
        resourceMetrics: [
          {
            scopeMetrics: [
              {
                metrics: [
                  {
                    name: 'down.gauge',
                    gauge: { dataPoints: [{ timeUnixNano: String((Date.now() + v) * 1e6), asDouble: v }] },
                  },
                ],
              },
            ],
          },
        ],
      });
      expect((await postJson(`${c.url}/v1/metrics`, gauge(1))).status).toBe(200);
      await ch.nodes[0]!.kill();
      try {
        const failed = await postJson(`${c.url}/v1/metrics`, gauge(2));
        expect(failed.status).toBe(503);
        expect(failed.headers.get('retry-after')).toBe('5');
        const read = await fetch(`${c.url}/api/metrics/query?name=down.gauge&since=1h`);
        expect(read.status).toBe(503);
      } finally {
        await ch.nodes[0]!.start();
      }
      let status = 0;
      for (let i = 0; i < 100 && status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        status = (await postJson(`${c.url}/v1/metrics`, gauge(3))).status;
      }
      expect(status).toBe(200);
      const r = await metricQuery(c.url, { name: 'down.gauge', fn: 'max', stepMs: '3600000' });
      expect(total(r)).toBe(3);
    });

    it('retention drops metric points with their days, and a series it dropped no longer counts against the limit', async () => {
      const c = await startCollector({
        store: storeUrl('agentrt_metrics_retention'),
        summaryRefreshIntervalMs: 0,
        metricLimits: { maxSeriesPerMetric: 2 },
      });
      cleanups.push(c.cleanup);
      const gauge = (user: string, daysAgo: number) => ({
        resourceMetrics: [
          {
            scopeMetrics: [
              {
                metrics: [
                  {
                    name: 'kept.gauge',
                    gauge: {
                      dataPoints: [
                        {
                          timeUnixNano: String((Date.now() - daysAgo * 86_400_000) * 1e6),
                          asDouble: 1,
                          attributes: [{ key: 'user', value: { stringValue: user } }],
                        },
                      ],
                    },
                  },
                ],
              },
            ],
          },
        ],
      });
      const rejected = async (body: unknown) =>
        (
          (await (await postJson(`${c.url}/v1/metrics`, body)).json()) as {
            partialSuccess?: { rejectedDataPoints?: string };
          }
        ).partialSuccess?.rejectedDataPoints;
      expect(await rejected(gauge('old-1', 10))).toBeUndefined();
      expect(await rejected(gauge('old-2', 9))).toBeUndefined();
      expect(await rejected(gauge('new', 0))).toBe('1'); // a third series: over the limit of 2
      expect(await c.backend.applyRetention({ maxAgeMs: 8 * 86_400_000 })).toBe(0);
      await c.backend.metrics.applyRetention({ maxAgeMs: 8 * 86_400_000, maxBytes: 1e12 });
      expect(
        Number(await clickHouseSql(ch.url, 'SELECT count() FROM agentrt_metrics_retention.metric_points')),
      ).toBe(0);
      expect(await rejected(gauge('new', 0))).toBeUndefined();
      const names = (await (await fetch(`${c.url}/api/metrics`)).json()) as { metrics: { series: number }[] };
      expect(names.metrics).toEqual([expect.objectContaining({ name: 'kept.gauge', series: 1 })]);
    });
  },
);
