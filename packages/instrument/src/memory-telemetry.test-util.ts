// What the instrumentation tests record into: spans and metrics kept in memory, and the global
// context and W3C propagation the launcher installs (AsyncLocalStorage, trace context + baggage).
import { context, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/** A tracer provider whose ended spans are in `spans`. */
export function memorySpans() {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  return { spans, tracerProvider };
}

/** A meter provider whose cumulative points `reader.forceFlush()` puts in `exporter`. */
export function memoryMetrics() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  return { exporter, reader, meterProvider };
}

/** Installs the launcher's global context manager and propagators; returns what takes them away. */
export function installGlobalContext(): () => void {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
  return () => {
    context.disable();
    propagation.disable();
  };
}
