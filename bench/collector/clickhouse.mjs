// bench/collector/clickhouse: the same spans into a collector on the SQLite store and on the
// ClickHouse store (Debian's clickhouse-server, started here on a free port), in one run: ingest
// spans/s with one collector process and with two on one ClickHouse, then p50/p95 of the UI's
// lookups (session, trace by id, stats by model, stats by bin(1h)) over what was stored.
// Run after building: `npx tsc -b collector && node bench/collector/clickhouse.mjs`
// (BENCH_SPANS, default 200000; BENCH_CONCURRENCY requests in flight per collector, default 4;
// BENCH_SHIP_MS for the ClickHouse collectors' AGENTRT_SPOOL_SHIP_MS; BENCH_PROFILE=<dir> for a
// CPU profile of the ClickHouse-backed collector; BENCH_ROUNDS ingest rounds, default 3;
// BENCH_NODE_ARGS node options for every collector). Prints CPU ms per 1000 spans of each process.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startClickHouse } from '../../collector/dist/store/clickhouse/clickhouse-harness.test-util.js';
import { table, writeSection } from '../lib/report.mjs';
import { cpuMsOf, readStat } from '../lib/proc.mjs';

const SPANS = Number(process.env.BENCH_SPANS ?? 200_000);
const BATCH = 500;
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
// How long a ClickHouse-backed collector's spool holds a request for others to join its INSERT.
const SHIP_MS = process.env.BENCH_SHIP_MS;
const QUERY_RUNS = 20;
// The ClickHouse database is grown to SCALE × SPANS spans for a second set of query latencies.
const SCALE = Number(process.env.BENCH_SCALE ?? 10);
const MODELS = ['claude-sonnet', 'nova-pro', 'llama-70b'];
// BENCH_MAIN: another build's collector/dist/main.js (to compare two builds on the same machine state).
const MAIN =
  process.env.BENCH_MAIN ?? fileURLToPath(new URL('../../collector/dist/main.js', import.meta.url));
const T0 = Date.now() - 6 * 3_600_000;
const log = (...a) => console.log(...a);
/**
 * Trace `n`'s id: random-looking as real trace ids are (so a page of traces is spread over the
 * trace-id-ordered tables, as in production), its first hex digit 0 (replicate() sets it to the copy).
 */
const traceHex = (n) => `0${createHash('md5').update(String(n)).digest('hex').slice(1)}`;
const millions = (n) => `${n / 1e6}M spans`;
const hex = (n, bytes) => n.toString(16).padStart(bytes * 2, '0');

/** Request bodies (OTLP/JSON) of BATCH spans: traces of 8 spans, sessions of 4 traces, over 6 h. */
function bodies(count, offset) {
  const out = [];
  for (let b = 0; b < count / BATCH; b++) {
    const spans = [];
    for (let i = 0; i < BATCH; i++) {
      const n = offset + b * BATCH + i;
      const trace = Math.floor(n / 8);
      const startNs = BigInt(T0 + Math.floor((n / SPANS) * 6 * 3_600_000)) * 1_000_000n;
      spans.push({
        traceId: traceHex(trace),
        spanId: hex(n + 1, 8),
        ...(n % 8 ? { parentSpanId: hex(trace * 8 + 1, 8) } : {}),
        name: n % 8 ? `chat ${MODELS[n % 3]}` : 'invoke_agent',
        kind: n % 8 ? 3 : 2,
        startTimeUnixNano: String(startNs),
        endTimeUnixNano: String(startNs + BigInt(1_000_000 + (n % 997) * 1000)),
        attributes: [
          { key: 'session.id', value: { stringValue: `s-${Math.floor(trace / 4)}` } },
          ...(n % 8
            ? [
                { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
                { key: 'gen_ai.request.model', value: { stringValue: MODELS[n % 3] } },
                { key: 'gen_ai.usage.input_tokens', value: { intValue: String(100 + (n % 50)) } },
                { key: 'gen_ai.usage.output_tokens', value: { intValue: String(10 + (n % 20)) } },
              ]
            : []),
        ],
        status: { code: n % 53 === 0 ? 2 : 0 },
      });
    }
    out.push(
      JSON.stringify({
        resourceSpans: [
          {
            resource: { attributes: [{ key: 'service.name', value: { stringValue: 'bench-agent' } }] },
            scopeSpans: [{ scope: { name: 'bench' }, spans }],
          },
        ],
      }),
    );
  }
  return out;
}

/** CPU seconds a process has used so far, from /proc (Linux). */
const cpuSeconds = (pid) => cpuMsOf(pid) / 1000;

/** CPU seconds per thread name of a process (/proc/<pid>/task): where a collector's CPU goes. */
function threadCpu(pid) {
  const out = new Map();
  let tids = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    // the process ended meanwhile
  }
  for (const tid of tids) {
    const stat = readStat(`/proc/${pid}/task/${tid}/stat`);
    if (!stat) continue; // the thread ended meanwhile
    const name = stat.name.replace(/\d+$/, '#');
    out.set(name, (out.get(name) ?? 0) + stat.cpuMs / 1000);
  }
  return out;
}

/** What each thread group used between two threadCpu() readings, in ms per 1000 spans. */
const threadShares = (before, after) =>
  [...after]
    .map(([name, s]) => [name, ((s - (before.get(name) ?? 0)) * 1e6) / SPANS])
    .filter(([, ms]) => ms >= 0.1)
    .sort((a, b) => b[1] - a[1])
    .map(([name, ms]) => `${name} ${ms.toFixed(1)}`)
    .join(', ');

/**
 * While a ClickHouse-backed collector's ingest is measured, ClickHouse and the collectors are kept
 * on cores of their own (taskset; BENCH_PIN=0 turns it off): ClickHouse on the last core, the
 * collectors on the others. A collector's CPU time per span is then its own work, as with ClickHouse
 * on machines of its own; sharing both cores with a busy clickhouse-server it varied by 1.4× from run
 * to run (cache and scheduler contention). Queries run with every process on every core again. The
 * SQLite-backed collector, which has no server beside it, is not pinned.
 */
const CORES = os.cpus().length;
const PIN =
  process.env.BENCH_PIN !== '0' && CORES >= 2 && existsSync('/usr/bin/taskset')
    ? { clickhouse: String(CORES - 1), collectors: CORES > 2 ? `0-${CORES - 2}` : '0', all: `0-${CORES - 1}` }
    : undefined;

/** Sets the cores of every thread of `pid` (threads it starts later inherit them). */
function pin(pid, cores) {
  if (PIN) execFileSync('/usr/bin/taskset', ['-apc', cores, String(pid)], { stdio: 'ignore' });
}

/** Runs `fn` with ClickHouse and `collectors` pinned apart; every core for all of them afterwards. */
async function pinnedApart(chPid, collectors, fn) {
  pin(chPid, PIN?.clickhouse);
  for (const c of collectors) pin(c.child.pid, PIN?.collectors);
  try {
    return await fn();
  } finally {
    pin(chPid, PIN?.all);
    for (const c of collectors) pin(c.child.pid, PIN?.all);
  }
}

/** Node options for every collector process (BENCH_NODE_ARGS, space-separated). */
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);

function startCollector(env, nodeArgs = []) {
  const child = spawn(process.execPath, [...NODE_ARGS, ...nodeArgs, MAIN], {
    env: { ...process.env, AGENTRT_COLLECTOR_PORT: '0', AGENTRT_RETENTION_HOURS: '0', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) resolve({ child, url: JSON.parse(line).url });
    });
    child.once('exit', (code) => reject(new Error(`collector exited ${code}: ${out}`)));
  });
}

async function stop(c) {
  c.child.kill('SIGTERM');
  await new Promise((r) => c.child.once('exit', r));
}

/** Requests refused during the last ingest() (and sent again), by status. */
const refused = new Map();

/** Waits until a collector's spool (ClickHouse store) is empty: every span it took is in ClickHouse. */
async function shipped(url) {
  for (;;) {
    const health = await (await fetch(`${url}/healthz`)).json();
    if (!health.spool?.pendingRecords) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Posts the bodies, CONCURRENCY at a time per collector; spans/s from the first request until every
 * span is stored (on ClickHouse: shipped from the spool, not only acknowledged), and until the last
 * acknowledgement.
 */
async function ingest(urls, list) {
  refused.clear();
  const started = performance.now();
  let next = 0;
  const worker = async (url) => {
    for (;;) {
      const i = next++;
      if (i >= list.length) return;
      for (;;) {
        const res = await fetch(`${url}/v1/traces`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: list[i],
        });
        await res.arrayBuffer();
        if (res.ok) break;
        if (res.status !== 429 && res.status !== 503) throw new Error(`ingest ${res.status}`);
        refused.set(res.status, (refused.get(res.status) ?? 0) + 1);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  await Promise.all(urls.flatMap((u) => Array.from({ length: CONCURRENCY }, () => worker(u))));
  const ackedS = (performance.now() - started) / 1000;
  await Promise.all(urls.map(shipped));
  const storedS = (performance.now() - started) / 1000;
  return { rate: (list.length * BATCH) / storedS, ackedRate: (list.length * BATCH) / ackedS };
}

/** p50/p95 over QUERY_RUNS runs, or as many as fit in 30 s (at least 3) for slow queries. */
async function timed(fn) {
  const ms = [];
  const until = performance.now() + 30_000;
  for (let i = 0; i < QUERY_RUNS && (i < 3 || performance.now() < until); i++) {
    const t = performance.now();
    try {
      await fn(i);
    } catch (error) {
      // A failed run (a 503 past the client's 10 s timeout on a loaded machine) is reported as
      // such in the table, and the other queries still run.
      log(`query failed: ${error.message}`);
      return { failed: `run ${i + 1} failed: ${error.message.replace(/^[^:]*: /, '').slice(0, 80)}` };
    }
    ms.push(performance.now() - t);
  }
  // The first run alone too: nothing the collector or ClickHouse keeps for reuse is there yet.
  const first = ms[0];
  ms.sort((a, b) => a - b);
  return {
    first,
    p50: ms[Math.floor(ms.length * 0.5)],
    p95: ms[Math.min(ms.length - 1, Math.ceil(ms.length * 0.95) - 1)],
  };
}

/** The UI's queries (and the bench's two ad-hoc stats), each run QUERY_RUNS times. */
const CASES = [
  ['session', 'GET /api/sessions/:id'],
  ['trace', 'GET /api/traces/:id'],
  ['byModel', 'stats … pct(durationNano, 95) by model (ad hoc)'],
  ['byHour', 'stats … by bin(1h) (ad hoc)'],
  ['agentsModels', 'Agents page: tokens and calls by service, model'],
  ['agentsSeries', 'Agents page: tokens by bin(6m), model'],
  ['traceList', 'GET /api/traces?limit=200 (Traces page)'],
  ['sessionList', 'GET /api/sessions (Sessions page)'],
  ['services', 'GET /api/services'],
];

/**
 * p50/p95 of each case over what is stored: `copies` copies of the SPANS generated spans (copy k
 * has trace ids starting with hex digit k and session ids ending in `-k`, see replicate()).
 */
async function lookups(url, copies = 1) {
  const get = async (path) => {
    const r = await fetch(url + path);
    if (!r.ok) throw new Error(`${path}: ${r.status}`);
    await r.arrayBuffer();
  };
  const query = async (q, range) => {
    const r = await fetch(`${url}/api/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: q, ...range }),
    });
    if (!r.ok) throw new Error(`${q}: ${r.status} ${await r.text()}`);
    await r.arrayBuffer();
  };
  const traces = SPANS / 8;
  const sessions = Math.floor(traces / 4);
  const copy = (i) => i % copies;
  const traceId = (i) => {
    const id = traceHex((i * 7919) % traces);
    return copy(i) ? `${copy(i)}${id.slice(1)}` : id;
  };
  const sessionId = (i) => `s-${(i * 997) % sessions}${copy(i) ? `-${copy(i)}` : ''}`;
  // The Agents page's window: the last 6 hours as of the newest span, in 60 buckets.
  const range = { startMs: T0 - 60_000, endMs: T0 + 6 * 3_600_000 + 60_000 };
  const chat = 'filter attributes.gen_ai.operation.name = "chat"';
  return {
    session: await timed((i) => get(`/api/sessions/${sessionId(i)}`)),
    trace: await timed((i) => get(`/api/traces/${traceId(i)}`)),
    byModel: await timed(() =>
      query(
        'stats count(*), sum(attributes.gen_ai.usage.input_tokens), pct(durationNano, 95) by attributes.gen_ai.request.model',
      ),
    ),
    byHour: await timed(() => query('stats count(*), avg(durationNano) by bin(1h)')),
    agentsModels: await timed(() =>
      query(
        `${chat} | stats sum(attributes.gen_ai.usage.input_tokens) as input, sum(attributes.gen_ai.usage.output_tokens) as output, count(*) as calls by resource.attributes.service.name as service, attributes.gen_ai.request.model as model`,
        range,
      ),
    ),
    agentsSeries: await timed(() =>
      query(
        `${chat} | stats sum(attributes.gen_ai.usage.input_tokens) as tokens_in, sum(attributes.gen_ai.usage.output_tokens) as tokens_out by bin(366s), attributes.gen_ai.request.model as model`,
        range,
      ),
    ),
    traceList: await timed(() => get('/api/traces?limit=200')),
    sessionList: await timed(() => get('/api/sessions')),
    services: await timed(() => get('/api/services')),
  };
}

/** Drops a ClickHouse database (once measured). */
async function dropDatabase(chUrl, database) {
  const res = await fetch(chUrl, { method: 'POST', body: `DROP DATABASE IF EXISTS ${database}` });
  if (!res.ok) throw new Error(`drop ${database}: ${res.status} ${await res.text()}`);
}

/**
 * Grows a ClickHouse database of SPANS generated spans to `copies` × as many, inside ClickHouse
 * (INSERT … SELECT, so the materialized views fill as on ingest): copy k of a span has its trace id's
 * first hex digit set to k and `-k` appended to its session id, in the columns and in the record.
 * Filling 10M spans through OTLP would take hours on this machine.
 */
async function replicate(chUrl, database, copies) {
  const tid = 'concat(toString(k), substring(trace_id, 2))';
  const sid = "if(session_id = '', '', concat(session_id, '-', toString(k)))";
  const q = (s) => `concat('"', ${s}, '"')`;
  // 18.16's replaceOne wants a constant needle: the ids are spliced in at their positions instead.
  const sp = `position(doc, '"session.id":"') + 14 + length(session_id)`;
  const doc = `if(session_id = '', doc, concat(substring(doc, 1, ${sp} - 1), '-', toString(k), substring(doc, ${sp})))`;
  for (let k = 1; k < copies; k++) {
    const sql = `INSERT INTO ${database}.spans SELECT date, start_ns, end_ns, start_us, end_us, duration_ns,
    ${tid}, span_id, parent_span_id, service, ${sid}, name, kind, status,
    ga_model, ga_operation, ga_provider, ga_input_tokens, ga_output_tokens, hot_odd,
    attr_keys, arrayMap(v -> if(v = ${q('session_id')}, ${q(sid)}, v), attr_values), res_keys, res_values,
    concat(substring(d, 1, p + 10), toString(k), substring(d, p + 12))
    FROM (SELECT *, k, ${doc} AS d, position(d, '"traceId":"') AS p
      FROM ${database}.spans ARRAY JOIN [${k}] AS k WHERE substring(trace_id, 1, 1) = '0')`;
    // One copy per INSERT in blocks of 64k rows: the views' GROUP BY/DISTINCT stay within memory.
    const res = await fetch(
      `${chUrl}/?max_block_size=65536&min_insert_block_size_rows=65536&min_insert_block_size_bytes=67108864`,
      {
        method: 'POST',
        body: sql,
      },
    );
    if (!res.ok) throw new Error(`replicate: ${res.status} ${await res.text()}`);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'agentrt-bench-ch-'));
const ch = await startClickHouse();
const list = bodies(SPANS, 0);
const rows = [];
const results = {};
// BENCH_PROFILE=<dir>: the ClickHouse-backed collector writes a V8 CPU profile there (--cpu-prof).
const PROFILE_ARGS = process.env.BENCH_PROFILE
  ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`]
  : [];
// Ingest is measured ROUNDS times (SQLite, ClickHouse, two collectors, again and again) into fresh
// stores: this machine's speed drifts by tens of percent within minutes, so a ratio is taken between
// runs of the same round, and the table shows their median and range.
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
// BENCH_KEEP=1: ClickHouse (with bench_one, grown) stays up at the end for a look with clickhouse-client.
const KEEP = process.env.BENCH_KEEP === '1';

/**
 * One measured ingest of every body into fresh collector processes: `kind` sqlite, clickhouse (one
 * collector) or two (two collectors on one ClickHouse database). Returns the collectors (still
 * running), spans/s, and CPU ms per 1000 spans of the collectors and of clickhouse-server.
 */
async function measuredIngest(kind, name) {
  const store = `clickhouse://default:@127.0.0.1:${ch.nodes[0].httpPort}/${name}`;
  const envs =
    kind === 'sqlite'
      ? [{ AGENTRT_DATA_DIR: join(dir, name) }]
      : (kind === 'two' ? ['a', 'b'] : ['']).map((x) => ({
          AGENTRT_DATA_DIR: join(dir, name + x),
          AGENTRT_STORE: store,
          ...(SHIP_MS ? { AGENTRT_SPOOL_SHIP_MS: SHIP_MS } : {}),
        }));
  const collectors = [];
  for (const env of envs)
    collectors.push(
      await startCollector(env, kind === 'clickhouse' && name === 'bench_one' ? PROFILE_ARGS : []),
    );
  const chPid = ch.nodes[0].pid();
  const total = () => collectors.reduce((sum, c) => sum + cpuSeconds(c.child.pid), 0);
  const before = [total(), cpuSeconds(chPid)];
  const threadsBefore = collectors.map((c) => threadCpu(c.child.pid));
  const urls = collectors.map((c) => c.url);
  const { rate, ackedRate } =
    kind === 'sqlite'
      ? await ingest(urls, list)
      : await pinnedApart(chPid, collectors, () => ingest(urls, list));
  const cpu = [total() - before[0], cpuSeconds(chPid) - before[1]].map((sec) => (sec * 1e6) / SPANS);
  const byThread = collectors
    .map((c, i) => threadShares(threadsBefore[i], threadCpu(c.child.pid)))
    .join('; ');
  log(
    `${name} (${kind}): ingest ${Math.round(rate)} spans/s stored (${Math.round(ackedRate)} acknowledged); CPU per 1000 spans: collector${collectors.length > 1 ? 's' : ''} ${cpu[0].toFixed(1)} ms (by thread: ${byThread}), clickhouse-server ${kind === 'sqlite' ? '—' : `${cpu[1].toFixed(1)} ms`}; refused and sent again: ${JSON.stringify(Object.fromEntries(refused))}`,
  );
  return { collectors, rate, ackedRate, cpu };
}

/** CPU ms per 1000 spans during ingest, per round: { sqlite, clickhouse, two } of [collectors, clickhouse-server]. */
const rounds = [];
try {
  log(`${SPANS} spans in requests of ${BATCH}; ClickHouse ${ch.url}; ${ROUNDS} ingest round(s)`);
  // BENCH_ONLY=clickhouse skips the SQLite store, the two-collector run and the extra rounds (for
  // quick query work).
  const only = process.env.BENCH_ONLY === 'clickhouse';
  for (let round = 1; round <= (only ? 1 : ROUNDS); round++) {
    const r = {};
    for (const kind of only ? ['clickhouse'] : ['sqlite', 'clickhouse', 'two']) {
      const name =
        { sqlite: 'sqlite', clickhouse: 'bench_one', two: 'bench_two' }[kind] +
        (round > 1 ? `_${round}` : '');
      const m = await measuredIngest(kind, name);
      r[kind] = m.cpu;
      if (round === 1 && kind !== 'two') {
        // The first round's stores answer the lookups.
        const c = m.collectors[0];
        const q = await lookups(c.url);
        log(kind, JSON.stringify(q));
        results[kind] = { rate: m.rate, ackedRate: m.ackedRate, q };
        if (kind === 'clickhouse' && SCALE > 1) {
          // The same database grown to SCALE × SPANS inside ClickHouse, queried through the same collector.
          const t = performance.now();
          await replicate(ch.url, 'bench_one', SCALE);
          log(`replicated to ${SCALE * SPANS} spans in ${((performance.now() - t) / 1000).toFixed(0)} s`);
          results.scaled = { q: await lookups(c.url, SCALE) };
          log('clickhouse scaled', JSON.stringify(results.scaled.q));
        }
      }
      if (round === 1 && kind === 'two') results.two = { rate: m.rate };
      await Promise.all(m.collectors.map(stop));
      // Each store goes once measured and queried: its merges would load the next runs (the first
      // round's grown database stays for BENCH_KEEP).
      if (kind === 'sqlite') rmSync(join(dir, name), { recursive: true, force: true });
      else if (!(KEEP && name === 'bench_one')) await dropDatabase(ch.url, name);
    }
    rounds.push(r);
  }
  const twoRate = results.two?.rate ?? NaN;
  const f = (x) => x.toFixed(1);
  const s = results.sqlite ?? { rate: NaN, q: {} };
  const c = results.clickhouse;
  const big = results.scaled?.q ?? {};
  const pair = (x) => x?.failed ?? (x ? `${f(x.p50)} / ${f(x.p95)} (${f(x.first)})` : '—');
  const ratio = (a, b) => (a && b ? (a / b).toFixed(2) : '—');
  rows.push([
    'ingest, one collector: stored, wall clock (spans/s)',
    Math.round(s.rate),
    Math.round(c.rate),
    ratio(c.rate, s.rate),
    '—',
  ]);
  // Spans per CPU-second of the collector processes: what one collector core ingests when the
  // store's own CPU is elsewhere (ClickHouse on its own machines; SQLite's writes are in-process).
  // Medians over the rounds; the ratio is the median of each round's own ratio, with its range.
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  const perCore = (kind) => median(rounds.map((r) => (r[kind] ? 1e6 / r[kind][0] : NaN)));
  const perCoreRatio = (kind) => {
    const xs = rounds.map((r) => (r[kind] && r.sqlite ? r.sqlite[0] / r[kind][0] : NaN));
    if (xs.some(Number.isNaN)) return '—';
    return xs.length > 1
      ? `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`
      : xs[0].toFixed(2);
  };
  rows.push([
    'ingest per collector core (spans per CPU-second of the collector)',
    Math.round(perCore('sqlite')),
    Math.round(perCore('clickhouse')),
    perCoreRatio('clickhouse'),
    '—',
  ]);
  // CPU per 1000 spans (medians over the rounds) and their ratios to the SQLite-backed collector's.
  const cpuMedian = (kind, i) => median(rounds.map((r) => (r[kind] ? r[kind][i] : NaN)));
  rows.push([
    'CPU ms per 1000 spans: the collector process',
    f(cpuMedian('sqlite', 0)),
    f(cpuMedian('clickhouse', 0)),
    ratio(cpuMedian('clickhouse', 0), cpuMedian('sqlite', 0)),
    '—',
  ]);
  rows.push([
    'CPU ms per 1000 spans: clickhouse-server (goal ≤ 15)',
    '—',
    f(cpuMedian('clickhouse', 1)),
    ratio(cpuMedian('clickhouse', 1), cpuMedian('sqlite', 0)),
    '—',
  ]);
  rows.push([
    'ingest, one collector: acknowledged (spans/s)',
    Math.round(s.ackedRate),
    Math.round(c.ackedRate),
    ratio(c.ackedRate, s.ackedRate),
    '—',
  ]);
  rows.push([
    'ingest per collector core, two collectors',
    '—',
    Math.round(perCore('two')),
    perCoreRatio('two'),
    '—',
  ]);
  rows.push([
    'ingest, two collectors on one ClickHouse (spans/s)',
    '—',
    Math.round(twoRate),
    ratio(twoRate, s.rate),
    '—',
  ]);
  for (const [key, label] of CASES) {
    rows.push([
      `${label} p50 / p95 (first run) (ms)`,
      pair(s.q[key]),
      pair(c.q[key]),
      ratio(c.q[key]?.p50, s.q[key]?.p50),
      pair(big[key]),
    ]);
  }
  const md = `${SPANS.toLocaleString('en')} spans (traces of 8, sessions of 4 traces, 6 hours), OTLP/JSON requests of ${BATCH} spans, ${CONCURRENCY} at a time per collector; each collector is its own \`node collector/dist/main.js\` process and ClickHouse (Debian 18.16.1, default settings) runs on the same 2-core machine${PIN ? ` (while a ClickHouse-backed collector's ingest is measured, clickhouse-server runs on core ${PIN.clickhouse} and the collectors on ${CORES > 2 ? 'cores' : 'core'} ${PIN.collectors}, pinned with taskset; the SQLite-backed collector and all queries use every core)` : ''}. Ingest is measured in ${rounds.length} round${rounds.length > 1 ? 's' : ''} (SQLite, ClickHouse, two collectors; each into fresh stores, dropped once measured and queried)${rounds.length > 1 ? ": the per-core rows show the median over the rounds, and as ratio the median of each round's own ratio with their range in brackets (this machine's speed drifts between runs); the spans/s rows and all queries are from the first round" : ''}. An ingest runs from the first request until every span is stored (on ClickHouse: shipped from the collector's spool and answered by ClickHouse, not only acknowledged) and its CPU is measured over that time; the acknowledged row stops the clock at the last answer. The goals of issue #29: a ClickHouse-backed collector at ≥ 2× SQLite's spans per collector CPU-second, clickhouse-server ≤ 15 ms CPU per 1000 spans, stored spans/s ≥ 1× SQLite's. Query latencies are over ${QUERY_RUNS} runs each (or as many as fit in 30 s, at least 3), through the HTTP API, after ingest; the Agents page's two queries run over its 6-hour window. The last column is the ClickHouse database grown to ${SCALE}× inside ClickHouse after ingest (INSERT … SELECT of the ingested spans with new trace and session ids, so the materialized views fill as on ingest; sending ${millions(SPANS * SCALE)} through OTLP would take hours on this machine); the SQLite store is not grown, its ad-hoc stats already take seconds at ${millions(SPANS)}.

${table(['', `SQLite, ${millions(SPANS)}`, `ClickHouse, ${millions(SPANS)}`, 'ClickHouse / SQLite', `ClickHouse, ${millions(SPANS * SCALE)}`], rows)}

${only ? '' : `CPU ms per 1000 spans during ingest (/proc of each process), by round: ${rounds.map((r, i) => `${i + 1}: SQLite-backed collector ${f(r.sqlite[0])}; ClickHouse-backed collector ${f(r.clickhouse[0])} plus clickhouse-server ${f(r.clickhouse[1])}; two collectors ${f(r.two[0])} plus clickhouse-server ${f(r.two[1])}`).join('. ')}. `}Load average at the end: ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(', ')}.
`;
  log(md);
  if (!only && process.env.BENCH_WRITE !== '0')
    writeSection(
      'collector-clickhouse',
      'Collector: SQLite and ClickHouse stores (bench/collector/clickhouse.mjs)',
      md,
    );
  if (KEEP) {
    // For looking into the data with clickhouse-client: the server stays up until Ctrl-C.
    log(`ClickHouse stays up: clickhouse-client --port ${ch.nodes[0].tcpPort} (database bench_one)`);
    await new Promise((r) => process.once('SIGINT', r));
  }
} finally {
  await ch.stop();
  rmSync(dir, { recursive: true, force: true });
}
