import {
  type Attributes,
  type BatchObservableCallback,
  type BatchObservableResult,
  type Counter,
  type Gauge,
  type Histogram,
  type HrTime,
  type Meter,
  type MeterOptions,
  type MeterProvider,
  type MetricOptions,
  type Observable,
  type ObservableCallback,
  type ObservableCounter,
  type ObservableGauge,
  type ObservableUpDownCounter,
  type UpDownCounter,
  ValueType,
  diag,
} from '@opentelemetry/api';
import type { InstrumentType, MetricData, ScopeMetrics } from '@opentelemetry/sdk-metrics';
import type { HistogramAggregation, MetricTemporalityPreference } from '../config.js';
import { INSTRUMENT, temporalityOf } from './metric-kinds.js';
import { AsyncStream, type InstrumentDescriptor, type MetricStream, SyncStream } from './metric-streams.js';

/** What the lean meter provider needs (see start-metrics.ts). */
export interface LeanMeterOptions {
  readonly temporality: MetricTemporalityPreference;
  readonly histogram: HistogramAggregation;
}

/** One meter per name, version and schema URL (the SDK's scope identity). */
export class LeanMeterProvider implements MeterProvider {
  private readonly meters = new Map<string, LeanMeter>();

  constructor(private readonly options: LeanMeterOptions) {}

  getMeter(name: string, version = '', options: MeterOptions = {}): Meter {
    const key = `${name}:${version}:${options.schemaUrl ?? ''}`;
    let meter = this.meters.get(key);
    if (meter === undefined) {
      meter = new LeanMeter({ name, version, schemaUrl: options.schemaUrl }, this.options);
      this.meters.set(key, meter);
    }
    return meter;
  }

  /** Every meter's metrics at `now` (observable callbacks run first, each given `timeoutMs`). */
  async collect(now: HrTime, previous: HrTime | undefined, timeoutMs: number): Promise<ScopeMetrics[]> {
    const scopes: ScopeMetrics[] = [];
    for (const meter of this.meters.values()) {
      const scope = await meter.collect(now, previous, timeoutMs);
      if (scope !== undefined) scopes.push(scope);
    }
    return scopes;
  }
}

const NAME = /^[a-z][a-z0-9_.\-/]{0,254}$/i;

type BatchEntry = { callback: BatchObservableCallback; instruments: Set<LeanObservable> };

/** Instruments record straight into their stream; observable callbacks run at collection. */
export class LeanMeter implements Meter {
  private readonly streams: MetricStream[] = [];
  /** The streams by instrument name: frameworks create their instruments again per agent or request. */
  private readonly byName = new Map<string, MetricStream[]>();
  private readonly callbacks: { callback: ObservableCallback; instrument: LeanObservable }[] = [];
  private readonly batchCallbacks: BatchEntry[] = [];

  constructor(
    private readonly scope: ScopeMetrics['scope'],
    private readonly options: LeanMeterOptions,
  ) {}

  createCounter(name: string, options?: MetricOptions): Counter {
    return new LeanCounter(this.syncStream(name, INSTRUMENT.COUNTER, options));
  }

  createUpDownCounter(name: string, options?: MetricOptions): UpDownCounter {
    return new LeanUpDownCounter(this.syncStream(name, INSTRUMENT.UP_DOWN_COUNTER, options));
  }

  createHistogram(name: string, options?: MetricOptions): Histogram {
    return new LeanHistogram(this.syncStream(name, INSTRUMENT.HISTOGRAM, options));
  }

  createGauge(name: string, options?: MetricOptions): Gauge {
    return new LeanGauge(this.syncStream(name, INSTRUMENT.GAUGE, options));
  }

  createObservableCounter(name: string, options?: MetricOptions): ObservableCounter {
    return this.observable(name, INSTRUMENT.OBSERVABLE_COUNTER, options);
  }

  createObservableUpDownCounter(name: string, options?: MetricOptions): ObservableUpDownCounter {
    return this.observable(name, INSTRUMENT.OBSERVABLE_UP_DOWN_COUNTER, options);
  }

  createObservableGauge(name: string, options?: MetricOptions): ObservableGauge {
    return this.observable(name, INSTRUMENT.OBSERVABLE_GAUGE, options);
  }

  addBatchObservableCallback(callback: BatchObservableCallback, observables: Observable[]): void {
    const instruments = new Set(observables.filter((o) => o instanceof LeanObservable));
    if (this.findBatch(callback, instruments) < 0) this.batchCallbacks.push({ callback, instruments });
  }

  removeBatchObservableCallback(callback: BatchObservableCallback, observables: Observable[]): void {
    const instruments = new Set(observables.filter((o) => o instanceof LeanObservable));
    const index = this.findBatch(callback, instruments);
    if (index >= 0) this.batchCallbacks.splice(index, 1);
  }

  addCallback(callback: ObservableCallback, instrument: LeanObservable): void {
    if (!this.callbacks.some((c) => c.callback === callback && c.instrument === instrument)) {
      this.callbacks.push({ callback, instrument });
    }
  }

  removeCallback(callback: ObservableCallback, instrument: LeanObservable): void {
    const index = this.callbacks.findIndex((c) => c.callback === callback && c.instrument === instrument);
    if (index >= 0) this.callbacks.splice(index, 1);
  }

  /** This meter's scope and metrics (undefined when none has a point). */
  async collect(
    now: HrTime,
    previous: HrTime | undefined,
    timeoutMs: number,
  ): Promise<ScopeMetrics | undefined> {
    await this.observe(timeoutMs);
    const metrics: MetricData[] = [];
    for (const stream of this.streams) {
      const data = stream.collect(now, previous);
      if (data !== undefined) metrics.push(data);
    }
    return metrics.length === 0 ? undefined : { scope: this.scope, metrics };
  }

  /** Runs every callback; a callback's observations count once it returned (or resolved) in time. */
  private async observe(timeoutMs: number): Promise<void> {
    const runs = [
      ...this.callbacks.map(({ callback, instrument }) =>
        runCallback(timeoutMs, (observe) =>
          callback({ observe: (value, attributes) => observe(instrument, value, attributes) }),
        ),
      ),
      ...this.batchCallbacks.map(({ callback, instruments }) =>
        runCallback(timeoutMs, (observe) => callback(batchResult(instruments, observe))),
      ),
    ];
    const errors = (await Promise.allSettled(runs)).filter((r) => r.status === 'rejected');
    if (errors.length > 0) diag.error('metrics collection errors', ...errors.map((e) => e.reason as unknown));
  }

  private syncStream(name: string, type: InstrumentType, options?: MetricOptions): SyncStream {
    return this.stream(name, type, options, (o) => new SyncStream(o)) as SyncStream;
  }

  private observable(name: string, type: InstrumentType, options?: MetricOptions): LeanObservable {
    return new LeanObservable(
      this,
      this.stream(name, type, options, (o) => new AsyncStream(o)) as AsyncStream,
    );
  }

  /**
   * An instrument compatible with an earlier one (same name, exactly as the SDK's registry keys
   * it; unit, type, value type) shares its stream.
   */
  private stream(
    name: string,
    type: InstrumentType,
    options: MetricOptions | undefined,
    create: (options: SyncStream['options']) => MetricStream,
  ): MetricStream {
    const named = this.byName.get(name);
    const existing = named?.find((s) => compatible(s.options.descriptor, type, options));
    if (existing !== undefined) return existing;
    const stream = create({
      descriptor: descriptorOf(name, type, options),
      temporality: temporalityOf(this.options.temporality, type),
      histogram: this.options.histogram,
    });
    this.streams.push(stream);
    if (named === undefined) this.byName.set(name, [stream]);
    else named.push(stream);
    return stream;
  }

  private findBatch(callback: BatchObservableCallback, instruments: Set<LeanObservable>): number {
    return this.batchCallbacks.findIndex(
      (b) =>
        b.callback === callback &&
        b.instruments.size === instruments.size &&
        [...instruments].every((i) => b.instruments.has(i)),
    );
  }
}

function descriptorOf(name: string, type: InstrumentType, options?: MetricOptions): InstrumentDescriptor {
  if (!NAME.test(name)) {
    diag.warn(
      `Invalid metric name: "${name}". The metric name should be a ASCII string with a length no greater than 255 characters.`,
    );
  }
  return {
    name,
    type,
    description: options?.description ?? '',
    unit: options?.unit ?? '',
    valueType: options?.valueType ?? ValueType.DOUBLE,
    advice: options?.advice ?? {},
  };
}

/** Whether an instrument of `type` and `options` may share the stream of `existing` (same name). */
function compatible(existing: InstrumentDescriptor, type: InstrumentType, options?: MetricOptions): boolean {
  return (
    existing.type === type &&
    existing.unit === (options?.unit ?? '') &&
    existing.valueType === (options?.valueType ?? ValueType.DOUBLE)
  );
}

type Observe = (instrument: LeanObservable, value: unknown, attributes?: Attributes) => void;

/** Runs one callback; its observations are applied only if it completes within `timeoutMs`. */
async function runCallback(timeoutMs: number, run: (observe: Observe) => unknown): Promise<void> {
  const buffered: [LeanObservable, unknown, Attributes | undefined][] = [];
  await withTimeout(
    Promise.resolve(run((instrument, value, attributes) => buffered.push([instrument, value, attributes]))),
    timeoutMs,
  );
  for (const [instrument, value, attributes] of buffered) instrument.stream.observe(value, attributes);
}

function batchResult(instruments: Set<LeanObservable>, observe: Observe): BatchObservableResult {
  return {
    observe: (metric: Observable, value: number, attributes?: Attributes) => {
      if (metric instanceof LeanObservable && instruments.has(metric)) observe(metric, value, attributes);
    },
  };
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`callback timed out after ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

class LeanCounter implements Counter {
  constructor(private readonly stream: SyncStream) {}
  add(value: number, attributes?: Attributes): void {
    if (value < 0)
      diag.warn(`negative value provided to counter ${this.stream.options.descriptor.name}: ${value}`);
    else this.stream.record(value, attributes);
  }
}

class LeanUpDownCounter implements UpDownCounter {
  constructor(private readonly stream: SyncStream) {}
  add(value: number, attributes?: Attributes): void {
    this.stream.record(value, attributes);
  }
}

class LeanHistogram implements Histogram {
  constructor(private readonly stream: SyncStream) {}
  record(value: number, attributes?: Attributes): void {
    if (value < 0)
      diag.warn(`negative value provided to histogram ${this.stream.options.descriptor.name}: ${value}`);
    else this.stream.record(value, attributes);
  }
}

class LeanGauge implements Gauge {
  constructor(private readonly stream: SyncStream) {}
  record(value: number, attributes?: Attributes): void {
    this.stream.record(value, attributes);
  }
}

/** Observable counters, up-down counters and gauges: callbacks registered on the meter. */
class LeanObservable implements ObservableCounter, ObservableUpDownCounter, ObservableGauge {
  constructor(
    private readonly meter: LeanMeter,
    readonly stream: AsyncStream,
  ) {}
  addCallback(callback: ObservableCallback): void {
    this.meter.addCallback(callback, this);
  }
  removeCallback(callback: ObservableCallback): void {
    this.meter.removeCallback(callback, this);
  }
}
