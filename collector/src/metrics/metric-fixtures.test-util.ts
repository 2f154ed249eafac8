// Metric points every store must answer alike: the roll-up tests compare SQLite's roll-ups with its
// raw points over them, the ClickHouse tests compare ClickHouse's answers with SQLite's.
import { AggregationTemporalityPreference } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  MeterProvider,
  PeriodicExportingMetricReader,
  type PushMetricExporter,
} from '@opentelemetry/sdk-metrics';
import { expect } from 'vitest';
import { type MetricPoint } from './metric-point.js';
import { type MetricQuery, type MetricQueryResult } from './metric-query.js';
import { type MetricStore } from './metric-store.js';

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;

/**
 * 26 hours of one-minute exports of every kind the store rolls up, with what makes roll-ups hard:
 * cumulative counters that restart (new start time) or drop (a reset without one), a histogram whose
 * bucket layout changes, exponential histograms at two scales, gauges over several series, exports
 * retried, and ingest calls that end mid-window so windows are added to across calls.
 */
export async function fill(store: MetricStore, endMs: number, minutes = 26 * 60): Promise<number> {
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
      expect((await store.ingest(batch)).rejected).toBe(0);
      // A retry: the delta points again, and the last minute's cumulative ones (a retry is taken
      // and kept once).
      const lastNs = batch.at(-1)!.timeUnixNano;
      if (i % 74 === 73)
        expect(
          (await store.ingest(batch.filter((p) => p.temporality === 'delta' || p.timeUnixNano === lastNs)))
            .rejected,
        ).toBe(0);
      batch = [];
    }
  }
  return startMs;
}

/** Every function each metric of fill() answers. */
const FNS: Record<string, string[]> = {
  'c.sum': ['sum', 'rate', 'avg', 'min', 'max', 'count'],
  'd.sum': ['sum', 'avg', 'min', 'max', 'count'],
  g: ['avg', 'min', 'max', 'sum', 'count'],
  h: ['p50', 'p95', 'sum', 'count', 'avg', 'min', 'max'],
  e: ['p50', 'p99', 'count', 'avg', 'min', 'max'],
};

/**
 * Asks both every function of every metric of fill(), ungrouped and by Name, over each range, and
 * expects the same answers; returns how many queries were compared.
 */
export async function expectSameAnswers(
  ranges: readonly { startMs: number; endMs: number; stepMs: number }[],
  got: (q: MetricQuery) => Promise<MetricQueryResult>,
  want: (q: MetricQuery) => Promise<MetricQueryResult>,
): Promise<number> {
  let compared = 0;
  for (const [name, fns] of Object.entries(FNS))
    for (const fn of fns)
      for (const by of [[], ['Name']])
        for (const r of ranges) {
          const q: MetricQuery = { name, fn, by, ...r };
          const what = `${name} ${fn} by ${by.join()} ${r.startMs}..${r.endMs} step ${r.stepMs}`;
          expectSame(await got(q), await want(q), what);
          compared++;
        }
  return compared;
}

/** The same groups, bucket times and values (to 1e-9 relative). */
export function expectSame(got: MetricQueryResult, want: MetricQueryResult, what: string) {
  expect(
    got.series.map((s) => s.group),
    what,
  ).toEqual(want.series.map((s) => s.group));
  got.series.forEach((s, i) => {
    const points = want.series[i]!.points;
    expect(
      s.points.map(([t]) => t),
      what,
    ).toEqual(points.map(([t]) => t));
    s.points.forEach(([, v], j) => {
      const w = points[j]![1];
      if (w === null || v === null) expect(v, `${what} @${j}`).toBe(w);
      else
        expect(Math.abs(v - w), `${what} @${j}: ${v} vs ${w}`).toBeLessThanOrEqual(
          1e-9 * Math.max(1, Math.abs(w)),
        );
    });
  });
}

export const total = (r: MetricQueryResult, group?: Record<string, string>): number =>
  r.series
    .filter((s) => !group || JSON.stringify(s.group) === JSON.stringify(group))
    .flatMap((s) => s.points)
    .reduce((n, [, v]) => n + (v ?? 0), 0);

/** GET /api/metrics/query over the last hour; throws with the body on anything but 200. */
export async function metricQuery(url: string, params: Record<string, string>): Promise<MetricQueryResult> {
  const res = await fetch(`${url}/api/metrics/query?${new URLSearchParams({ since: '1h', ...params })}`);
  const body = (await res.json()) as MetricQueryResult;
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(body)}`);
  return body;
}

/**
 * The real SDK with cumulative temporality, its exports sent to the collector each step names (as a
 * load balancer might send them): step [to, n] adds n to the counter `<prefix>.requests` and records
 * n values in the histogram `<prefix>.latency` (the first two at 5 ms, the rest at 50), then exports
 * to collector `to`; then the same totals are exported once more, to `repeatTo`. Returns Σ n.
 */
export async function sendCumulativeThrough(
  urls: string[],
  prefix: string,
  steps: readonly (readonly [number, number])[],
  repeatTo: number,
): Promise<number> {
  const exporters = urls.map(
    (u) =>
      new OTLPMetricExporter({
        url: `${u}/v1/metrics`,
        temporalityPreference: AggregationTemporalityPreference.CUMULATIVE,
      }),
  );
  let to = 0;
  const exporter: PushMetricExporter = {
    export: (metrics, done) => exporters[to]!.export(metrics, done),
    forceFlush: () => exporters[to]!.forceFlush(),
    shutdown: async () => {
      await Promise.all(exporters.map((e) => e.shutdown()));
    },
    selectAggregationTemporality: (kind) => exporters[0]!.selectAggregationTemporality!(kind),
  };
  const provider = new MeterProvider({
    resource: resourceFromAttributes({ 'service.name': prefix }),
    readers: [new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })],
  });
  const meter = provider.getMeter(prefix);
  const requests = meter.createCounter(`${prefix}.requests`);
  const latency = meter.createHistogram(`${prefix}.latency`, {
    unit: 'ms',
    advice: { explicitBucketBoundaries: [10, 100] },
  });
  let sent = 0;
  for (const [i, n] of steps) {
    requests.add(n, { route: 'r' });
    for (let k = 0; k < n; k++) latency.record(k < 2 ? 5 : 50);
    sent += n;
    to = i;
    await provider.forceFlush();
  }
  to = repeatTo;
  await provider.forceFlush();
  await provider.shutdown();
  return sent;
}
