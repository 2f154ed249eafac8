// The client of bench/instrument/fetch-client.mjs. One process holds both fetch instrumentations,
// the upstream @opentelemetry/instrumentation-undici and @agentrt/instrument's own, and an SDK set up
// as the launcher sets it up (AsyncLocalStorage context, W3C trace context + baggage, spans processed
// and dropped, a meter provider with a reader). It makes fetch() calls to BENCH_FETCH_URL in blocks
// of BENCH_FETCH_BLOCK calls, one at a time (BENCH_FETCH_CONCURRENCY), each call inside a parent span as an agent's tool call is,
// and cycles through six settings block by block: no instrumentation, upstream, ours, each with the
// sampler off and on (switched by enabling one instrumentation at a time). A block takes a few tens of
// milliseconds, so a change in the machine's speed, which over seconds moved CPU per call by a third
// here, hits the settings of one cycle alike. Prints `RESULT {"cycles": [[µs per call, …], …]}`.
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  NoopSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { FetchClientInstrumentation } from '../../packages/instrument/dist/fetch-client.js';

const url = process.env.BENCH_FETCH_URL;
const block = Number(process.env.BENCH_FETCH_BLOCK ?? 400);
const cycles = Number(process.env.BENCH_FETCH_CYCLES ?? 60);
const concurrency = Number(process.env.BENCH_FETCH_CONCURRENCY ?? 1);

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(
  new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
);
/** The sampler of the current setting: off or on. */
const samplers = { off: new AlwaysOffSampler(), on: new AlwaysOnSampler() };
let sampler = samplers.off;
const tracerProvider = new BasicTracerProvider({
  sampler: { shouldSample: (...args) => sampler.shouldSample(...args), toString: () => 'bench' },
  spanProcessors: [new NoopSpanProcessor()],
});
trace.setGlobalTracerProvider(tracerProvider);
class Reader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}
const meterProvider = new MeterProvider({ readers: [new Reader()] });
const instrumentations = {
  none: undefined,
  upstream: new UndiciInstrumentation({ enabled: true }),
  agentrt: new FetchClientInstrumentation({ enabled: true }),
};
for (const i of Object.values(instrumentations)) {
  i?.setTracerProvider(tracerProvider);
  i?.setMeterProvider(meterProvider);
  i?.disable();
}

const tracer = trace.getTracer('bench');
const headers = { 'user-agent': 'bench-agent/1.0', accept: 'application/json' };
/** One tool call: a parent span, a GET, the JSON body read. */
async function call() {
  const span = tracer.startSpan('tool');
  await context.with(trace.setSpan(context.active(), span), async () => {
    const res = await fetch(url, { headers });
    await res.json();
  });
  span.end();
}
async function run(n) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < n) await call();
    }),
  );
}
/** CPU µs per call of one block under `variant` with the sampler `mode`. */
async function measure(variant, mode) {
  sampler = samplers[mode];
  instrumentations[variant]?.enable();
  try {
    await run(20); // the switch's first calls (pools, inline caches) stay out of the block
    const before = process.cpuUsage();
    await run(block);
    const used = process.cpuUsage(before);
    return (used.user + used.system) / block;
  } finally {
    instrumentations[variant]?.disable();
  }
}

const SETTINGS = ['none', 'upstream', 'agentrt'].flatMap((v) => ['off', 'on'].map((m) => [v, m]));
for (let i = 0; i < 3; i++) for (const [v, m] of SETTINGS) await measure(v, m); // warm-up
const out = [];
for (let c = 0; c < cycles; c++) {
  const row = new Array(SETTINGS.length);
  // the order rotates, so no setting always follows the same one
  for (let k = 0; k < SETTINGS.length; k++) {
    const s = (k + c) % SETTINGS.length;
    row[s] = await measure(...SETTINGS[s]);
  }
  out.push(row);
}
process.stdout.write(`RESULT ${JSON.stringify({ settings: SETTINGS, cycles: out })}\n`);
process.exit(0);
