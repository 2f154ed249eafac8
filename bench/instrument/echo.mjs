// bench/instrument's echo part: throughput and CPU per request of the contract server itself, the
// harshest case for telemetry, under every launcher, a control row and our launcher's floors.
import { join } from 'node:path';
import { table } from '../lib/report.mjs';
import {
  autocannon,
  cpuMs,
  here,
  invocationLoad,
  median,
  pct,
  startServer,
  TAIL_COLUMNS,
  tailCells,
} from './harness.mjs';
import { oursVariant } from './variants.mjs';
import { CONNECTIONS, THROUGHPUT_ROUNDS, THROUGHPUT_SECONDS } from './settings.mjs';

const NO_EXPORT = { OTEL_TRACES_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none' };
/**
 * The yardstick (not telemetry): the same echo server with a fixed 3 µs of CPU work before each
 * request. On a machine where load generator and server share two cores, what a few µs per
 * request cost in throughput is far from proportional; this row measures it.
 */
const controlVariant = {
  name: 'control: bare node + 3 µs of CPU per request, no telemetry',
  args: ['--import', join(here, 'busy-preload.mjs')],
  env: { BENCH_BUSY_US: '3' },
};
/**
 * Where the overhead goes (not peers): the same launcher with export and metrics off, once as shipped (its own
 * HTTP server span), once with the upstream HTTP instrumentation making that span instead
 * (AGENTRT_HTTP_SERVER_SPANS=upstream), and once with no HTTP instrumentation at all (then
 * @agentrt/server's own middleware starts the one server span). With the full row they split the
 * overhead into SDK + one span, the HTTP server instrumentation, and metrics + OTLP export.
 */
const floorVariants = [
  oursVariant('floor: ours, no export or metrics (SDK + our http server span)', NO_EXPORT),
  oursVariant('floor: ours, no export or metrics, upstream http server span', {
    ...NO_EXPORT,
    AGENTRT_HTTP_SERVER_SPANS: 'upstream',
  }),
  oursVariant('floor: ours, no export or metrics, http instr. off (SDK + @agentrt/server span)', {
    ...NO_EXPORT,
    OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'undici',
  }),
];

/** The echo agent under bare node, the control row, the peers and the floors; printed. */
export async function runEcho(peerVariants, sink) {
  const rows = await measureThroughput(
    { script: join(here, 'contract-app.mjs'), env: {}, payload: { prompt: 'hello' } },
    [peerVariants[0], controlVariant, ...peerVariants.slice(1), ...floorVariants],
    sink,
  );
  if (rows.length > 0) console.log(`echo agent:\n${throughputTable(rows)}`);
  return rows;
}

/**
 * Loads one workload's server under every variant, `THROUGHPUT_ROUNDS` interleaved rounds (a noisy
 * neighbour hurts them all alike), and returns the median of each measure per variant.
 */
async function measureThroughput(workload, workloadVariants, sink) {
  const runs = new Map(workloadVariants.map((v) => [v.name, []]));
  for (let round = 0; round < THROUGHPUT_ROUNDS; round++) {
    for (const v of workloadVariants) runs.get(v.name).push(await throughputRun(workload, v, sink));
  }
  return workloadVariants.map((v) => {
    const rs = runs.get(v.name);
    const pick = (key) => median(rs.map((r) => r[key]));
    return {
      name: v.name,
      rps: pick('rps'),
      cpuUsPerReq: pick('cpuUsPerReq'),
      otlpBytesPerReq: pick('otlpBytesPerReq'),
      p50: pick('p50'),
      p99: pick('p99'),
      errors: rs.reduce((n, r) => n + r.errors, 0),
    };
  });
}

/** One variant's server, warmed for 1 s and loaded for THROUGHPUT_SECONDS, then killed. */
async function throughputRun(workload, v, sink) {
  const { child, port } = await startServer(workload, v);
  try {
    const opts = invocationLoad(workload, port, CONNECTIONS);
    await autocannon({ ...opts, duration: 1 }); // warm-up (JIT, lazy exporter load, pools)
    await sink.stats(); // counts from here on
    const cpu0 = cpuMs(child.pid);
    const r = await autocannon({ ...opts, duration: THROUGHPUT_SECONDS });
    const cpu1 = cpuMs(child.pid);
    const requests = Math.max(1, r.requests.total);
    // what reached the sink while loaded (exports still buffered at the end are not counted)
    const exported = await sink.stats();
    return {
      rps: r.requests.average,
      cpuUsPerReq: ((cpu1 - cpu0) * 1000) / requests,
      otlpBytesPerReq: exported.bytes / requests,
      p50: r.latency.p50,
      p99: r.latency.p99,
      errors: r.errors + r.non2xx,
    };
  } finally {
    child.kill('SIGKILL');
  }
}

const overhead = (row, base) => (1 - row.rps / base.rps) * 100;

export function throughputTable(rows) {
  const [base] = rows;
  return table(
    [
      'variant',
      `req/s (median of ${THROUGHPUT_ROUNDS})`,
      'throughput overhead',
      'CPU µs/request',
      'CPU overhead',
      ...TAIL_COLUMNS,
    ],
    rows.map((t) => [
      t.name,
      t.rps.toFixed(0),
      `${overhead(t, base).toFixed(1)}%`,
      t.cpuUsPerReq.toFixed(t.cpuUsPerReq < 100 ? 1 : 0),
      `${((t.cpuUsPerReq / base.cpuUsPerReq - 1) * 100).toFixed(0)}%`,
      ...tailCells(t),
    ]),
  );
}

/** "ours X% (ADOT Y%, upstream register Z%)" for one workload's rows. */
function throughputLine(rows) {
  const [base] = rows;
  const find = (prefix) => rows.find((r) => r.name.startsWith(prefix));
  const oursRow = find('@agentrt');
  const adot = find('ADOT');
  const upstream = find('auto-instrumentations');
  return (
    `${pct(overhead(oursRow, base))} (CPU per request ${base.cpuUsPerReq.toFixed(0)} → ` +
    `${oursRow.cpuUsPerReq.toFixed(0)} µs)` +
    (adot ? `, ADOT ${pct(overhead(adot, base))}` : '') +
    (upstream ? `, upstream register ${pct(overhead(upstream, base))}` : '')
  );
}

/** The report's echo sentence: our throughput overhead against the peers', and our added CPU. */
export function echoLine(echo) {
  return (
    `On the echo agent, where the contract server itself is all the work: ${throughputLine(echo)}; ` +
    `ours adds ${(echo.find((r) => r.name.startsWith('@agentrt')).cpuUsPerReq - echo[0].cpuUsPerReq).toFixed(0)} µs ` +
    `of CPU per request.`
  );
}

/** The control row, and the split of our CPU per request into SDK + span, HTTP span, export. */
export function echoExplanation(echo) {
  const [base, control] = echo;
  const [ownSpan, upstream, noHttp] = floorVariants.map((v) => echo.find((t) => t.name === v.name));
  const oursRow = echo.find((t) => t.name.startsWith('@agentrt'));
  const added = (x) => `+${(x.cpuUsPerReq - base.cpuUsPerReq).toFixed(0)} µs`;
  return (
    `An echo request costs ${base.cpuUsPerReq.toFixed(0)} µs of CPU here, most of it the loopback socket ` +
    `write, and the control row shows how far from proportional added work is on this machine: ` +
    `3 µs of plain CPU per request, no telemetry, cost ${pct(overhead(control, base))} of throughput ` +
    `(${added(control)} of measured CPU per request). Under 15% on the echo server would mean ` +
    `less work per request than that, for span, context and export together. ` +
    `Our CPU per request over bare node: SDK + one server span from @agentrt/server (no export or metrics) ` +
    `${added(noHttp)}; the same span from our HTTP server instrumentation (what ships) ${added(ownSpan)}, ` +
    `from the upstream HTTP instrumentation ${added(upstream)}; with the request-duration metric and ` +
    `OTLP export (the full row) ${added(oursRow)}.`
  );
}
