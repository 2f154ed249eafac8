// bench/collector-metrics/hostile.mjs: the collector's GET /healthz latency while hostile reads run
// over and over — the metric query of issue "resources one tenant can exhaust for all" (`metric
// hist.evil p99 by session.id every 1s since 1h` over 5,000 histogram series of 200 bounds, by the
// query language and by /api/metrics/query), a heavy metric query within the limits, and an
// /api/logs search that scans 300,000 records — against the same probes with no query running.
// The collector is a process of its own (dist/main.js), as deployed.
// Run after building: `npx tsc -b collector && node bench/collector-metrics/hostile.mjs` (about two
// minutes). BENCH_STORE=clickhouse runs it on a ClickHouse store (a clickhouse-server started here);
// BENCH_BEFORE=<another build's collector/dist/main.js> (BENCH_BEFORE_LABEL names it) measures that
// build first in the same run, on a store of its own; the table has both.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ms, pct } from '../lib/measure.mjs';
import { loadAverage, table, writeSection } from '../lib/report.mjs';

const MAIN = fileURLToPath(new URL('../../collector/dist/main.js', import.meta.url));
/** Another build's collector/dist/main.js, measured first in the same run (the table has both). */
const BEFORE = process.env.BENCH_BEFORE;
const BEFORE_LABEL = process.env.BENCH_BEFORE_LABEL ?? 'before';
const STORE = process.env.BENCH_STORE === 'clickhouse' ? 'clickhouse' : 'sqlite';
const SERIES = Number(process.env.BENCH_SERIES ?? 5000);
const BOUNDS = 200;
const EXPORTS = 6; // one every ten minutes over the last hour
const LOGS = Number(process.env.BENCH_LOGS ?? 300_000);
const PHASE_MS = Number(process.env.BENCH_PHASE_MS ?? 15_000);
const PROBE_EVERY_MS = 20;
const PROBE_TIMEOUT_MS = 60_000;
const log = (...a) => console.log(...a);

const HOSTILE_FORM = 'metric hist.evil p99 by session.id every 1s since 1h';
const READS = [
  {
    name: 'metric form, p99 by session.id every 1s',
    run: (url) => post(url, '/api/query', { query: HOSTILE_FORM }),
  },
  {
    name: '/api/metrics/query, the same',
    run: (url) => fetch(`${url}/api/metrics/query?name=hist.evil&fn=p99&by=session.id&stepMs=1000&since=1h`),
  },
  {
    name: 'metric form within the limits, count by session.id every 1m',
    run: (url) =>
      post(url, '/api/query', { query: 'metric hist.evil count by session.id every 1m since 1h' }),
  },
  { name: `/api/logs scanning ${LOGS} records`, run: (url) => fetch(`${url}/api/logs?q=no%20such%20text`) },
];

const post = (url, path, body) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

async function startCollector(main, env) {
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, AGENTRT_COLLECTOR_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err = (err + d).slice(-4000)));
  const exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, err })),
  );
  const url = await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) resolve(JSON.parse(line).url);
    });
    void exited.then(({ code }) => reject(new Error(`collector exited ${code}: ${out}${err}`)));
  });
  return { child, url, exited };
}

/** One export of `series` histogram series (s0, s1, …) with `bounds` bounds, timed `timeMs`. */
function histograms(bounds, timeMs, series = SERIES) {
  return {
    resourceMetrics: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'tenant' } }] },
        scopeMetrics: [
          {
            metrics: [
              {
                name: 'hist.evil',
                unit: 'ms',
                histogram: {
                  aggregationTemporality: 1,
                  dataPoints: Array.from({ length: series }, (_, i) => ({
                    startTimeUnixNano: String((timeMs - 600_000) * 1e6),
                    timeUnixNano: String(timeMs * 1e6),
                    count: String(bounds + 1),
                    sum: bounds,
                    bucketCounts: Array.from({ length: bounds + 1 }, () => '1'),
                    explicitBounds: Array.from({ length: bounds }, (_, b) => b + 1),
                    attributes: [{ key: 'session.id', value: { stringValue: `s${i}` } }],
                  })),
                },
              },
            ],
          },
        ],
      },
    ],
  };
}

function logRecords(from, n, nowMs) {
  return {
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'tenant' } }] },
        scopeLogs: [
          {
            logRecords: Array.from({ length: n }, (_, i) => ({
              timeUnixNano: String((nowMs - 3_000_000 + (from + i) * 10) * 1e6),
              severityNumber: 9,
              body: { stringValue: `request ${from + i} handled in ${(from + i) % 97} ms` },
              attributes: [{ key: 'session.id', value: { stringValue: `s${(from + i) % SERIES}` } }],
            })),
          },
        ],
      },
    ],
  };
}

async function fill(url) {
  const nowMs = Date.now();
  const started = performance.now();
  for (let e = 0; e < EXPORTS; e++) {
    const res = await post(url, '/v1/metrics', histograms(BOUNDS, nowMs - (EXPORTS - e) * 600_000));
    if (res.status !== 200) throw new Error(`metrics export: ${res.status} ${await res.text()}`);
    const partial = (await res.json()).partialSuccess;
    if (partial?.rejectedDataPoints) throw new Error(`metrics export: ${JSON.stringify(partial)}`);
  }
  const refused = await (await post(url, '/v1/metrics', histograms(2000, nowMs, 10))).json();
  for (let from = 0; from < LOGS; from += 5000) {
    const res = await post(url, '/v1/logs', logRecords(from, 5000, nowMs));
    if (res.status !== 200) throw new Error(`logs export: ${res.status} ${await res.text()}`);
  }
  log(`filled in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return refused;
}

/**
 * Probes /healthz every PROBE_EVERY_MS for `phaseMs` while `load` runs (if any): the answer times,
 * a probe not answered within PROBE_TIMEOUT_MS counted at that time (and as failed).
 */
async function probe(url, phaseMs, load) {
  const times = [];
  let failed = 0;
  const until = performance.now() + phaseMs;
  let stop = false;
  const loads = load ? load(() => stop) : Promise.resolve();
  while (performance.now() < until) {
    const t = performance.now();
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      await res.arrayBuffer();
      if (res.status !== 200) failed++;
    } catch (error) {
      failed++;
      // The collector is gone: nothing more to probe.
      if (error.cause?.code === 'ECONNREFUSED') break;
    }
    times.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, PROBE_EVERY_MS));
  }
  stop = true;
  await loads;
  return { times, failed };
}

/** Runs every hostile read in turn, `loops` at once, until stopped; outcomes per read. */
function hostileReads(url, outcomes, loops = 2) {
  return (stopped) =>
    Promise.all(
      Array.from({ length: loops }, async (_, k) => {
        for (let i = k; !stopped(); i++) {
          const read = READS[i % READS.length];
          const t = performance.now();
          let status;
          let message = '';
          try {
            const res = await read.run(url);
            status = res.status;
            const body = await res.text();
            if (status !== 200) message = JSON.parse(body).message ?? '';
          } catch (error) {
            status = `failed (${error.cause?.code ?? error.message})`;
          }
          const o = (outcomes[read.name] ??= { statuses: new Map(), times: [], message: '' });
          o.statuses.set(status, (o.statuses.get(status) ?? 0) + 1);
          o.times.push(performance.now() - t);
          if (message) o.message = message;
          if (typeof status === 'string') return;
        }
      }),
    );
}

/**
 * One build's run on a fresh store: filled, probed without queries, then probed under the hostile
 * reads. Its rows for the tables.
 */
async function measure(main, label, env) {
  const c = await startCollector(main, env);
  log(
    `${label}: ${main} on ${STORE} at ${c.url}; ${SERIES} series × ${EXPORTS} exports, ${LOGS} log records`,
  );
  const refused = await fill(c.url);
  const base = await probe(c.url, PHASE_MS);
  const outcomes = {};
  const hostile = await probe(c.url, PHASE_MS * 2, hostileReads(c.url, outcomes));
  const exit = await Promise.race([c.exited, new Promise((r) => setTimeout(() => r(undefined), 100))]);
  c.child.kill('SIGTERM');
  await c.exited;
  const summary = (phase, p) => [
    label,
    phase,
    String(p.times.length),
    ms(pct(p.times, 50)),
    ms(pct(p.times, 99)),
    ms(Math.max(...p.times)),
    String(p.failed),
  ];
  const overMs = pct(hostile.times, 99) - pct(base.times, 99);
  const died = exit
    ? ` The collector exited (${exit.code ?? exit.signal}): ${exit.err
        .split('\n')
        .filter((l) => /heap|memory|Error/i.test(l))
        .slice(0, 2)
        .join(' ')}`
    : '';
  return {
    rows: [summary('no query running', base), summary('hostile reads, two at a time', hostile)],
    reads: Object.entries(outcomes).map(([name, o]) => [
      label,
      name,
      String(o.times.length),
      [...o.statuses].map(([st, n]) => `${st} ×${n}`).join(', '),
      ms(pct(o.times, 50)),
      ms(Math.max(...o.times)),
      o.message.slice(0, 110).replace(/\|/g, '\\|'),
    ]),
    verdict: `${label}: /healthz p99 over its baseline while the hostile reads run **${ms(overMs)}**${hostile.failed ? `, ${hostile.failed} probes unanswered within ${PROBE_TIMEOUT_MS / 1000} s or failed` : ''} (goal < 100 ms: ${overMs < 100 && !hostile.failed ? 'met' : 'missed'}).${died}`,
    refused: `${label}: an export with 2,000 bounds per point ${refused.partialSuccess ? `is refused: \`${JSON.stringify(refused.partialSuccess)}\`` : 'is accepted'}.`,
  };
}

let clickHouse;
const dirs = [];
try {
  let database = 0;
  /** A fresh store for each build: a data dir, and on ClickHouse a database of its own. */
  const env = () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentrt-bench-hostile-'));
    dirs.push(dir);
    return {
      AGENTRT_DATA_DIR: dir,
      ...(clickHouse
        ? {
            AGENTRT_STORE: `clickhouse://default:@127.0.0.1:${clickHouse.nodes[0].httpPort}/bench_hostile_${database++}`,
          }
        : {}),
    };
  };
  if (STORE === 'clickhouse') {
    const h = await import('../../collector/dist/store/clickhouse/clickhouse-harness.test-util.js');
    clickHouse = await h.startClickHouse();
  }
  const runs = [
    ...(BEFORE ? [await measure(BEFORE, BEFORE_LABEL, env())] : []),
    await measure(MAIN, 'this build', env()),
  ];
  const markdown = [
    `Store: ${STORE}. ${SERIES} histogram series of ${BOUNDS} explicit bounds (the most a point may have now) in ${EXPORTS} exports over the last hour, ${LOGS} log records; the collector as a process (\`dist/main.js\`, default settings: query threads cores − 1, 30 s deadline). \`/healthz\` is probed every ${PROBE_EVERY_MS} ms for ${PHASE_MS / 1000} s with no query, then for ${(PHASE_MS * 2) / 1000} s while two loops send the reads below one after another (a probe waits up to ${PROBE_TIMEOUT_MS / 1000} s). Load average ${loadAverage()}.`,
    '',
    table(
      ['build', 'phase', 'probes', '/healthz p50', '/healthz p99', 'max', 'failed'],
      runs.flatMap((r) => r.rows),
    ),
    '',
    ...runs.map((r) => `- ${r.verdict}`),
    '',
    table(
      ['build', 'read', 'runs', 'status', 'p50', 'max', 'message'],
      runs.flatMap((r) => r.reads),
    ),
    '',
    ...runs.map((r) => `- ${r.refused}`),
  ].join('\n');
  log(markdown);
  log(
    `written to ${writeSection(`collector-hostile-${STORE}`, `Collector: /healthz under hostile metric and log reads (${STORE}, bench/collector-metrics/hostile.mjs)`, markdown)}`,
  );
} finally {
  await clickHouse?.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}
