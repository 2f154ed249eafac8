import {
  type Attributes,
  type BatchObservableResult,
  type Meter,
  type MeterProvider as ApiMeterProvider,
  type ObservableResult,
  ValueType,
} from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { HistogramAggregation, MetricTemporalityPreference } from '../config.js';
import { LeanMeterProvider } from './meter.js';
import { LeanMetricExport } from './metric-export.js';
import { createMetricExporter } from '../exporters.js';
import { CUMULATIVE, DELTA, INSTRUMENT, aggregationOf, temporalityOf } from './metric-kinds.js';
import { attributesKey } from './metric-series.js';

const resource = resourceFromAttributes({ 'service.name': 'diff' });

/** A reader that collects only when asked (the SDK's periodic reader minus the timer). */
class ManualReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

interface Side {
  provider: ApiMeterProvider;
  collect(): Promise<ResourceMetrics>;
}

function sdkSide(temporality: MetricTemporalityPreference, histogram: HistogramAggregation): Side {
  const reader = new ManualReader({
    aggregationTemporalitySelector: (type) => temporalityOf(temporality, type),
    aggregationSelector: (type) => aggregationOf(histogram, type),
  });
  const provider = new MeterProvider({ resource, readers: [reader] });
  return { provider, collect: async () => (await reader.collect()).resourceMetrics };
}

function leanSide(temporality: MetricTemporalityPreference, histogram: HistogramAggregation): Side {
  const provider = new LeanMeterProvider({ temporality, histogram });
  const exporter = {
    export: () => {},
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
  const reader = new LeanMetricExport(provider, resource, exporter, { intervalMs: 60_000, timeoutMs: 1000 });
  return { provider, collect: () => reader.collect() };
}

const BOUND: Attributes = { 'gen_ai.operation.name': 'chat', 'gen_ai.system': 'bedrock' };

/** The instruments an agent framework and the launcher create, recorded over several intervals. */
function instruments(meter: Meter, other: Meter) {
  return {
    tokens: meter.createHistogram('gen_ai.client.token.usage', { unit: '{token}', valueType: ValueType.INT }),
    duration: meter.createHistogram('gen_ai.client.operation.duration', {
      unit: 's',
      advice: { explicitBucketBoundaries: [10, 0.5, Infinity, 1, -Infinity, 2] },
    }),
    // created again, as a framework does per agent: the same stream; another unit: a stream of its own
    tokensAgain: meter.createHistogram('gen_ai.client.token.usage', {
      unit: '{token}',
      valueType: ValueType.INT,
    }),
    durationMs: meter.createHistogram('gen_ai.client.operation.duration', { unit: 'ms' }),
    requests: meter.createCounter('http.server.requests'),
    requestsAgain: meter.createCounter('HTTP.server.requests'),
    active: meter.createUpDownCounter('http.server.active_requests', { valueType: ValueType.INT }),
    temperature: meter.createGauge('weather.temperature', { unit: 'Cel' }),
    cycles: other.createCounter('agent.cycles', { description: 'event loop cycles' }),
    queue: other.createHistogram('queue.depth'),
    badName: other.createCounter('1-not-a-name'),
  };
}

type Instruments = ReturnType<typeof instruments>;

function interval(i: Instruments, round: number): void {
  i.tokens.record(120 + round, BOUND);
  i.tokens.record(7.9, BOUND);
  i.tokens.record(Number.NaN, BOUND);
  i.tokens.record(-3, BOUND);
  i.tokens.record(42, { 'gen_ai.system': 'bedrock', 'gen_ai.operation.name': 'chat' });
  i.tokensAgain.record(11, BOUND);
  i.durationMs.record(250 + round, { round: round % 2 });
  i.duration.record(0.5, { round: round % 2 });
  i.duration.record(1.25 + round / 10, { round: round % 2 });
  i.duration.record(99, { tags: ['a', 'b'] });
  if (round !== 1) i.requests.add(1, { 'http.route': '/invocations', code: 200 });
  i.requests.add(0.1);
  i.requests.add(0.2);
  i.requests.add(-1);
  i.requestsAgain.add(1, { 'http.route': '/invocations', code: 200 });
  i.requests.add(1, { 'http.route': '/ping', code: '200' });
  i.active.add(1.7);
  i.active.add(round === 2 ? -3 : 1);
  i.temperature.record(21.5 + round, { city: 'Paris' });
  i.temperature.record(-4, { city: 'Oslo' });
  if (round === 0) i.cycles.add(5, {});
  i.queue.record(round * 1000);
  i.badName.add('x' as unknown as number);
}

/** Observable instruments: a counter that goes down once, a series that skips a collection, a batch. */
function observables(meter: Meter, round: () => number): void {
  const heap = meter.createObservableGauge('process.memory.heap', { unit: 'By' });
  const cpu = meter.createObservableCounter('process.cpu.time', { unit: 's' });
  const handles = meter.createObservableUpDownCounter('process.handles', { valueType: ValueType.INT });
  heap.addCallback((result: ObservableResult) => result.observe(1000 + round(), { pool: 'new' }));
  const readCpu = (result: ObservableResult) => {
    const r = round();
    result.observe([0.25, 1.5, 0.75, 4, 4.5][r] ?? 9, { state: 'user' });
    if (r !== 1) result.observe(r * 2.5, { state: 'system' });
  };
  cpu.addCallback(readCpu);
  cpu.addCallback(readCpu);
  const failing = () => {
    throw new Error('callback failed');
  };
  handles.addCallback(failing);
  meter.addBatchObservableCallback(
    (result: BatchObservableResult) => {
      result.observe(handles, 10 - round() * 3.5);
      result.observe(heap, 1);
    },
    [handles],
  );
  if (round() === 0) handles.removeCallback(failing);
}

/** Runs the same calls on one side, collecting after each interval; time moves as the test says. */
async function run(side: Side, rounds: number): Promise<ResourceMetrics[]> {
  let round = 0;
  const meter = side.provider.getMeter('diff', '1.0.0');
  const i = instruments(meter, side.provider.getMeter('diff', '2.0.0', { schemaUrl: 'https://x' }));
  observables(side.provider.getMeter('observables'), () => round);
  const out: ResourceMetrics[] = [];
  for (; round < rounds; round++) {
    vi.setSystemTime(1_800_000_000_000 + round * 10_000);
    interval(i, round);
    vi.setSystemTime(1_800_000_000_000 + round * 10_000 + 5000);
    out.push(await side.collect());
  }
  return out;
}

/**
 * What was exported, data points in attribute order: the SDK starts each delta interval's map
 * afresh, so its order follows the interval's first records; lean keeps first-ever order. The
 * order of points in a metric carries no meaning (OTLP, the collector's store).
 */
function normalize(exports: readonly ResourceMetrics[]) {
  return exports.map((m) =>
    m.scopeMetrics.map((scope) => ({
      ...scope,
      metrics: scope.metrics.map((metric) => ({
        ...metric,
        dataPoints: [...metric.dataPoints].sort((a, b) =>
          attributesKey(a.attributes) < attributesKey(b.attributes) ? -1 : 1,
        ),
      })),
    })),
  );
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('lean meter provider against the SDK', () => {
  const cases: [MetricTemporalityPreference, HistogramAggregation][] = [
    ['cumulative', 'explicit_bucket_histogram'],
    ['delta', 'explicit_bucket_histogram'],
    ['lowmemory', 'explicit_bucket_histogram'],
    ['cumulative', 'base2_exponential_bucket_histogram'],
    ['delta', 'base2_exponential_bucket_histogram'],
  ];
  it.each(cases)('exports the same metrics (%s, %s)', async (temporality, histogram) => {
    const sdk = await run(sdkSide(temporality, histogram), 5);
    const lean = await run(leanSide(temporality, histogram), 5);
    expect(normalize(lean)).toEqual(normalize(sdk));
    expect(sdk.flatMap((m) => m.scopeMetrics.flatMap((s) => s.metrics)).length).toBeGreaterThan(40);
  });

  it('exports nothing for instruments nobody recorded on, as the SDK', async () => {
    for (const side of [
      sdkSide('cumulative', 'explicit_bucket_histogram'),
      leanSide('cumulative', 'explicit_bucket_histogram'),
    ]) {
      side.provider.getMeter('idle').createCounter('never');
      expect((await side.collect()).scopeMetrics).toEqual([]);
    }
  });
});

describe("otel mode's metric exporter", () => {
  it('gives the SDK reader the configured temporality and histogram aggregation (the lazy wrapper hid them)', () => {
    const signal = {
      exporter: 'otlp' as const,
      protocol: 'http/json' as const,
      url: 'http://127.0.0.1:9/v1/metrics',
    };
    const exporter = createMetricExporter(signal, {
      temporality: 'delta',
      histogram: 'base2_exponential_bucket_histogram',
    });
    expect(exporter.selectAggregationTemporality?.(INSTRUMENT.COUNTER)).toBe(DELTA);
    expect(exporter.selectAggregationTemporality?.(INSTRUMENT.UP_DOWN_COUNTER)).toBe(CUMULATIVE);
    expect(exporter.selectAggregation?.(INSTRUMENT.HISTOGRAM)).toEqual({ type: 5 });
    expect(exporter.selectAggregation?.(INSTRUMENT.COUNTER)).toEqual({ type: 0 });
  });
});

describe('lean meter provider attribute sets', () => {
  it('finds a pre-bound attribute set by identity and notices when it was mutated', async () => {
    const side = leanSide('cumulative', 'explicit_bucket_histogram');
    const counter = side.provider.getMeter('m').createCounter('c');
    const bound: Attributes = { route: '/a' };
    counter.add(1, bound);
    counter.add(1, bound);
    bound['route'] = '/b';
    counter.add(5, bound);
    counter.add(1, { route: '/a' });
    const [scope] = (await side.collect()).scopeMetrics;
    const points = scope!.metrics[0]!.dataPoints.map((p) => [p.attributes, p.value]);
    expect(points).toEqual([
      [{ route: '/a' }, 3],
      [{ route: '/b' }, 5],
    ]);
  });

  it('finds fresh objects equal to a recent set, in any key order, and never a near one', async () => {
    const side = leanSide('cumulative', 'explicit_bucket_histogram');
    const counter = side.provider.getMeter('m').createCounter('c');
    const records: Attributes[] = [
      { a: 1, b: 'x' },
      { b: 'x', a: 1 },
      { a: 1 },
      { a: '1', b: 'x' },
      { a: 1, b: 'x', c: true },
      { a: 1, b: ['x'] },
      { a: 1, b: ['x'] },
      // more sets than the recent slots hold, then the first again: found by its key
      ...Array.from({ length: 12 }, (_, i) => ({ n: i })),
      { b: 'x', a: 1 },
    ];
    for (const attributes of records) counter.add(1, attributes);
    const [scope] = (await side.collect()).scopeMetrics;
    const points = scope!.metrics[0]!.dataPoints.map((p) => [p.attributes, p.value]);
    expect(points.slice(0, 6)).toEqual([
      [{ a: 1, b: 'x' }, 3],
      [{ a: 1 }, 1],
      [{ a: '1', b: 'x' }, 1],
      [{ a: 1, b: 'x', c: true }, 1],
      [{ a: 1, b: ['x'] }, 2],
      [{ n: 0 }, 1],
    ]);
    expect(points).toHaveLength(17);
  });

  it('keys attribute sets by sorted entries and value types', () => {
    expect(attributesKey({ a: 1, b: 'x' })).toBe(attributesKey({ b: 'x', a: 1 }));
    expect(attributesKey({ a: 1 })).not.toBe(attributesKey({ a: '1' }));
    expect(attributesKey({ a: ['1,2'] })).not.toBe(attributesKey({ a: ['1', '2'] }));
    expect(attributesKey({ a: true })).not.toBe(attributesKey({ a: 'true' }));
  });
});
