import { type HrTime, context, diag } from '@opentelemetry/api';
import { millisToHrTime, suppressTracing } from '@opentelemetry/core';
import type { PushMetricExporter, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import type { LeanMeterProvider } from './meter.js';

/** How often and how long (the periodic exporting reader's settings). */
export interface MetricExportOptions {
  readonly intervalMs: number;
  readonly timeoutMs: number;
}

/**
 * The periodic exporting reader's behaviour: every intervalMs, collect (observable callbacks
 * included), wait for the resource's async attributes, and export unless there is nothing; one
 * export at a time, each given timeoutMs. forceFlush exports now; shutdown exports a last time.
 */
export class LeanMetricExport {
  private timer: NodeJS.Timeout | undefined;
  private exporting: Promise<void> | undefined;
  private previous: HrTime | undefined;

  constructor(
    private readonly provider: LeanMeterProvider,
    private readonly resource: ResourceMetrics['resource'],
    private readonly exporter: PushMetricExporter,
    private readonly options: MetricExportOptions,
  ) {}

  start(): this {
    this.timer = setInterval(() => void this.run(), this.options.intervalMs);
    this.timer.unref();
    return this;
  }

  /** Everything recorded since the last collection, as the exporter takes it. */
  async collect(): Promise<ResourceMetrics> {
    const now = millisToHrTime(Date.now());
    const scopeMetrics = await this.provider.collect(now, this.previous, this.options.timeoutMs);
    this.previous = now;
    return { resource: this.resource, scopeMetrics };
  }

  async forceFlush(): Promise<void> {
    await this.exporting;
    await this.run();
    await this.exporter.forceFlush();
  }

  async shutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.forceFlush();
    await this.exporter.shutdown();
  }

  /** One collection and export; resolves when done (never rejects). */
  private run(): Promise<void> {
    if (this.exporting !== undefined) return this.exporting;
    this.exporting = this.exportOnce()
      .catch((error: unknown) => diag.error('metrics export failed', error))
      .finally(() => {
        this.exporting = undefined;
      });
    return this.exporting;
  }

  private async exportOnce(): Promise<void> {
    const metrics = await this.collect();
    if (this.resource.asyncAttributesPending === true) await this.resource.waitForAsyncAttributes?.();
    if (metrics.scopeMetrics.length === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        diag.error(`metrics export timed out after ${this.options.timeoutMs}ms`);
        resolve();
      }, this.options.timeoutMs);
      timer.unref();
      // The export's own HTTP request is not traced (the SDK's rule).
      context.with(suppressTracing(context.active()), () =>
        this.exporter.export(metrics, (result) => {
          clearTimeout(timer);
          if (result.code !== 0) diag.error('metrics export failed', result.error);
          resolve();
        }),
      );
    });
  }
}
