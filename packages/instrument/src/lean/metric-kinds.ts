import type {
  AggregationOption,
  AggregationTemporality,
  AggregationType,
  DataPointType,
  InstrumentType,
} from '@opentelemetry/sdk-metrics';
import type { HistogramAggregation, MetricTemporalityPreference } from '../config.js';

// The SDK's enum values, declared here so lean mode never loads @opentelemetry/sdk-metrics.
export const INSTRUMENT = {
  COUNTER: 'COUNTER' as InstrumentType.COUNTER,
  GAUGE: 'GAUGE' as InstrumentType.GAUGE,
  HISTOGRAM: 'HISTOGRAM' as InstrumentType.HISTOGRAM,
  UP_DOWN_COUNTER: 'UP_DOWN_COUNTER' as InstrumentType.UP_DOWN_COUNTER,
  OBSERVABLE_COUNTER: 'OBSERVABLE_COUNTER' as InstrumentType.OBSERVABLE_COUNTER,
  OBSERVABLE_GAUGE: 'OBSERVABLE_GAUGE' as InstrumentType.OBSERVABLE_GAUGE,
  OBSERVABLE_UP_DOWN_COUNTER: 'OBSERVABLE_UP_DOWN_COUNTER' as InstrumentType.OBSERVABLE_UP_DOWN_COUNTER,
} as const;

export const POINT = {
  HISTOGRAM: 0 as DataPointType.HISTOGRAM,
  EXPONENTIAL_HISTOGRAM: 1 as DataPointType.EXPONENTIAL_HISTOGRAM,
  GAUGE: 2 as DataPointType.GAUGE,
  SUM: 3 as DataPointType.SUM,
} as const;

export const DELTA = 0 as AggregationTemporality.DELTA;
export const CUMULATIVE = 1 as AggregationTemporality.CUMULATIVE;

/** Instruments exporting deltas under each preference (the OTLP metric exporter's selectors). */
const DELTA_INSTRUMENTS: Record<MetricTemporalityPreference, ReadonlySet<InstrumentType>> = {
  cumulative: new Set(),
  delta: new Set([
    INSTRUMENT.COUNTER,
    INSTRUMENT.OBSERVABLE_COUNTER,
    INSTRUMENT.GAUGE,
    INSTRUMENT.HISTOGRAM,
    INSTRUMENT.OBSERVABLE_GAUGE,
  ]),
  lowmemory: new Set([INSTRUMENT.COUNTER, INSTRUMENT.HISTOGRAM]),
};

/** The temporality `preference` gives instruments of `type`. */
export function temporalityOf(
  preference: MetricTemporalityPreference,
  type: InstrumentType,
): AggregationTemporality {
  return DELTA_INSTRUMENTS[preference].has(type) ? DELTA : CUMULATIVE;
}

/**
 * The aggregation a reader picks for instruments of `type` (otel mode's selector): histograms
 * exponential when configured, everything else the default.
 */
export function aggregationOf(histogram: HistogramAggregation, type: InstrumentType): AggregationOption {
  return type === INSTRUMENT.HISTOGRAM && histogram === 'base2_exponential_bucket_histogram'
    ? { type: 5 as AggregationType.EXPONENTIAL_HISTOGRAM }
    : { type: 0 as AggregationType.DEFAULT };
}
