// bench/instrument/op-count.mjs: how many telemetry operations one reference-agent request makes,
// and what each costs warm, in one process — a floor for the launcher's per-request cost that holds
// on a loaded machine better than CPU per request does (it counts calls; only the unit costs
// move with load). Run after building: `node bench/instrument/op-count.mjs` (about 15 s; writes its
// section of docs/benchmarks.md unless BENCH_WRITE=0). It starts the fixture weather API and
// examples/sdk-agent under @agentrt/instrument, sampler off and then on, in otel and then lean
// mode, with this file as a second preload that counts and call-timing.mjs as a third that times
// the calls inside the agent.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import os from 'node:os';
import { table, writeSection } from '../lib/report.mjs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const require = createRequire(join(root, 'package.json'));

/** The operations counted: [label, module, class export, method]. */
const OPS = [
  [
    'span started (sdk-trace Tracer.startSpan)',
    '@opentelemetry/sdk-trace',
    'Tracer',
    'startSpan',
    'build/src/Tracer.js',
  ],
  ['context injected (CompositePropagator.inject)', '@opentelemetry/core', 'CompositePropagator', 'inject'],
  [
    'context extracted (CompositePropagator.extract)',
    '@opentelemetry/core',
    'CompositePropagator',
    'extract',
  ],
  [
    'context entered (AsyncLocalStorageContextManager.with)',
    '@opentelemetry/context-async-hooks',
    'AsyncLocalStorageContextManager',
    'with',
  ],
  [
    'metric recorded (sdk-metrics SyncInstrument._record)',
    '@opentelemetry/sdk-metrics',
    'SyncInstrument',
    '_record',
    'build/src/Instruments.js',
  ],
  [
    'log record emitted (sdk-logs Logger.emit)',
    '@opentelemetry/sdk-logs',
    'Logger',
    'emit',
    'build/src/Logger.js',
  ],
];

function classOf([, pkg, name, , file]) {
  const mod = require(file ? join(dirname(require.resolve(`${pkg}/package.json`)), file) : pkg);
  return mod[name];
}

if (process.env.AGENTRT_OP_COUNT_CHILD === '1') {
  // ---- in the agent: count every call; print the counts on SIGUSR2 -------------------------------
  const counts = OPS.map(() => 0);
  OPS.forEach((op, i) => {
    const proto = classOf(op)?.prototype;
    const original = proto?.[op[3]];
    if (typeof original !== 'function') return;
    proto[op[3]] = function (...args) {
      counts[i]++;
      return original.apply(this, args);
    };
  });
  process.on('SIGUSR2', () => {
    process.stderr.write(`OPCOUNT ${JSON.stringify(counts)}\n`);
    counts.fill(0);
  });
} else {
  const node = process.execPath;
  const start = (script, args, env, pattern) =>
    new Promise((resolve, reject) => {
      const child = spawn(node, [...args, script], {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      const timer = setTimeout(() => reject(new Error(`${script} did not start: ${out}`)), 60_000);
      const onData = (data) => {
        out += data;
        const m = pattern.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve({ child, value: JSON.parse(m[1]), output: () => out });
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.on('exit', (code) => reject(new Error(`${script} exited ${code}: ${out}`)));
    });
  const fixture = await start(
    join(root, 'examples', 'models', 'dist', 'fixtures', 'weather-api-main.js'),
    [],
    { PORT: '0' },
    /"msg":"listening".*?"url":("[^"]*")/,
  );
  /**
   * Calls per request of each counted operation, under the launcher with `sampler` and `sdk`, and
   * the call timing's calls and µs per request (call-timing.mjs).
   */
  async function countOps(sampler, sdk = 'otel') {
    const agent = await start(
      join(root, 'examples', 'sdk-agent', 'dist', 'main.js'),
      [
        '--import',
        join(root, 'packages', 'instrument', 'dist', 'register.js'),
        '--import',
        fileURLToPath(import.meta.url),
        '--import',
        join(here, 'call-timing.mjs'),
      ],
      {
        AGENTRT_OP_COUNT_CHILD: '1',
        PORT: '0',
        HOST: '127.0.0.1',
        AGENTRT_MODEL_PROVIDER: 'offline',
        AGENTRT_OFFLINE_CHUNK_DELAY_MS: '0',
        WEATHER_API_BASE_URL: fixture.value,
        OTEL_TRACES_SAMPLER: sampler,
        AGENTRT_SDK: sdk,
        // every signal on, as shipped; the endpoint refuses, so nothing is sent (export is not counted)
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
        OTEL_METRIC_EXPORT_INTERVAL: '3600000',
        OTEL_LOG_LEVEL: 'none',
      },
      /"msg":"listening".*?"port":(\d+)/,
    );
    const invoke = () =>
      fetch(`http://127.0.0.1:${agent.value}/invocations`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-cloud-agent-runtime-session-id': 'bench-session-0000000000000000000001',
        },
        body: JSON.stringify({ prompt: 'What is the weather in Seattle?' }),
      }).then((r) => r.text());
    for (let i = 0; i < 50; i++) await invoke(); // warm-up; then the metrics SDK is in place
    agent.child.kill('SIGUSR2');
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (let i = 0; i < REQUESTS; i++) await invoke();
    const before = agent.output().length;
    agent.child.kill('SIGUSR2');
    await new Promise((resolve) => setTimeout(resolve, 500));
    const m = /OPCOUNT (\[.*\])/.exec(agent.output().slice(before));
    const t = /OPTIME (\{.*\})/.exec(agent.output().slice(before));
    agent.child.kill('SIGKILL');
    if (!m || !t) throw new Error('the agent printed no counts');
    const timing = Object.entries(JSON.parse(t[1])).map(([label, [calls, us]]) => [
      label,
      calls / REQUESTS,
      us / REQUESTS,
    ]);
    return Object.assign(
      JSON.parse(m[1]).map((n) => n / REQUESTS),
      { timing },
    );
  }
  const REQUESTS = 200;
  const off = await countOps('always_off');
  const full = await countOps('always_on');
  const leanOff = await countOps('always_off', 'lean');
  const leanFull = await countOps('always_on', 'lean');
  fixture.child.kill('SIGKILL');
  const unitUs = await unitCosts();
  let total = 0;
  const rows = OPS.map(([label], i) => {
    const us = unitUs[i];
    if (us !== undefined) total += off[i] * us;
    return [
      label,
      off[i].toFixed(1),
      full[i].toFixed(1),
      us?.toFixed(2) ?? 'not timed',
      us === undefined ? '' : (off[i] * us).toFixed(1),
    ];
  });
  rows.push(['**total, sampler off**', '', '', '', total.toFixed(1)]);
  const loadAverage = os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(', ');
  const markdown = `
Written by \`node bench/instrument/op-count.mjs\` (about 15 s; load average ${loadAverage}). The reference
agent (examples/sdk-agent, offline model) under @agentrt/instrument with every signal on, ${REQUESTS}
sequential requests after 50 warm-up ones, with a second preload that counts calls into the
OpenTelemetry SDK; then each operation timed warm in one process with the launcher's own pipeline
(sampler off). Calls are exact and hold on any machine; the µs columns scale with its load (on a quiet
machine divide them by about the ratio of the CPU-per-request figures above to the issue's 3668 µs).
Span starts include Strands' own, which its tracing suppression returns early (cheaper than the
timed child span): the total is an upper bound of what the OpenTelemetry calls themselves cost a
request with the sampler off.

${table(['operation', 'calls per request, sampler off', 'calls per request, full', 'µs per call (warm, sampler off)', 'µs per request, sampler off'], rows)}

The same requests timed inside the agent (bench/instrument/call-timing.mjs, a third preload): wall
µs per request spent in each call, summed, both modes, inclusive (a fetch span's start holds its
inject). A call made once per request runs on cold caches: compare µs per call here with the warm
column above.

${timingTable({ 'lean, sampler off': leanOff, 'lean, full': leanFull, 'otel, sampler off': off, 'otel, full': full })}
`;
  console.log(markdown);
  if (process.env.BENCH_WRITE !== '0') {
    writeSection(
      'instrument-ops',
      'Instrumentation launcher: telemetry calls per reference-agent request (bench/instrument/op-count.mjs)',
      markdown,
    );
  }
  process.exit(0);
}

/** Per timed call: calls per request (lean, full) and µs per request under each variant. */
function timingTable(variants) {
  const names = Object.keys(variants);
  const labels = [...new Set(names.flatMap((n) => variants[n].timing.map(([label]) => label)))];
  const cell = (n, label) => variants[n].timing.find(([l]) => l === label);
  const rows = labels.map((label) => [
    label,
    (cell('lean, full', label)?.[1] ?? 0).toFixed(1),
    // no calls: not timed in that mode (metric records in otel mode, see call-timing.mjs)
    ...names.map((n) => (cell(n, label)?.[1] ? cell(n, label)[2].toFixed(1) : '—')),
  ]);
  return table(['call', 'calls per request (lean, full)', ...names.map((n) => `µs per request, ${n}`)], rows);
}

/**
 * What each counted operation costs warm, with the same launcher pipeline started in this
 * process (sampler off, metrics on): a child span under a non-recording parent, inject and extract
 * of the request's context with the launcher's propagators, a context switch, one histogram
 * record with an HTTP client's attributes. Log records are not timed (none are counted).
 */
async function unitCosts() {
  const { startTelemetry } = await import(join(root, 'packages', 'instrument', 'dist', 'sdk.js'));
  const api = require('@opentelemetry/api');
  const telemetry = startTelemetry({
    appDir: here,
    env: {
      OTEL_TRACES_SAMPLER: 'always_off',
      OTEL_TRACES_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'none',
      OTEL_METRICS_EXPORTER: 'console',
      OTEL_METRIC_EXPORT_INTERVAL: '3600000',
      AGENTRT_CAPTURE_CONSOLE: 'false',
    },
  });
  await new Promise((resolve) => setTimeout(resolve, 50)); // the metrics SDK starts a turn later
  const headers = {
    'x-cloud-agent-runtime-session-id': 'bench-session-0000000000000000000001',
    'content-type': 'application/json',
  };
  const parent = api.propagation.extract(api.ROOT_CONTEXT, headers);
  const tracer = api.trace.getTracer('op-count');
  const inSpan = api.trace.setSpan(parent, tracer.startSpan('parent', {}, parent));
  const histogram = api.metrics.getMeter('op-count').createHistogram('op.count.duration', { unit: 's' });
  const attributes = () => ({
    'http.request.method': 'GET',
    'server.address': '127.0.0.1',
    'server.port': 4000,
    'url.scheme': 'http',
    'network.protocol.version': '1.1',
    'http.response.status_code': 200,
  });
  const time = (fn, n = 20_000) => {
    for (let i = 0; i < 2_000; i++) fn();
    const t0 = process.cpuUsage();
    for (let i = 0; i < n; i++) fn();
    const t = process.cpuUsage(t0);
    return (t.user + t.system) / n;
  };
  const costs = [
    time(() =>
      tracer.startSpan('GET', { kind: api.SpanKind.CLIENT, attributes: attributes() }, inSpan).end(),
    ),
    time(() => api.propagation.inject(inSpan, {})),
    time(() => api.propagation.extract(api.ROOT_CONTEXT, headers)),
    time(() => api.context.with(inSpan, () => undefined)),
    time(() => histogram.record(0.01, attributes())),
    undefined,
  ];
  // not shut down: its console metric exporter would print the run's metrics; the process exits
  void telemetry;
  return costs;
}
