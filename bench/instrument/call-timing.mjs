// bench/instrument/call-timing.mjs: a second preload (after @agentrt/instrument's register) that
// times, inside the running agent, the telemetry calls one request makes: wall time spent in each
// call, summed, printed as `OPTIME {"label": [calls, µs], …}` on SIGUSR2 (and reset). The labels are
// the API's and the launcher's own entry points, the same in both AGENTRT_SDK modes, so the two
// compare call for call. Times are inclusive (an inject made by a fetch span's start counts in both).
// Warm micro-benchmarks miss what this sees: a call made once per request runs on cold caches and
// costs several times its loop figure. Used by bench/instrument/op-count.mjs.
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'packages', 'instrument', 'dist');
/** label → [calls, ms] */
const spent = new Map();

function timed(owner, method, label) {
  const original = owner?.[method];
  if (typeof original !== 'function' || original.timedBy === label) return;
  spent.set(label, [0, 0]);
  const wrapper = function (...args) {
    const cell = spent.get(label);
    cell[0]++;
    const t0 = performance.now();
    try {
      return original.apply(this, args);
    } finally {
      cell[1] += performance.now() - t0;
    }
  };
  wrapper.timedBy = label;
  owner[method] = wrapper;
}

timed(propagation, 'inject', 'context injected (propagation.inject)');
timed(propagation, 'extract', 'context extracted (propagation.extract)');
timed(context, 'active', 'active context read (context.active)');

// the tracer and span classes of whichever SDK runs, found through the API
const provider = trace.getTracerProvider();
const tracer = (provider.getDelegate?.() ?? provider).getTracer('call-timing');
timed(Object.getPrototypeOf(tracer), 'startSpan', 'span started (Tracer.startSpan)');
const probe = tracer.startSpan('call-timing', { root: true });
timed(Object.getPrototypeOf(probe), 'end', 'span ended (Span.end)');

// Metric records only in lean mode: otel mode's meter provider comes a turn after start, and the
// instruments an app made before that record through other classes (op-count.mjs counts its
// SyncInstrument._record calls instead).
if (process.env.AGENTRT_SDK === 'lean') {
  const meter = metrics.getMeter('call-timing');
  timed(Object.getPrototypeOf(meter.createHistogram('call.timing')), 'record', 'histogram recorded');
  timed(Object.getPrototypeOf(meter.createCounter('call.timing')), 'add', 'counter added');
}

const { FetchClientInstrumentation } = await import(join(dist, 'fetch-client.js'));
timed(FetchClientInstrumentation.prototype, 'onCreate', 'fetch span started (headers injected)');
timed(FetchClientInstrumentation.prototype, 'onDone', 'fetch span ended (duration recorded)');

process.on('SIGUSR2', () => {
  const out = Object.fromEntries([...spent].map(([label, [calls, ms]]) => [label, [calls, ms * 1000]]));
  process.stderr.write(`OPTIME ${JSON.stringify(out)}\n`);
  for (const cell of spent.values()) cell.fill(0);
});
