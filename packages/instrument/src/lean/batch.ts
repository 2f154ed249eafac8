import { context, diag } from '@opentelemetry/api';
import { type ExportResult, suppressTracing } from '@opentelemetry/core';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { BatchConfig } from '../config.js';

/** What a span or log record exporter offers the batch. */
export interface BatchExporter<T> {
  export(items: T[], done: (result: ExportResult) => void): void;
  shutdown(): Promise<void>;
}

/** Spans and log records both carry their resource. */
type Batched = Pick<ReadableSpan, 'resource'>;

/**
 * The batch span (and log record) processor's behaviour (`OTEL_BSP_*`): ended spans queue up to
 * maxQueueSize (more are dropped, counted in one warning); a full batch or the scheduled delay
 * exports; one export at a time, each given exportTimeoutMs.
 */
export class LeanBatch<T extends Batched = ReadableSpan> {
  private queue: T[] = [];
  private timer: NodeJS.Timeout | undefined;
  private exporting: Promise<void> | undefined;
  private dropped = 0;

  constructor(
    private readonly exporter: BatchExporter<T>,
    private readonly config: Readonly<BatchConfig>,
    private readonly what = 'span',
  ) {}

  add(item: T): void {
    if (this.queue.length >= this.config.maxQueueSize) {
      if (this.dropped++ === 0) diag.warn(`${this.what} queue is full: dropping them`);
      return;
    }
    this.queue.push(item);
    if (this.queue.length >= this.config.maxExportBatchSize) this.kick();
    else this.timer ??= this.schedule();
  }

  /** Exports everything queued; resolves when done (never rejects). */
  async flush(): Promise<void> {
    while (this.exporting !== undefined || this.queue.length > 0) {
      await (this.exporting ?? this.exportNext());
    }
  }

  async shutdown(): Promise<void> {
    await this.flush();
    await this.exporter.shutdown();
  }

  private schedule(): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timer = undefined;
      this.kick();
    }, this.config.scheduledDelayMs);
    timer.unref();
    return timer;
  }

  private kick(): void {
    if (this.exporting === undefined) void this.exportNext();
  }

  private exportNext(): Promise<void> {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const batch = this.queue.splice(0, this.config.maxExportBatchSize);
    if (batch.length === 0) return Promise.resolve();
    this.exporting = this.send(batch).finally(() => {
      this.exporting = undefined;
      if (this.queue.length >= this.config.maxExportBatchSize) this.kick();
      else if (this.queue.length > 0) this.timer ??= this.schedule();
    });
    return this.exporting;
  }

  /** Exports `batch` once its resource's async attributes (host, process detectors) have settled, as the SDK does. */
  private async send(batch: T[]): Promise<void> {
    const resource = batch[0]?.resource;
    if (resource?.asyncAttributesPending === true) await resource.waitForAsyncAttributes?.();
    return this.exportNow(batch);
  }

  private exportNow(batch: T[]): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        diag.warn(`${this.what} export did not finish within ${this.config.exportTimeoutMs} ms`);
        resolve();
      }, this.config.exportTimeoutMs);
      timer.unref();
      try {
        // The export's own HTTP request is not traced (the SDK's rule), or it would export itself.
        context.with(suppressTracing(context.active()), () =>
          this.exporter.export(batch, (result) => {
            clearTimeout(timer);
            if (result.error !== undefined || result.code !== 0)
              diag.warn(`${this.what} export failed`, result.error);
            resolve();
          }),
        );
      } catch (error) {
        clearTimeout(timer);
        diag.warn(`${this.what} export failed`, error);
        resolve();
      }
    });
  }
}
