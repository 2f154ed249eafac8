// bench/collector-metrics: OTLP metrics ingest (data points/s over HTTP, protobuf from the real SDK,
// cumulative, so each point's increase is worked out at ingest) against a bare node:sqlite insert
// loop of the same number of point rows in the same run; and the Agents dashboard query over a
// week of one-minute points for 50 agents against the bare SQL aggregate of the same rows. Both on
// the SQLite store and, when /usr/sbin/clickhouse-server is here, on the ClickHouse store (a real
// server on this machine, started by the bench).
// Run after building: `npx tsc -b collector && node bench/collector-metrics/index.mjs` (about two
// minutes). BENCH_METRICS_BEFORE=<an older checkout's collector/dist> adds that build's ingest to the
// same run; BENCH_METRICS_CLICKHOUSE=0 leaves ClickHouse out.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { ProtobufMetricsSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { createCollector } from '../../collector/dist/index.js';
import { queryMetric } from '../../collector/dist/metrics/metric-query.js';
import { createMetricStore } from '../../collector/dist/metrics/sqlite-metric-store.js';
import {
  clickHouseSql,
  startClickHouse,
} from '../../collector/dist/store/clickhouse/clickhouse-harness.test-util.js';
import { createClickHouseStore } from '../../collector/dist/store/clickhouse/clickhouse-store.js';
import { parseStoreSetting } from '../../collector/dist/store/store.js';
import { silentLogger } from '../../collector/dist/logger.js';
import { writeSection } from '../lib/report.mjs';

const BEFORE_DIST = process.env.BENCH_METRICS_BEFORE;
const BEFORE_LABEL = process.env.BENCH_METRICS_BEFORE_LABEL ?? 'an older build';
const CLICKHOUSE = process.env.BENCH_METRICS_CLICKHOUSE !== '0' && existsSync('/usr/sbin/clickhouse-server');

const AGENTS = 50;
const REQUESTS = Number(process.env.BENCH_METRIC_REQUESTS ?? 120);
const ROUTES_PER_AGENT = 10; // series per agent and metric in each export
const WEEK_MINUTES = 7 * 24 * 60;
const QUERY_RUNS = Number(process.env.BENCH_QUERY_RUNS ?? 15);
const log = (...a) => console.log(...a);
const now = () => performance.now();
const pct = (xs, p) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

// ---- ingest: what an SDK exports every interval, 50 agents × 10 routes × 3 metrics -------------
function makeRequests() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({
    resource: resourceFromAttributes({ 'service.name': 'agentrt-runtime' }),
    readers: [reader],
  });
  const meter = provider.getMeter('bench');
  const invocations = meter.createCounter('Invocations');
  const errors = meter.createCounter('UserErrors');
  const latency = meter.createHistogram('Latency', { unit: 'ms' });
  const bodies = [];
  let points = 0;
  return (async () => {
    for (let i = 0; i < REQUESTS; i++) {
      for (let a = 0; a < AGENTS; a++)
        for (let r = 0; r < ROUTES_PER_AGENT; r++) {
          const attrs = { Name: `agent-${a}::DEFAULT`, Operation: 'InvokeAgentRuntime', route: `r${r}` };
          invocations.add(1 + ((a + r + i) % 3), attrs);
          errors.add((a + i) % 7 === 0 ? 1 : 0, attrs);
          latency.record(20 + ((a * 37 + r * 11 + i * 5) % 900), attrs);
        }
      await reader.forceFlush();
      const [rm] = exporter.getMetrics();
      exporter.reset();
      points += rm.scopeMetrics.reduce(
        (n, s) => n + s.metrics.reduce((m, x) => m + x.dataPoints.length, 0),
        0,
      );
      bodies.push(ProtobufMetricsSerializer.serializeRequest(rm));
    }
    await provider.shutdown();
    return { bodies, points };
  })();
}

/** Points stored: metrics.sqlite's rows, or those of the ClickHouse database `store` names. */
async function storedPoints(collector, store) {
  if (!store) return collector.backend.metrics.db.prepare('SELECT count(*) AS n FROM metric_points').get().n;
  const [row] = await collector.backend.select(
    `SELECT count() AS n FROM ${parseStoreSetting(store).database}.metric_points`,
  );
  return Number(row.n);
}

async function ingestRate(bodies, points, create = createCollector, store = undefined) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-metrics-'));
  const collector = await create({
    dataDir: dir,
    host: '127.0.0.1',
    port: 0,
    ...(store ? { store, logger: silentLogger } : {}),
  });
  try {
    const started = now();
    // In order: a cumulative series' points must arrive oldest first (one SDK exports in order).
    for (const body of bodies) {
      const res = await fetch(`${collector.url}/v1/metrics`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-protobuf' },
        body,
      });
      if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
    }
    const seconds = (now() - started) / 1000;
    const stored = await storedPoints(collector, store);
    if (stored !== points) throw new Error(`stored ${stored} of ${points} points`);
    return points / seconds;
  } finally {
    await collector.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The same number of point rows (same columns, 1,500-row transactions) into a bare table. */
function bareInsertRate(points, perRequest) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-metrics-bare-'));
  const db = new DatabaseSync(join(dir, 'bare.sqlite'));
  db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
    CREATE TABLE metric_points (series_id INTEGER NOT NULL, time_us INTEGER NOT NULL, value REAL, delta REAL,
      count REAL, min REAL, max REAL, buckets TEXT, PRIMARY KEY (series_id, time_us)) WITHOUT ROWID;
    CREATE INDEX p_time ON metric_points(time_us);`);
  const insert = db.prepare('INSERT INTO metric_points VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  const buckets = JSON.stringify({
    b: [0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000],
    c: [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
  });
  const started = now();
  for (let done = 0, t = 0; done < points; t++) {
    db.exec('BEGIN');
    for (let i = 0; i < perRequest && done < points; i++, done++) {
      const histogram = i % 3 === 2;
      insert.run(
        done,
        t * 60_000_000,
        5,
        1,
        histogram ? 1 : null,
        histogram ? 20 : null,
        histogram ? 900 : null,
        histogram ? buckets : null,
      );
    }
    db.exec('COMMIT');
  }
  const rate = points / ((now() - started) / 1000);
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return rate;
}

// ---- the dashboard: a week of one-minute points for 50 agents -----------------------------------
async function fillWeek(store) {
  const end = Date.now();
  const start = end - WEEK_MINUTES * 60_000;
  const started = now();
  for (let m = 0; m < WEEK_MINUTES; m += 60) {
    const points = [];
    for (let k = m; k < Math.min(m + 60, WEEK_MINUTES); k++) {
      const t = (start + k * 60_000) * 1e6;
      for (let a = 0; a < AGENTS; a++) {
        const base = {
          description: '',
          temporality: 'delta',
          resource: { 'service.name': 'agentrt-runtime' },
          scope: 'bench',
          attributes: { Name: `agent-${a}::DEFAULT`, Operation: 'InvokeAgentRuntime' },
          startTimeUnixNano: t - 60e9,
          timeUnixNano: t,
        };
        points.push({
          ...base,
          name: 'Invocations',
          unit: '{call}',
          kind: 'sum',
          monotonic: true,
          value: 1 + ((a + k) % 5),
        });
        const c = [0, 0, 1, 2, 1, 0, 0, 0];
        points.push({
          ...base,
          name: 'Latency',
          unit: 'ms',
          kind: 'histogram',
          monotonic: false,
          count: 4,
          sum: 600,
          min: 60,
          max: 300,
          bounds: [10, 25, 50, 100, 250, 500, 1000],
          bucketCounts: c,
        });
      }
    }
    await store.ingest(points);
  }
  const fillSeconds = (now() - started) / 1000;
  return { start, end, fillSeconds };
}

async function timeQuery(fn, runs = QUERY_RUNS) {
  await fn(); // warm: statement compile, page cache
  const times = [];
  const cpu = [];
  for (let i = 0; i < runs; i++) {
    const t = now();
    const c = process.cpuUsage();
    await fn();
    times.push(now() - t);
    const used = process.cpuUsage(c);
    cpu.push((used.user + used.system) / 1000);
  }
  return { p50: pct(times, 50), p95: pct(times, 95), cpu50: pct(cpu, 50) };
}

const ms = (x) => `${x.toFixed(1)} ms`;
const ratio = (x, base) => `${(x / base).toFixed(2)}×`;

log(
  `building ${REQUESTS} OTLP/protobuf metric exports (${AGENTS} agents × ${ROUTES_PER_AGENT} routes × 3 metrics)…`,
);
const { bodies, points } = await makeRequests();
log(`${points} data points in ${bodies.length} requests`);
// Interleaved, so a neighbour's load hits each alike: ingest, bare, (before), twice; best of two each.
let ingest = 0;
let bare = 0;
let before;
let ingestCh;
const ch = CLICKHOUSE ? await startClickHouse() : undefined;
const chVersion = ch ? (await clickHouseSql(ch.url, 'SELECT version()')).trim() : undefined;
const chUrl = (db) => `clickhouse://default:@127.0.0.1:${ch.nodes[0].httpPort}/${db}`;
for (let round = 0; round < 2; round++) {
  ingest = Math.max(ingest, await ingestRate(bodies, points));
  if (ch)
    ingestCh = Math.max(
      ingestCh ?? 0,
      await ingestRate(bodies, points, createCollector, chUrl(`bench_metrics_ingest_${round}`)),
    );
  bare = Math.max(bare, bareInsertRate(points, points / bodies.length));
  if (BEFORE_DIST) {
    const { createCollector: createBefore } = await import(join(BEFORE_DIST, 'index.js'));
    before = Math.max(before ?? 0, await ingestRate(bodies, points, createBefore));
  }
}
log(
  `ingest ${ingest.toFixed(0)} points/s, on ClickHouse ${ingestCh?.toFixed(0)}, bare ${bare.toFixed(0)} rows/s, before ${before?.toFixed(0)}`,
);

const weekDir = mkdtempSync(join(tmpdir(), 'bench-metrics-week-'));
const store = createMetricStore({ dataDir: weekDir });
const { start, end, fillSeconds } = await fillWeek(store);
const rows = store.db.prepare('SELECT count(*) AS n FROM metric_points').get().n;
log(`week filled: ${rows} points in ${fillSeconds.toFixed(1)} s`);
const hour = 3_600_000;
// The dashboard's queries, by agent: the whole week in hours, or the last day in 15 minutes (roll-ups)
// and in 7 minutes (a step no roll-up divides: raw points).
const byAgent = (name, fn, extra) => ({
  name,
  fn,
  by: ['Name'],
  startMs: start,
  endMs: end,
  stepMs: hour,
  ...extra,
});
const lastDay = (stepMs) => byAgent('Latency', 'p95', { startMs: end - 24 * hour, stepMs });
const QUERIES = {
  invocations: [byAgent('Invocations', 'sum'), QUERY_RUNS],
  p95: [byAgent('Latency', 'p95'), Math.max(3, Math.floor(QUERY_RUNS / 3))],
  dayP95: [lastDay(15 * 60_000), QUERY_RUNS],
  invocationsRaw: [byAgent('Invocations', 'sum', { rollups: false }), QUERY_RUNS],
  p95Raw: [byAgent('Latency', 'p95', { rollups: false }), 3],
  dayP95Raw: [lastDay(7 * 60_000), QUERY_RUNS],
};
const timed = {};
for (const [key, [q, runs]] of Object.entries(QUERIES))
  timed[key] = await timeQuery(() => queryMetric(store, q), runs);
const { invocations, p95, dayP95, invocationsRaw, p95Raw, dayP95Raw } = timed;
const ids = store.db
  .prepare("SELECT id FROM metric_series WHERE name = 'Invocations'")
  .all()
  .map((r) => r.id);
const bareSql = store.db.prepare(
  `SELECT series_id, CAST((time_us - ?) / ? AS INTEGER) AS b, sum(delta) FROM metric_points
   WHERE series_id IN (SELECT value FROM json_each(?)) AND time_us >= ? AND time_us < ? GROUP BY series_id, b`,
);
const bareQuery = await timeQuery(() =>
  bareSql.all(start * 1000, hour * 1000, JSON.stringify(ids), start * 1000, end * 1000),
);
const bareRollupSql = store.db.prepare(
  `SELECT series_id, bucket_us, delta FROM metric_rollups
   WHERE series_id IN (SELECT value FROM json_each(?)) AND width_us = ? AND bucket_us >= ? AND bucket_us < ?`,
);
const bareRollup = await timeQuery(() =>
  bareRollupSql.all(JSON.stringify(ids), hour * 1000, start * 1000, end * 1000),
);
const rollupRows = store.db.prepare('SELECT count(*) AS n FROM metric_rollups').get().n;
await store.close();
rmSync(weekDir, { recursive: true, force: true });
log({ invocations, p95, dayP95, invocationsRaw, p95Raw, dayP95Raw, bareQuery, bareRollup });

// The same week and queries on ClickHouse (no roll-up tables there: it adds the raw points up, so
// the roll-ups-off rows are the same queries).
const onCh = {};
let chFillSeconds;
if (ch) {
  const chStore = await createClickHouseStore({
    ...parseStoreSetting(chUrl('bench_metrics_week')),
    logger: silentLogger,
    spoolDir: mkdtempSync(join(tmpdir(), 'bench-spool-')),
  });
  const filled = await fillWeek(chStore.metrics);
  chFillSeconds = filled.fillSeconds;
  const shifted = (q) => ({
    ...q,
    startMs: q.startMs - start + filled.start,
    endMs: q.endMs - end + filled.end,
  });
  for (const key of Object.keys(QUERIES)) {
    const [q, runs] = QUERIES[key];
    onCh[key] = await timeQuery(() => queryMetric(chStore.metrics, shifted(q)), runs);
  }
  await chStore.close();
  await ch.stop();
  log({ onCh });
}

const load = loadavg()
  .map((x) => x.toFixed(1))
  .join(' / ');
const row = (label, t, c = undefined, base = bareQuery) =>
  `| ${label} | ${ms(t.p50)} | ${ms(t.p95)} | ${ms(t.cpu50)} | ${ratio(t.p50, base.p50)} |${ch ? ` ${c ? `${ms(c.p50)} / ${ms(c.p95)}` : '—'} | ${c ? ratio(c.p50, t.p50) : '—'} |` : ''}`;
writeSection(
  'collector-metrics',
  'Collector: metrics ingest and the Agents dashboard query',
  `Ingest: ${bodies.length} OTLP/protobuf exports from the real SDK (\`MeterProvider\`, cumulative, serialized by
\`ProtobufMetricsSerializer\`), each ${points / bodies.length} data points (${AGENTS} agents × ${ROUTES_PER_AGENT} routes × a counter, a
second counter and a histogram), sent in order over HTTP to a collector in this process, each acknowledged
after it is stored (its increase over the series' previous point worked out, and added to its hourly and
five-minute roll-ups in the same transaction). Baseline in the same run: a bare \`node:sqlite\` insert loop
of the same number of rows into the same point table (same indexes, one transaction per export's worth
of rows, rows pre-built, no roll-ups). Each measured twice, interleaved; the better of the two.

| measure | data points/s | vs bare insert |
| --- | --- | --- |
| collector metrics ingest, OTLP/protobuf over HTTP | ${Math.round(ingest).toLocaleString('en-US')} | ${ratio(ingest, bare)} |
${ingestCh === undefined ? '' : `| the same ingest on the ClickHouse store (clickhouse-server ${chVersion} on this machine) | ${Math.round(ingestCh).toLocaleString('en-US')} | ${ratio(ingestCh, bare)} |\n`}${before === undefined ? '' : `| the same ingest, ${BEFORE_LABEL} | ${Math.round(before).toLocaleString('en-US')} | ${ratio(before, bare)} |\n`}| baseline: bare node:sqlite insert loop, same rows | ${Math.round(bare).toLocaleString('en-US')} | 1.00× |

Dashboard query over a week of one-minute points for ${AGENTS} agents (${rows.toLocaleString('en-US')} points: a delta counter
and a histogram of 8 buckets per agent and minute, and the ${rollupRows.toLocaleString('en-US')} roll-up rows kept beside them; filled
through the store in ${fillSeconds.toFixed(1)} s), the store's query function without HTTP, ${QUERY_RUNS} runs after one warm-up
(3 for the raw p95 row; goal: under 100 ms p50), with the query's CPU time (p50) beside its wall time.
The week starts mid-hour, so each query also reads raw points and five-minute windows at its edges.
Baselines: the bare SQL aggregate of the Invocations raw points by series and hour (what the whole query
cost before roll-ups), and the bare SQL read of the hourly roll-up rows the query reads.
${
  ch
    ? `On ClickHouse the same week is filled through its metric store (${chFillSeconds.toFixed(1)} s) and the same queries run
(p50 / p95 wall time): its hourly roll-ups (materialized views of the points, totals and histogram
buckets by their edges) answer for whole hours, the points for the rest (the 15-minute query reads
points only); the ratio column is ClickHouse's p50 over SQLite's.
`
    : ''
}Load average (1/5/15 min) at the end of the run: ${load}.

| query | p50 | p95 | CPU p50 | p50 vs bare SQL over the raw points |${ch ? ' ClickHouse p50 / p95 | ClickHouse / SQLite |' : ''}
| --- | --- | --- | --- | --- |${ch ? ' --- | --- |' : ''}
${row('Invocations, sum by Name, 7 days in 1 h buckets (hourly roll-ups)', invocations, onCh.invocations)}
${row('Latency p95 by Name, 7 days in 1 h buckets (hourly roll-ups, bucket merge)', p95, onCh.p95)}
${row('Latency p95 by Name, last 24 h in 15 min buckets (five-minute roll-ups)', dayP95, onCh.dayP95)}
${row('raw fallback: Invocations, sum by Name, 7 days in 1 h buckets, roll-ups off', invocationsRaw, onCh.invocationsRaw)}
${row('raw fallback: Latency p95 by Name, 7 days in 1 h buckets, roll-ups off', p95Raw, onCh.p95Raw)}
${row('raw fallback: Latency p95 by Name, last 24 h in 7 min buckets (no roll-up divides the step)', dayP95Raw, onCh.dayP95Raw)}
${row('baseline: bare SQL sum of the Invocations raw points by series and hour', bareQuery)}
${row('baseline: bare SQL read of the Invocations hourly roll-up rows', bareRollup)}
`,
);
log('docs/benchmarks.md updated (section collector-metrics)');
