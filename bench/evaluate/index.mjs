// bench/evaluate: evaluation throughput (sessions/s) against reading the same sessions' spans alone,
// through the same code (`runBatch` of @agentrt/runtime with no evaluator reads each session from
// the collector's API and parses it; the evaluator rows do that and then judge). Rows: the three
// trajectory evaluators (programmatic, zero tokens; goal: < 10% added to the read), the thirteen
// LLM judges with the offline judge, and the trajectory evaluators with their results stored back.
// Run after building: `npx tsc -b && node bench/evaluate/index.mjs` (about two minutes).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCollector, silentLogger } from '../../collector/dist/index.js';
import {
  BUILTIN_EVALUATORS,
  createEvaluationService,
  runBatch,
  sessionItems,
} from '../../packages/runtime/dist/index.js';
import { loadAverage, table, writeSection } from '../lib/report.mjs';

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 600);
const TURNS = 3;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const CONCURRENCY = 4;
const log = (...a) => console.log(...a);

const hex = (n, bytes) => n.toString(16).padStart(bytes * 2, '0');
const str = (key, value) => ({ key, value: { stringValue: value } });

/** One weather session as OTLP/JSON spans: per turn an agent span, 3 tool calls and 2 model calls. */
function sessionSpans(s, t0Ns) {
  const sessionId = `bench-eval-${hex(s, 4)}`;
  const spans = [];
  for (let t = 0; t < TURNS; t++) {
    const traceId = hex(s * 100 + t + 1, 16);
    const start = t0Ns + BigInt((s * TURNS + t) * 1e9);
    const span = (n, name, attrs, parent) => ({
      traceId,
      spanId: hex(s * 10_000 + t * 100 + n, 8),
      ...(parent ? { parentSpanId: parent } : {}),
      name,
      kind: 1,
      startTimeUnixNano: String(start + BigInt(n * 1e6)),
      endTimeUnixNano: String(start + BigInt(n * 1e6 + 5e5)),
      attributes: [str('session.id', sessionId), ...attrs],
      status: { code: 1 },
    });
    const agent = hex(s * 10_000 + t * 100 + 1, 8);
    spans.push(
      span(1, 'invoke_agent weather', [
        str('gen_ai.operation.name', 'invoke_agent'),
        str(
          'gen_ai.input.messages',
          JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: `Weather in city ${s}?` }] }]),
        ),
        str(
          'gen_ai.output.messages',
          JSON.stringify([
            { role: 'assistant', parts: [{ type: 'text', content: `Sunny, ${60 + (s % 30)}°F.` }] },
          ]),
        ),
      ]),
    );
    for (const [i, tool] of ['http_request', 'http_request', 'ready_to_summarize'].entries())
      spans.push(
        span(
          10 + i,
          `execute_tool ${tool}`,
          [
            str('gen_ai.operation.name', 'execute_tool'),
            str('gen_ai.tool.name', tool),
            str('gen_ai.tool.call.arguments', JSON.stringify({ url: `https://api.weather.gov/points/${s}` })),
          ],
          agent,
        ),
      );
    for (const i of [20, 21])
      spans.push(
        span(
          i,
          'chat offline',
          [str('gen_ai.operation.name', 'chat'), str('gen_ai.request.model', 'offline')],
          agent,
        ),
      );
  }
  return { sessionId, spans };
}

async function ingest(url, t0Ns) {
  const ids = [];
  for (let s = 0; s < SESSIONS; s += 50) {
    const batch = [];
    for (let k = s; k < Math.min(SESSIONS, s + 50); k++) {
      const one = sessionSpans(k, t0Ns);
      ids.push(one.sessionId);
      batch.push(...one.spans);
    }
    const body = {
      resourceSpans: [
        {
          resource: { attributes: [str('service.name', 'weather')] },
          scopeSpans: [{ scope: { name: 'bench' }, spans: batch }],
        },
      ],
    };
    const res = await fetch(`${url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`ingest: HTTP ${res.status}`);
  }
  // Ingest is asynchronous: wait until the last session reads back whole.
  for (;;) {
    const res = await fetch(`${url}/api/sessions/${ids.at(-1)}`);
    if (res.ok && (await res.json()).traces.length === TURNS) return ids;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A session's span and log documents as the collector's API returns them (what Evaluate reads). */
async function documents(url, sessionId) {
  const session = await (await fetch(`${url}/api/sessions/${sessionId}`)).json();
  const out = [];
  const walk = (nodes) => nodes.forEach((n) => (out.push(n.span, ...n.logs), walk(n.children)));
  for (const t of session.traces) walk((await (await fetch(`${url}/api/traces/${t.traceId}`)).json()).roots);
  return out;
}

async function timeRun(service, items, evaluatorIds, store) {
  const started = performance.now();
  const cpu = process.cpuUsage();
  const outcomes = await runBatch({
    service,
    items,
    evaluatorIds,
    concurrency: CONCURRENCY,
    runId: `bench-${Date.now()}`,
    store,
  });
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const cpuUs = used.user + used.system;
  const failed = outcomes.filter(
    (o) => o.error || o.results.some((r) => r.errorCode && r.errorCode !== 'NoEvaluationTarget'),
  );
  if (failed.length)
    throw new Error(
      `${failed.length} items failed: ${failed[0].error ?? JSON.stringify(failed[0].results[0])}`,
    );
  return { ms, cpuUs, results: outcomes.reduce((n, o) => n + o.results.length, 0) };
}

const dir = mkdtempSync(join(tmpdir(), 'agentrt-bench-eval-'));
const collector = await createCollector({ dataDir: dir, host: '127.0.0.1', port: 0, logger: silentLogger });
try {
  const t0Ns = BigInt(Date.now() - 3_600_000) * 1_000_000n;
  const ids = await ingest(collector.url, t0Ns);
  const trajectory = BUILTIN_EVALUATORS.filter((e) => e.kind === 'trajectory').map((e) => e.id);
  const judges = BUILTIN_EVALUATORS.filter((e) => e.kind === 'judge').map((e) => e.id);
  const service = createEvaluationService({
    judge: { provider: 'offline', timeoutMs: 60_000 },
    collector: { url: collector.url },
  });
  // Every session has the expected trajectory, so the trajectory evaluators score (not error).
  const items = sessionItems(ids).map((i) => ({
    ...i,
    expectedTrajectory: ['http_request', 'ready_to_summarize'],
  }));
  // The same sessions with their documents inline: parsing and judging without the read, so the
  // difference of these two rows is what the evaluators themselves cost.
  const inline = [];
  for (const item of items)
    inline.push({ ...item, sessionId: undefined, spans: await documents(collector.url, item.sessionId) });
  const variants = [
    { name: 'read the spans alone (baseline)', evaluators: [], store: false },
    { name: 'spans given inline: parse only', evaluators: [], store: false, items: inline },
    {
      name: 'spans given inline: parse + 3 trajectory evaluators',
      evaluators: trajectory,
      store: false,
      items: inline,
    },
    { name: 'read + 3 trajectory evaluators', evaluators: trajectory, store: false },
    { name: 'read + 3 trajectory evaluators + store results', evaluators: trajectory, store: true },
    { name: 'read + 13 LLM judges, offline judge', evaluators: judges, store: false },
  ];
  const best = new Map();
  // Warm-up: every session read and matched once, so no row's first round pays for a cold JIT.
  await timeRun(service, items, trajectory, false);
  // Stored results become part of their sessions (they carry session.id), so every later read of
  // them is heavier: the storing row runs after all the others' rounds, not among them (before,
  // rows read sessions of different sizes and the baseline, read later, came out the slowest).
  const rotating = variants.filter((v) => !v.store);
  const schedule = [];
  for (let round = 0; round < ROUNDS; round++)
    // Each round starts with another variant, so no row always runs first (or after the heaviest).
    schedule.push(
      ...[...rotating.slice(round % rotating.length), ...rotating.slice(0, round % rotating.length)].map(
        (v) => [round, v],
      ),
    );
  for (let round = 0; round < ROUNDS; round++)
    schedule.push(...variants.filter((v) => v.store).map((v) => [round, v]));
  for (const [round, v] of schedule) {
    const r = await timeRun(service, v.items ?? items, v.evaluators, v.store);
    log(`round ${round + 1}: ${v.name}: ${(SESSIONS / (r.ms / 1000)).toFixed(0)} sessions/s`);
    const was = best.get(v.name);
    best.set(
      v.name,
      was ? { ms: Math.min(was.ms, r.ms), cpuUs: Math.min(was.cpuUs, r.cpuUs), results: r.results } : r,
    );
  }
  const base = best.get(variants[0].name);
  const rows = variants.map((v) => {
    const r = best.get(v.name);
    return [
      v.name,
      (SESSIONS / (r.ms / 1000)).toFixed(0),
      r.results,
      `${(r.ms / base.ms).toFixed(2)}×`,
      (r.cpuUs / SESSIONS).toFixed(0),
      `${(r.cpuUs / base.cpuUs).toFixed(2)}×`,
    ];
  });
  const judged = best.get(variants[2].name);
  const parsed = best.get(variants[1].name);
  const added = (judged.cpuUs - parsed.cpuUs) / base.cpuUs;
  const traj = best.get(variants[3].name);
  const endToEnd = traj.cpuUs / base.cpuUs - 1;
  const markdown = `${SESSIONS} weather sessions of ${TURNS} turns (${TURNS * 6} spans each: an agent span, 3 tool calls, 2 model calls per turn) in a collector in this process (SQLite); each row runs \`runBatch\` of @agentrt/runtime over all of them, ${CONCURRENCY} sessions at once, reading each session through the collector's API (\`/api/sessions/:id\`, then \`/api/traces/:id\` per trace) and parsing it, then scoring it with the evaluators named. Best of ${ROUNDS} rounds, each starting with another row, after a warm-up pass; the row that stores results runs its rounds last (stored results join their sessions and make later reads heavier); load average ${loadAverage()}.

${table(['run', 'sessions/s', 'results', 'time vs the read alone', 'CPU µs per session', 'CPU vs the read alone'], rows)}

The trajectory evaluators themselves (the inline rows' difference: matching, after the spans are parsed) add **${(added * 100).toFixed(1)}%** of the read's CPU (goal: < 10%); end to end, read + trajectory against the read alone, ${(endToEnd * 100).toFixed(1)}% (the reads' noise on a shared machine is of that order; a negative figure is possible). The CPU is this process's (user + system; the collector serving the reads runs in it too), the lowest of the rounds. Storing results posts one OTLP request per session to the collector, which then ingests them: that is the cost of the "store results" row. The offline judge renders each judge's prompt from the spans and hashes it (no model); with a real judge the model call dominates.`;
  const file = writeSection(
    'evaluate',
    'Evaluations: throughput against reading the spans (bench/evaluate)',
    markdown,
  );
  log(markdown);
  log(`written to ${file}`);
} finally {
  await collector.close();
  rmSync(dir, { recursive: true, force: true });
}
