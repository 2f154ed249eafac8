// bench/instrument/meter-record.mjs: the CPU of recording metrics on the app's thread, the upstream
// MeterProvider (@opentelemetry/sdk-metrics) against lean mode's (packages/instrument/src/lean).
// One iteration makes a reference-agent request's metric calls (measured by op-count.mjs: 23 records
// on 9 instruments): counters, up-down counters and histograms, attributes built afresh per call
// as Strands and the HTTP instrumentations do, then once more with the same calls on pre-bound
// attribute objects. Then 23 records on one histogram whose fresh attribute sets rotate through 4,
// 16 and 64 tool names: lean mode compares a fresh object with an instrument's last 8 sets before
// it builds a key, so past 8 rotating sets every record pays those comparisons and the key.
// Run after building: `node bench/instrument/meter-record.mjs`. Prints µs per iteration, both
// providers in the same process, interleaved rounds, and their ratio.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dist = join(root, 'packages', 'instrument', 'dist', 'lean', 'meter.js');
if (!existsSync(dist)) {
  console.error('packages/instrument/dist is missing: run `npx tsc -b packages/instrument` first');
  process.exit(1);
}
const { LeanMeterProvider } = await import(dist);
const require = createRequire(join(root, 'packages', 'instrument', 'package.json'));
const { MeterProvider, MetricReader } = require('@opentelemetry/sdk-metrics');

const ITERATIONS = 20_000;
const ROUNDS = Number(process.env.BENCH_METER_ROUNDS ?? 5);

class ManualReader extends MetricReader {
  onForceFlush() {
    return Promise.resolve();
  }
  onShutdown() {
    return Promise.resolve();
  }
}

function instruments(provider) {
  const strands = provider.getMeter('strands-agents');
  const http = provider.getMeter('@opentelemetry/instrumentation-http');
  return {
    cycles: strands.createCounter('gen_ai.agent.cycle.count'),
    cycleDuration: strands.createHistogram('gen_ai.agent.cycle.duration', { unit: 's' }),
    tokensIn: strands.createCounter('gen_ai.agent.tokens.input'),
    tokensOut: strands.createCounter('gen_ai.agent.tokens.output'),
    toolCalls: strands.createCounter('gen_ai.agent.tool.call_count'),
    toolDuration: strands.createHistogram('gen_ai.agent.tool.duration', { unit: 's' }),
    latency: strands.createHistogram('gen_ai.agent.model.latency', { unit: 'ms' }),
    active: http.createUpDownCounter('http.server.active_requests'),
    serverDuration: http.createHistogram('http.server.request.duration', {
      unit: 's',
      advice: { explicitBucketBoundaries: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] },
    }),
  };
}

const BOUND = {
  tool: { 'gen_ai.tool.name': 'http_request', 'gen_ai.tool.status': 'success' },
  route: { 'http.request.method': 'POST', 'http.route': '/invocations', 'url.scheme': 'http' },
  finished: {
    'http.request.method': 'POST',
    'http.route': '/invocations',
    'url.scheme': 'http',
    'http.response.status_code': 200,
  },
};

/** One request's records: 23, as the reference agent makes them. */
function request(m, bound) {
  const route = bound
    ? BOUND.route
    : { 'http.request.method': 'POST', 'http.route': '/invocations', 'url.scheme': 'http' };
  m.active.add(1, route);
  for (let cycle = 0; cycle < 3; cycle++) {
    m.cycles.add(1);
    m.latency.record(12 + cycle);
    m.tokensIn.add(900);
    m.tokensOut.add(40);
    if (cycle < 2) {
      const tool = bound
        ? BOUND.tool
        : { 'gen_ai.tool.name': 'http_request', 'gen_ai.tool.status': 'success' };
      m.toolCalls.add(1, tool);
      m.toolDuration.record(0.004, tool);
    }
    m.cycleDuration.record(0.03);
  }
  m.active.add(-1, route);
  const finished = bound
    ? BOUND.finished
    : {
        'http.request.method': 'POST',
        'http.route': '/invocations',
        'url.scheme': 'http',
        'http.response.status_code': 200,
      };
  m.serverDuration.record(0.05, finished);
}

const TOOL_NAMES = Array.from({ length: 64 }, (_, i) => `tool_${i}`);
let turn = 0;

/** 23 records on one histogram, each with a fresh set naming the next of `sets` tools. */
function rotating(m, sets) {
  for (let i = 0; i < 23; i++) {
    const name = TOOL_NAMES[turn++ % sets];
    m.toolDuration.record(0.004, { 'gen_ai.tool.name': name, 'gen_ai.tool.status': 'success' });
  }
}

function measure(m, mode) {
  const run = typeof mode === 'number' ? () => rotating(m, mode) : () => request(m, mode);
  const start = process.cpuUsage();
  for (let i = 0; i < ITERATIONS; i++) run();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / ITERATIONS;
}

const sdk = instruments(new MeterProvider({ readers: [new ManualReader()] }));
const lean = instruments(
  new LeanMeterProvider({ temporality: 'cumulative', histogram: 'explicit_bucket_histogram' }),
);
const MODES = { fresh: false, bound: true, 'rotating 4': 4, 'rotating 16': 16, 'rotating 64': 64 };
const results = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [mode, arg] of Object.entries(MODES)) {
    (results[`sdk ${mode}`] ??= []).push(measure(sdk, arg));
    (results[`lean ${mode}`] ??= []).push(measure(lean, arg));
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `metric records of one reference-agent request (23), µs per request, median of ${ROUNDS} rounds:`,
);
for (const [name, xs] of Object.entries(results)) console.log(`  ${name}: ${median(xs).toFixed(2)}`);
const ratio = (mode) => (median(results[`lean ${mode}`]) / median(results[`sdk ${mode}`])).toFixed(2);
console.log(
  `  lean/sdk: ${Object.keys(MODES)
    .map((mode) => `${mode} ${ratio(mode)}×`)
    .join(', ')}`,
);
