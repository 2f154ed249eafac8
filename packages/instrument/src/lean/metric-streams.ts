import { type Attributes, type HrTime, type MetricAdvice, ValueType, diag } from '@opentelemetry/api';
import { millisToHrTime } from '@opentelemetry/core';
import type {
  AggregationTemporality,
  DataPointType,
  InstrumentType,
  MetricData,
  MetricDescriptor,
} from '@opentelemetry/sdk-metrics';
import type { HistogramAggregation } from '../config.js';
import {
  type Cell,
  ExponentialCell,
  HistogramCell,
  LastValueCell,
  SumCell,
  cleanBoundaries,
  histogramHasSum,
} from './metric-cells.js';
import { CUMULATIVE, INSTRUMENT, POINT } from './metric-kinds.js';
import { type Series, SeriesMap } from './metric-series.js';

/** The descriptor the SDK exports: the public one plus the instrument's type and advice. */
export interface InstrumentDescriptor extends MetricDescriptor {
  readonly type: InstrumentType;
  readonly advice: MetricAdvice;
}

/** An instrument's descriptor plus the aggregation chosen for it. */
export interface StreamOptions {
  readonly descriptor: InstrumentDescriptor;
  readonly temporality: AggregationTemporality;
  readonly histogram: HistogramAggregation;
}

/** One exported metric: collects its series into a MetricData (undefined when it has no points). */
export interface MetricStream {
  readonly options: StreamOptions;
  collect(now: HrTime, previous: HrTime | undefined): MetricData | undefined;
}

/** A value the instrument accepts (the SDK's checks: numbers only, INT truncated). */
export function acceptedValue(descriptor: MetricDescriptor, value: unknown): number | undefined {
  if (typeof value !== 'number') {
    diag.warn(`non-number value provided to metric ${descriptor.name}: ${String(value)}`);
    return undefined;
  }
  if (descriptor.valueType !== ValueType.INT || Number.isInteger(value)) return value;
  diag.warn(
    `INT value type cannot accept a floating-point value for ${descriptor.name}, ignoring the fractional digits.`,
  );
  const truncated = Math.trunc(value);
  return Number.isInteger(truncated) ? truncated : undefined;
}

const EMPTY: Attributes = {};

/** A synchronous instrument's series and their collection under either temporality. */
export class SyncStream implements MetricStream {
  readonly series: SeriesMap<Cell<unknown>>;
  private readonly pointType: DataPointType;

  constructor(readonly options: StreamOptions) {
    const [pointType, create] = cellFactory(options);
    this.pointType = pointType;
    this.series = new SeriesMap(create);
  }

  record(value: unknown, attributes: Attributes | undefined): void {
    const accepted = acceptedValue(this.options.descriptor, value);
    if (accepted !== undefined) this.series.get(attributes ?? EMPTY).record(accepted);
  }

  collect(now: HrTime, previous: HrTime | undefined): MetricData | undefined {
    const points =
      this.options.temporality === CUMULATIVE ? this.cumulativePoints(now) : this.deltaPoints(now, previous);
    return points.length === 0 ? undefined : metricData(this.options, this.pointType, points);
  }

  private cumulativePoints(now: HrTime): Point[] {
    const points: Point[] = [];
    for (const cell of this.series.values()) {
      let value: unknown;
      if (cell.recorded) {
        value = cell.mergeIntoTotal();
        cell.totalStart ??= millisToHrTime(cell.firstMs);
        cell.recorded = false;
      } else if (cell.totalStart !== undefined) value = cell.totalValue();
      else continue;
      points.push({ attributes: cell.attributes, startTime: cell.totalStart, endTime: now, value });
    }
    return points;
  }

  private deltaPoints(now: HrTime, previous: HrTime | undefined): Point[] {
    const points: Point[] = [];
    for (const cell of this.series.values()) {
      if (!cell.recorded) {
        cell.reportedLast = false;
        continue;
      }
      const startTime = cell.reportedLast && previous !== undefined ? previous : millisToHrTime(cell.firstMs);
      points.push({ attributes: cell.attributes, startTime, endTime: now, value: cell.takeInterval() });
      cell.recorded = false;
      cell.reportedLast = true;
    }
    return points;
  }
}

interface Point {
  attributes: Attributes;
  startTime: HrTime;
  endTime: HrTime;
  value: unknown;
}

type CellFactory = (attributes: Attributes, keyCount: number) => Cell<unknown>;

function cellFactory(options: StreamOptions): [DataPointType, CellFactory] {
  const { type, advice } = options.descriptor;
  if (type === INSTRUMENT.GAUGE) return [POINT.GAUGE, (a, n) => new LastValueCell(a, n)];
  if (type !== INSTRUMENT.HISTOGRAM) return [POINT.SUM, (a, n) => new SumCell(a, n)];
  const withSum = histogramHasSum(type);
  if (options.histogram === 'base2_exponential_bucket_histogram') {
    return [POINT.EXPONENTIAL_HISTOGRAM, (a, n) => new ExponentialCell(a, n, withSum)];
  }
  const boundaries = cleanBoundaries(advice?.explicitBucketBoundaries);
  return [POINT.HISTOGRAM, (a, n) => new HistogramCell(a, n, boundaries, withSum)];
}

function metricData(options: StreamOptions, pointType: DataPointType, dataPoints: Point[]): MetricData {
  const { descriptor, temporality } = options;
  const data = { descriptor, aggregationTemporality: temporality, dataPointType: pointType, dataPoints };
  if (pointType !== POINT.SUM) return data as MetricData;
  const type = descriptor.type;
  const isMonotonic = type === INSTRUMENT.COUNTER || type === INSTRUMENT.OBSERVABLE_COUNTER;
  return { ...data, isMonotonic } as MetricData;
}

/** One series of an observable instrument. */
class Observed implements Series {
  /** The value observed at the previous collection (the SDK forgets it when not observed then). */
  memo: number | undefined;
  total: number | undefined;
  totalStart: HrTime | undefined;
  reportedLast = false;
  constructor(
    readonly attributes: Attributes,
    readonly keyCount: number,
  ) {}
}

/**
 * An observable instrument's series: callbacks' observations become points at collection, with
 * the SDK's arithmetic (a cumulative sum is the last total plus the observed difference; a counter
 * that went down restarts).
 */
export class AsyncStream implements MetricStream {
  private readonly series = new SeriesMap((a, n) => new Observed(a, n));
  private readonly observed = new Map<Observed, number>();
  private readonly sum: boolean;
  private readonly monotonic: boolean;

  constructor(readonly options: StreamOptions) {
    const type = options.descriptor.type;
    this.sum = type !== INSTRUMENT.OBSERVABLE_GAUGE;
    this.monotonic = type === INSTRUMENT.OBSERVABLE_COUNTER;
  }

  /** Notes one observation (a callback's): the last one per attribute set wins. */
  observe(value: unknown, attributes: Attributes | undefined): void {
    const accepted = acceptedValue(this.options.descriptor, value);
    if (accepted !== undefined) this.observed.set(this.series.get(attributes ?? EMPTY), accepted);
  }

  collect(now: HrTime, previous: HrTime | undefined): MetricData | undefined {
    const points: Point[] = [];
    for (const series of this.series.values()) {
      const point = this.pointOf(series, now, previous);
      if (point !== undefined) points.push(point);
    }
    this.observed.clear();
    if (points.length === 0) return undefined;
    return metricData(this.options, this.sum ? POINT.SUM : POINT.GAUGE, points);
  }

  private pointOf(series: Observed, now: HrTime, previous: HrTime | undefined): Point | undefined {
    const cumulative = this.options.temporality === CUMULATIVE;
    const value = this.observed.get(series);
    if (value === undefined) {
      series.memo = undefined;
      if (cumulative && series.total !== undefined) return this.point(series, series.total, now);
      series.reportedLast = false;
      return undefined;
    }
    const [delta, reset] = this.deltaOf(series.memo, value);
    series.memo = value;
    if (cumulative) this.accumulate(series, delta, reset, now);
    else series.totalStart = series.reportedLast && previous !== undefined ? previous : now;
    series.reportedLast = true;
    return this.point(series, cumulative ? series.total! : delta, now);
  }

  private deltaOf(memo: number | undefined, value: number): [number, boolean] {
    if (memo === undefined || !this.sum) return [value, false];
    if (this.monotonic && memo > value) return [value, true];
    return [value - memo, false];
  }

  private accumulate(series: Observed, delta: number, reset: boolean, now: HrTime): void {
    if (series.total === undefined || reset || !this.sum) {
      if (series.total === undefined || reset) series.totalStart = now;
      series.total = delta;
    } else series.total += delta;
  }

  private point(series: Observed, value: number, now: HrTime): Point {
    return { attributes: series.attributes, startTime: series.totalStart!, endTime: now, value };
  }
}
