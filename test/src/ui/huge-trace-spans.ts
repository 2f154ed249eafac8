// The 50,001-span trace of the huge-trace UI test and bench/huge-trace (which imports the build of
// this file), sent by the official OTel SDK and OTLP exporter: a root, 100 steps of 499 tool calls,
// two of them failed.
import { ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

export const STEPS = 100;
export const TOOLS_PER_STEP = 499; // 1 + 100 + 49,900 = 50,001 spans

/** Sends the trace to the collector at `url`; its id, its two error spans and the 8th step's id. */
export async function sendHugeTrace(
  url: string,
): Promise<{ traceId: string; firstError: string; secondError: string; step7: string }> {
  const sent = { traceId: '', firstError: '', secondError: '', step7: '' };
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'huge-agent' }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter({ url: `${url}/v1/traces`, timeoutMillis: 60_000 }), {
        maxQueueSize: 60_000,
        maxExportBatchSize: 5_000,
        scheduledDelayMillis: 100,
      }),
    ],
  });
  const tracer = provider.getTracer('huge');
  const root = tracer.startSpan('invoke_agent huge', {}, ROOT_CONTEXT);
  const rootContext = trace.setSpan(ROOT_CONTEXT, root);
  sent.traceId = root.spanContext().traceId;
  for (let i = 0; i < STEPS; i++) {
    const step = tracer.startSpan(`step-${i}`, {}, rootContext);
    if (i === 7) sent.step7 = step.spanContext().spanId;
    const stepContext = trace.setSpan(ROOT_CONTEXT, step);
    for (let j = 0; j < TOOLS_PER_STEP; j++) {
      const tool = tracer.startSpan(
        `execute_tool tool-${j}`,
        { attributes: { 'tool.index': j } },
        stepContext,
      );
      if ((i === 37 && j === 250) || (i === 80 && j === 10)) {
        tool.setStatus({ code: SpanStatusCode.ERROR, message: 'tool failed' });
        sent[i === 37 ? 'firstError' : 'secondError'] = tool.spanContext().spanId;
      }
      tool.end();
    }
    step.end();
  }
  root.end();
  await provider.shutdown();
  return sent;
}

/** A script for the page: `frames` requestAnimationFrame deltas (ms), scrolling `by` px each frame. */
export const SCROLL_FRAMES = (frames: number, by: number): string => `new Promise((resolve) => {
  const times = [];
  let last = performance.now();
  const step = (n) => {
    const now = performance.now();
    times.push(now - last);
    last = now;
    if (n === 0) return resolve(times.slice(1));
    window.scrollBy(0, ${by});
    requestAnimationFrame(() => step(n - 1));
  };
  requestAnimationFrame(() => step(${frames}));
})`;
