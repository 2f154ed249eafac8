// bench/collector: OTLP ingest rate (JSON and protobuf, batches of 512 spans, over HTTP) against
// the physical baselines measured in the same run — plain JSON.parse of the same bodies and bare
// node:sqlite insert loops of the same rows — and query latency over 1M stored spans.
// Run after building: `npx tsc -b collector && node bench/collector/index.mjs` (about 2–3 minutes).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import {
  createCollector,
  createSpanStore,
  decodeTraceRequest,
  runQuery,
  silentLogger,
} from '../../collector/dist/index.js';
import { createQueryPool } from '../../collector/dist/store/reader-pool.js';
import { GENAI_INDEX, SCHEMA as STORE_SCHEMA } from '../../collector/dist/store/sqlite/schema.js';
import { SPAN_INSERT_COLUMNS } from '../../collector/dist/store/sqlite/span-rows.js';
import { openDatabase } from '../../collector/dist/store/sqlite/span-writer.js';
import { table, writeSection } from '../lib/report.mjs';
import { BATCH, CONCURRENCY, MODELS, bareInsert, ingestRun, makeBatches, storeRows } from './ingest-kit.mjs';

const INGEST_BATCHES = Number(process.env.BENCH_BATCHES ?? 200);
const STORED_SPANS = Number(process.env.BENCH_STORED_SPANS ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
// Profiling aids: extra node flags for the collector process (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`)
// and BENCH_INGEST_ONLY=1 to stop after the ingest rounds (no table is written then).
const COLLECTOR_NODE_ARGS = (process.env.BENCH_COLLECTOR_NODE_ARGS ?? '').split(' ').filter(Boolean);
const INGEST_ONLY = process.env.BENCH_INGEST_ONLY === '1';
const log = (...a) => console.log(...a);
const now = () => performance.now();

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
  return { p50: at(50), p95: at(95) };
}

const SCHEMA_1 = `CREATE TABLE spans (id INTEGER PRIMARY KEY, trace_id TEXT NOT NULL, span_id TEXT NOT NULL,
  parent_span_id TEXT, start_us INTEGER NOT NULL, end_us INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
  service TEXT, session_id TEXT, name TEXT NOT NULL, status TEXT NOT NULL, kind TEXT NOT NULL, doc TEXT NOT NULL);
  CREATE UNIQUE INDEX spans_trace ON spans(trace_id, span_id);
  CREATE INDEX spans_session ON spans(session_id, start_us) WHERE session_id IS NOT NULL;
  CREATE INDEX spans_start ON spans(start_us);`;
const SCHEMA_1_COLUMNS = `trace_id, span_id, parent_span_id, start_us, end_us, duration_ns, service, session_id,
  name, status, kind, doc`;

/** Rows of the schema-1 span table (the baseline the ingest goal was first measured against). */
function schema1Rows(records) {
  return records.map((s) => [
    s.traceId,
    s.spanId,
    s.parentSpanId ?? null,
    Math.floor(s.startTimeUnixNano / 1000),
    Math.floor((s.startTimeUnixNano + s.durationNano) / 1000),
    s.durationNano,
    'bench-agent',
    String(s.attributes['session.id']),
    s.name,
    s.status.code,
    s.kind,
    JSON.stringify(s),
  ]);
}

/** SQLite's defaults, as a bare loop has them. */
function openDefault(path) {
  const db = new DatabaseSync(path);
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;');
  return db;
}

// ---- 1M stored spans, generated straight into the store ------------------------------------------
function synthSpans(dir, total) {
  const store = createSpanStore({ dataDir: dir, traceIndexPercent: 1 });
  const base = Date.now() * 1e6 - total * 1e6;
  const resource = { attributes: { 'service.name': 'bench-agent', 'deployment.environment.name': 'bench' } };
  const scope = { name: 'bench', version: '1.0.0' };
  const t0 = now();
  let batch = [];
  for (let i = 0; i < total; i++) {
    const trace = Math.floor(i / 10);
    const session = `sess-${Math.floor(trace / 5)}`;
    const root = i % 10 === 0;
    const model = MODELS[i % 3];
    const start = base + i * 1e6;
    const duration = 1e6 * (1 + (i % 1000));
    batch.push({
      resource,
      scope,
      traceId: trace.toString(16).padStart(32, '0'),
      spanId: (i + 1).toString(16).padStart(16, '0'),
      ...(root ? {} : { parentSpanId: (trace * 10 + 1).toString(16).padStart(16, '0') }),
      name: root ? 'invoke_agent weather' : `chat ${model}`,
      kind: root ? 'SERVER' : 'CLIENT',
      startTimeUnixNano: start,
      endTimeUnixNano: start + duration,
      durationNano: duration,
      attributes: root
        ? { 'session.id': session, 'gen_ai.operation.name': 'invoke_agent' }
        : {
            'session.id': session,
            'gen_ai.operation.name': 'chat',
            'gen_ai.request.model': model,
            'gen_ai.usage.input_tokens': 100 + (i % 50),
            'gen_ai.usage.output_tokens': 20 + (i % 7),
          },
      status: { code: i % 97 === 0 ? 'ERROR' : 'UNSET' },
      events: [],
      links: [],
    });
    if (batch.length === 5000) {
      store.insertBatch(batch);
      batch = [];
    }
  }
  store.insertBatch(batch);
  store.close();
  return (now() - t0) / 1000;
}

async function timeQueries(url, make, runs) {
  const samples = [];
  let scanned = 0;
  for (let i = 0; i < runs; i++) {
    const t0 = now();
    const res = await fetch(`${url}/api/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: make(i) }),
    });
    const body = await res.json();
    if (res.status !== 200) throw new Error(`query failed: ${JSON.stringify(body)}`);
    samples.push(now() - t0);
    scanned = body.scanned;
  }
  return { ...stats(samples), scanned };
}

const dir = mkdtempSync(join(tmpdir(), 'agentrt-bench-collector-'));
try {
  log(`building ${INGEST_BATCHES} batches of ${BATCH} spans…`);
  // Only the request bodies stay in memory between the measured runs.
  let batches = makeBatches(INGEST_BATCHES);
  const jsonBodies = batches.map((b) => Buffer.from(JsonTraceSerializer.serializeRequest(b)));
  const protoBodies = batches.map((b) => Buffer.from(ProtobufTraceSerializer.serializeRequest(b)));
  batches = undefined;
  const spansTotal = INGEST_BATCHES * BATCH;

  let t0 = now();
  for (const b of jsonBodies) JSON.parse(b.toString('utf8'));
  const jsonParseRate = spansTotal / ((now() - t0) / 1000);
  t0 = now();
  for (const b of protoBodies) decodeTraceRequest(b);
  const protoDecodeRate = spansTotal / ((now() - t0) / 1000);

  log(`JSON.parse ${Math.round(jsonParseRate)}, protobuf decoder ${Math.round(protoDecodeRate)} spans/s`);
  // The bare loops' rows are built for each run from the protobuf bodies and dropped after it: held
  // through the ingest runs, a few hundred MB of them made every collection in this process (the
  // load generator) slow, and its CPU is taken from the collector's two cores.
  const records = () => protoBodies.flatMap((b) => decodeTraceRequest(b).spans);
  const bares = {
    // The span table of schema 1 (the first baseline of the goal), SQLite's default settings.
    schema1: {
      rows: () => schema1Rows(records()),
      schema: SCHEMA_1,
      columns: SCHEMA_1_COLUMNS,
      open: openDefault,
    },
    // The goal's baseline: the rows the collector writes, into its own span table (GenAI columns and
    // index), SQLite's default settings.
    store: {
      rows: () => storeRows(records()),
      schema: STORE_SCHEMA + GENAI_INDEX,
      columns: [...SPAN_INSERT_COLUMNS, 'doc'].join(', '),
      open: openDefault,
    },
  };
  // The same, with the collector's SQLite settings (8 KiB pages, checkpoints every 40 MiB of WAL).
  bares.tuned = { ...bares.store, open: (path) => openDatabase(path) };
  // The machine is shared: measurements alternate (bare loops, JSON, protobuf) for ROUNDS rounds and
  // the best of each is kept, so a burst of someone else's load does not land on one side only.
  const ingestRates = { json: 0, protobuf: 0 };
  // Rates on a shared machine swing with other people's load; the collector's own CPU time per
  // span (from /proc, all its threads) is the steadier measure of its work.
  const cpuPerSpan = { json: Infinity, protobuf: Infinity };
  // The load generator's CPU per span (this process), taken from the same two cores.
  const clientCpuPerSpan = { json: Infinity, protobuf: Infinity };
  const bareRates = { schema1: 0, store: 0, tuned: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, bare] of Object.entries(bares)) {
      const { rate } = bareInsert(join(dir, `bare-${name}-${round}`), bare.rows(), bare);
      bareRates[name] = Math.max(bareRates[name], rate);
    }
    for (const [kind, bodies, type] of [
      ['json', jsonBodies, 'application/json'],
      ['protobuf', protoBodies, 'application/x-protobuf'],
    ]) {
      // The collector runs as its own process (dist/main.js), as it does for users; the load
      // generator (this process) never shares its event loop.
      const r = await ingestRun(join(dir, `ingest-${kind}-${round}`), bodies, type, {
        nodeArgs: COLLECTOR_NODE_ARGS,
      });
      ingestRates[kind] = Math.max(ingestRates[kind], r.rate);
      cpuPerSpan[kind] = Math.min(cpuPerSpan[kind], r.cpuUs);
      clientCpuPerSpan[kind] = Math.min(clientCpuPerSpan[kind], r.clientCpuUs);
    }
    log(
      `round ${round + 1}: bare ${Math.round(bareRates.schema1)} (store rows ${Math.round(bareRates.store)}, tuned ${Math.round(bareRates.tuned)}), json ${Math.round(ingestRates.json)}, protobuf ${Math.round(ingestRates.protobuf)} spans/s; CPU per span json ${cpuPerSpan.json.toFixed(1)} µs, protobuf ${cpuPerSpan.protobuf.toFixed(1)} µs (best so far)`,
    );
  }

  // The 1M-span store is kept in bench/.work (git-ignored) and reused by later runs.
  const rates = { ingestRates, cpuPerSpan, clientCpuPerSpan, bareRates, jsonParseRate, protoDecodeRate };
  if (!INGEST_ONLY) await measureQueriesAndReport(rates);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

async function measureQueriesAndReport(rates) {
  const { ingestRates, cpuPerSpan, clientCpuPerSpan, bareRates, jsonParseRate, protoDecodeRate } = rates;
  // Named after the schema version and page size the store is generated with.
  const bigDir = fileURLToPath(new URL(`../.work/collector-${STORED_SPANS}-v4-8k/`, import.meta.url));
  let genSeconds;
  if (existsSync(join(bigDir, 'done'))) {
    log(`reusing ${STORED_SPANS} stored spans in ${bigDir}`);
  } else {
    rmSync(bigDir, { recursive: true, force: true });
    log(`generating ${STORED_SPANS} stored spans into ${bigDir}…`);
    genSeconds = synthSpans(bigDir, STORED_SPANS);
    writeFileSync(join(bigDir, 'done'), String(genSeconds));
    log(`generated in ${genSeconds.toFixed(1)} s`);
  }
  genSeconds ??= Number(readFileSync(join(bigDir, 'done'), 'utf8'));
  const big = await createCollector({
    dataDir: bigDir,
    port: 0,
    retentionHours: 0,
    maxDbMb: 0,
    summaryRefreshIntervalMs: 0,
  });
  const sessions = STORED_SPANS / 50;
  const bySession = await timeQueries(
    big.url,
    (i) => `filter attributes.session.id = "sess-${(i * 7919) % sessions}" | sort @timestamp asc`,
    60,
  );
  const byModel = await timeQueries(
    big.url,
    () =>
      'filter ispresent(attributes.gen_ai.request.model) | stats count(*), sum(attributes.gen_ai.usage.input_tokens), pct(durationNano, 95) by attributes.gen_ai.request.model',
    5,
  );
  const byModelAll = await timeQueries(
    big.url,
    () =>
      'stats count(*), sum(attributes.gen_ai.usage.input_tokens), pct(durationNano, 95) by attributes.gen_ai.request.model',
    5,
  );
  const byHour = await timeQueries(big.url, () => 'stats count(*), avg(durationNano) by bin(1h)', 5);
  const slowSpans = await timeQueries(big.url, () => 'filter durationNano > 990000000 | limit 100', 20);
  await big.close();
  // The query threads' own cost: the same session query run in this thread (runQuery on a
  // connection of its own) and through a query pool (hand-off to a thread, JSON bytes back).
  const sessionQuery = (i) =>
    `filter attributes.session.id = "sess-${(i * 7919) % sessions}" | sort @timestamp asc`;
  const direct = new DatabaseSync(join(bigDir, 'collector.sqlite'), { readOnly: true });
  const pool = await createQueryPool({
    path: join(bigDir, 'collector.sqlite'),
    logger: silentLogger,
    size: 1,
  });
  const inThread = [];
  const viaPool = [];
  for (let i = 0; i < 200; i++) {
    let t = now();
    JSON.stringify(runQuery(direct, sessionQuery(i)));
    inThread.push(now() - t);
    t = now();
    await pool.run(sessionQuery(i));
    viaPool.push(now() - t);
  }
  await pool.close();
  direct.close();
  const workerDirect = stats(inThread.slice(20));
  const workerPool = stats(viaPool.slice(20));
  const load = loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ');

  const fmt = (n) => Math.round(n).toLocaleString('en-US');
  const ms = (n) => `${n.toFixed(1)} ms`;
  const ratio = (n, base) => `${(n / base).toFixed(2)}×`;
  const md = [
    `Figures are from one run on a shared 2-core machine; compare the ratios. Ingest: ${INGEST_BATCHES} OTLP/HTTP`,
    `requests of ${BATCH} spans (11 attributes each, from the real OTel SDK and serializers), ${CONCURRENCY} concurrent`,
    'clients in this process against the collector in its own process (`collector/dist/main.js`: HTTP and decoding',
    'on its main thread, commits on its writer thread), each request acknowledged only after its spans are',
    'committed to SQLite (WAL, `synchronous = NORMAL`). Baselines in the same run: `JSON.parse` of the same JSON',
    'bodies, and bare `node:sqlite` insert loops of the same spans (pre-built rows, JSON already stringified,',
    'prepared statement, 512-row transactions, each loop checkpointing in its own commits):',
    '',
    '- **store rows**: exactly the rows the collector writes (its own encoder) into its own span table (the',
    "  GenAI columns and their covering index) with SQLite's default settings (4 KiB pages, a checkpoint every",
    '  1000 pages). The ingest goal (at least half the bare insert rate, issue #4) is measured against this loop:',
    '  "a bare insert loop of the same rows" is this one since the store\'s rows gained six columns and an index.',
    '- **schema-1 rows**: the span table and indexes of schema 1 (the loop the goal was first measured against),',
    '  same default settings; it writes less than the collector must, so the ratio to it is the stricter one.',
    "- **store rows, tuned**: the store rows with the collector's SQLite settings (8 KiB pages for a new store, a",
    '  checkpoint every 40 MiB of WAL; the collector runs its checkpoints on another thread). The ratio to it is',
    '  what the collector adds to the bare writes: HTTP, decoding, encoding, the hand-over between threads,',
    '  summaries and key lists — and the load generator (this process) sharing the two cores, whose CPU per span',
    '  is shown too.',
    '',
    'The OTel Collector sustains about 10–12k spans/s per core (its own published figure). Each rate is the best',
    `of ${ROUNDS} alternating rounds; every measured run starts from a collected heap in this process and with no`,
    "dirty pages of an earlier run left to write (`sync`). The CPU columns are the collector process's own CPU time",
    "(all threads, from /proc) and this process's, per span, the lowest of the rounds.",
    '',
    table(
      [
        'measure',
        'spans/s',
        'vs bare, store rows (goal)',
        'vs bare, schema-1 rows',
        'vs bare, store rows, tuned',
        'collector CPU per span',
        'load generator CPU per span',
      ],
      [
        ...['json', 'protobuf'].map((kind) => [
          `collector ingest, OTLP/${kind === 'json' ? 'JSON' : 'protobuf'} over HTTP`,
          fmt(ingestRates[kind]),
          ratio(ingestRates[kind], bareRates.store),
          ratio(ingestRates[kind], bareRates.schema1),
          ratio(ingestRates[kind], bareRates.tuned),
          `${cpuPerSpan[kind].toFixed(1)} µs`,
          `${clientCpuPerSpan[kind].toFixed(1)} µs`,
        ]),
        ...[
          ['baseline: bare node:sqlite insert loop, schema-1 rows', bareRates.schema1],
          ['baseline: bare node:sqlite insert loop, store rows', bareRates.store],
          ['baseline: bare node:sqlite insert loop, store rows, tuned', bareRates.tuned],
          ['baseline: JSON.parse of the same bodies', jsonParseRate],
          ['our protobuf decoder alone', protoDecodeRate],
        ].map(([name, rate]) => [
          name,
          fmt(rate),
          ratio(rate, bareRates.store),
          ratio(rate, bareRates.schema1),
          ratio(rate, bareRates.tuned),
          '',
          '',
        ]),
      ],
    ),
    '',
    `Query latency over ${fmt(STORED_SPANS)} stored spans (${fmt(sessions)} sessions of 50 spans; generated in`,
    `${genSeconds.toFixed(0)} s through the store API, ${fmt(STORED_SPANS / genSeconds)} spans/s), through \`POST /api/query\` including HTTP and JSON.`,
    'The `stats` rows run as SQL aggregates over the GenAI columns (model, tokens) without reading records;',
    "`pct()` by model is `percentile_disc()` over each model's range of the covering GenAI index (ordered by time",
    'within a model) when the query keeps to spans with a model.',
    `Load average (1/5/15 min) at the end of the run: ${load}.`,
    '',
    table(
      ['query', 'p50', 'p95', 'rows scanned'],
      [
        [
          '`filter attributes.session.id = "…" \\| sort @timestamp asc` (60 runs)',
          ms(bySession.p50),
          ms(bySession.p95),
          fmt(bySession.scanned),
        ],
        [
          '`stats count(*), sum(tokens), pct(durationNano, 95) by model` (5 runs)',
          ms(byModel.p50),
          ms(byModel.p95),
          fmt(byModel.scanned),
        ],
        [
          'the same without the `ispresent` filter (a group of spans without a model: full scan) (5 runs)',
          ms(byModelAll.p50),
          ms(byModelAll.p95),
          fmt(byModelAll.scanned),
        ],
        [
          '`stats count(*), avg(durationNano) by bin(1h)` (5 runs)',
          ms(byHour.p50),
          ms(byHour.p95),
          fmt(byHour.scanned),
        ],
        [
          'the session query in this thread (`runQuery` + `JSON.stringify`, no HTTP) (180 runs)',
          ms(workerDirect.p50),
          ms(workerDirect.p95),
          fmt(bySession.scanned),
        ],
        [
          `the same through a query thread (\`createQueryPool\`): overhead per query ${ms(workerPool.p50 - workerDirect.p50)} at p50 (180 runs)`,
          ms(workerPool.p50),
          ms(workerPool.p95),
          fmt(bySession.scanned),
        ],
        [
          '`filter durationNano > 990000000 \\| limit 100` (20 runs)',
          ms(slowSpans.p50),
          ms(slowSpans.p95),
          fmt(slowSpans.scanned),
        ],
      ],
    ),
  ].join('\n');
  const file = writeSection('collector', 'Collector: OTLP ingest and transaction search', md);
  log(md);
  log(`\nwritten to ${file}`);
  const half = (base) => ingestRates.json >= base / 2 && ingestRates.protobuf >= base / 2;
  const goals = [
    [half(bareRates.store), 'ingest >= half the bare insert rate of the same rows (store rows)'],
    [half(bareRates.schema1), 'ingest >= half the bare insert rate of schema-1 rows (the stricter baseline)'],
    [Math.min(ingestRates.json, ingestRates.protobuf) > 12_000, 'ingest > 12k spans/s'],
    [bySession.p50 < 50, 'session filter p50 < 50 ms'],
  ];
  for (const [ok, goal] of goals) log(`${ok ? 'met' : 'MISSED'}: ${goal}`);
}
