import type { Attributes, HrTime } from '@opentelemetry/api';
import type { Histogram, InstrumentType } from '@opentelemetry/sdk-metrics';
import { createRequire } from 'node:module';
import { INSTRUMENT } from './metric-kinds.js';
import type { Series } from './metric-series.js';

/**
 * One series of a synchronous instrument: what was recorded since the last collection (the
 * interval) and, under cumulative temporality, everything before it (the total). Totals are
 * merged from intervals at collection, as the SDK merges them, so the sums come out bit for bit.
 */
export abstract class Cell<V> implements Series {
  /** Recorded since the last collection. */
  recorded = false;
  /** Time of the interval's first record (ms). */
  firstMs = 0;
  /** In the previous collection's report (delta temporality's start time rule). */
  reportedLast = false;
  /** Start time of the cumulative total; undefined until the first collection with data. */
  totalStart: HrTime | undefined;

  constructor(
    readonly attributes: Attributes,
    readonly keyCount: number,
  ) {}

  /** The first record of an interval notes its time (once, not per record as the SDK does). */
  protected touch(): void {
    if (this.recorded) return;
    this.recorded = true;
    this.firstMs = Date.now();
  }

  abstract record(value: number): void;
  /** The interval's point value; the interval starts afresh. */
  abstract takeInterval(): V;
  /** The interval merged into the total; the total's point value (a copy). */
  abstract mergeIntoTotal(): V;
  /** The total's point value (a copy) when nothing was recorded since. */
  abstract totalValue(): V;
}

/** Counters and up-down counters. */
export class SumCell extends Cell<number> {
  private interval = 0;
  private total = 0;

  record(value: number): void {
    this.touch();
    this.interval += value;
  }

  takeInterval(): number {
    const value = this.interval;
    this.interval = 0;
    return value;
  }

  mergeIntoTotal(): number {
    this.total = this.totalStart === undefined ? this.interval : this.total + this.interval;
    this.interval = 0;
    return this.total;
  }

  totalValue(): number {
    return this.total;
  }
}

/** Gauges: the last value recorded wins. */
export class LastValueCell extends Cell<number> {
  private value = 0;

  record(value: number): void {
    this.touch();
    this.value = value;
  }

  takeInterval(): number {
    return this.value;
  }

  mergeIntoTotal(): number {
    return this.value;
  }

  totalValue(): number {
    return this.value;
  }
}

interface HistogramState {
  counts: number[];
  sum: number;
  count: number;
  min: number;
  max: number;
}

const emptyHistogram = (buckets: number): HistogramState => ({
  counts: new Array<number>(buckets).fill(0),
  sum: 0,
  count: 0,
  min: Infinity,
  max: -Infinity,
});

/** Explicit bucket histograms (min and max recorded, as the SDK's default). */
export class HistogramCell extends Cell<Histogram> {
  private interval: HistogramState;
  private total: HistogramState | undefined;

  constructor(
    attributes: Attributes,
    keyCount: number,
    private readonly boundaries: readonly number[],
    private readonly withSum: boolean,
  ) {
    super(attributes, keyCount);
    this.interval = emptyHistogram(boundaries.length + 1);
  }

  record(value: number): void {
    if (Number.isNaN(value)) return;
    this.touch();
    const state = this.interval;
    state.count += 1;
    state.sum += value;
    if (value < state.min) state.min = value;
    if (value > state.max) state.max = value;
    state.counts[bucketIndex(this.boundaries, value)]! += 1;
  }

  takeInterval(): Histogram {
    const value = this.pointOf(this.interval);
    this.interval = emptyHistogram(this.boundaries.length + 1);
    return value;
  }

  mergeIntoTotal(): Histogram {
    const total = this.total;
    if (total === undefined) this.total = this.interval;
    else mergeHistogram(total, this.interval);
    this.interval = emptyHistogram(this.boundaries.length + 1);
    return this.totalValue();
  }

  totalValue(): Histogram {
    const total = this.total!;
    return this.pointOf({ ...total, counts: total.counts.slice() });
  }

  private pointOf(state: HistogramState): Histogram {
    const hasMinMax = state.count > 0;
    return {
      min: hasMinMax ? state.min : undefined,
      max: hasMinMax ? state.max : undefined,
      sum: this.withSum ? state.sum : undefined,
      buckets: { boundaries: this.boundaries as number[], counts: state.counts },
      count: state.count,
    };
  }
}

function mergeHistogram(total: HistogramState, interval: HistogramState): void {
  for (let i = 0; i < total.counts.length; i++) total.counts[i]! += interval.counts[i]!;
  total.count += interval.count;
  total.sum += interval.sum;
  total.min = Math.min(total.min, interval.min);
  total.max = Math.max(total.max, interval.max);
}

/** Index of the first boundary >= value (a value on a boundary counts in the bucket below it). */
function bucketIndex(boundaries: readonly number[], value: number): number {
  let lo = 0;
  let hi = boundaries.length - 1;
  let index = boundaries.length;
  while (hi >= lo) {
    const mid = lo + ((hi - lo) >> 1);
    if (boundaries[mid]! < value) lo = mid + 1;
    else {
      index = mid;
      hi = mid - 1;
    }
  }
  return index;
}

/** The SDK's default boundaries (ms-oriented), used when an instrument gives no advice. */
export const DEFAULT_BOUNDARIES = [0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000];

/** Advice boundaries as the SDK cleans them: sorted, infinities dropped. */
export function cleanBoundaries(advice: readonly number[] | undefined): readonly number[] {
  if (advice === undefined) return DEFAULT_BOUNDARIES;
  const sorted = advice.concat().sort((a, b) => a - b);
  const infinity = sorted.indexOf(Infinity);
  return sorted.slice(sorted.lastIndexOf(-Infinity) + 1, infinity === -1 ? undefined : infinity);
}

/** Whether a histogram's points carry a sum (not for instruments that may record negatives). */
export function histogramHasSum(type: InstrumentType): boolean {
  return (
    type === INSTRUMENT.HISTOGRAM || type === INSTRUMENT.COUNTER || type === INSTRUMENT.OBSERVABLE_COUNTER
  );
}

// Exponential histograms (only when configured) reuse the SDK's accumulation: its rescaling is
// intricate, and the point is parity, not a second implementation of it.
interface ExponentialAccumulation {
  record(value: number): void;
  clone(): ExponentialAccumulation;
  toPointValue(): object;
}
interface ExponentialAggregator {
  createAccumulation(startTime: HrTime): ExponentialAccumulation;
  merge(previous: ExponentialAccumulation, delta: ExponentialAccumulation): ExponentialAccumulation;
}

const require = createRequire(import.meta.url);
let exponentialAggregator: ExponentialAggregator | undefined;
function exponential(): ExponentialAggregator {
  const mod = require('@opentelemetry/sdk-metrics/build/src/aggregator/ExponentialHistogram.js') as {
    ExponentialHistogramAggregator: new (maxSize: number, recordMinMax: boolean) => ExponentialAggregator;
  };
  return (exponentialAggregator ??= new mod.ExponentialHistogramAggregator(160, true));
}

/** Base-2 exponential histograms (160 buckets, min and max: the SDK's defaults). */
export class ExponentialCell extends Cell<object> {
  private interval: ExponentialAccumulation;
  private total: ExponentialAccumulation | undefined;
  private readonly aggregator = exponential();

  constructor(
    attributes: Attributes,
    keyCount: number,
    private readonly withSum: boolean,
  ) {
    super(attributes, keyCount);
    this.interval = this.aggregator.createAccumulation([0, 0]);
  }

  record(value: number): void {
    this.touch();
    this.interval.record(value);
  }

  takeInterval(): object {
    const value = this.pointOf(this.interval);
    this.interval = this.aggregator.createAccumulation([0, 0]);
    return value;
  }

  mergeIntoTotal(): object {
    this.total = this.total === undefined ? this.interval : this.aggregator.merge(this.total, this.interval);
    this.interval = this.aggregator.createAccumulation([0, 0]);
    return this.totalValue();
  }

  totalValue(): object {
    return this.pointOf(this.total!.clone());
  }

  private pointOf(accumulation: ExponentialAccumulation): object {
    const value = accumulation.toPointValue() as {
      hasMinMax: boolean;
      min: number;
      max: number;
      sum: number;
      positive: { offset: number; bucketCounts: number[] };
      negative: { offset: number; bucketCounts: number[] };
      count: number;
      scale: number;
      zeroCount: number;
    };
    return {
      min: value.hasMinMax ? value.min : undefined,
      max: value.hasMinMax ? value.max : undefined,
      sum: this.withSum ? value.sum : undefined,
      positive: { offset: value.positive.offset, bucketCounts: value.positive.bucketCounts },
      negative: { offset: value.negative.offset, bucketCounts: value.negative.bucketCounts },
      count: value.count,
      scale: value.scale,
      zeroCount: value.zeroCount,
    };
  }
}
