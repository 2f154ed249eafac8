// What the collector benchmarks share: realistic agent spans from the real OTel SDK in OTLP batches,
// ingest over HTTP from concurrent clients, and the collector as its own process (dist/main.js).
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { SPAN_INSERT_COLUMNS, createRowEncoder } from '../../collector/dist/store/sqlite/span-rows.js';
import { cpuMsOf } from '../lib/proc.mjs';

export const BATCH = 512;
export const CONCURRENCY = 4;
export const MODELS = ['claude-sonnet', 'nova-pro', 'llama-70b'];
const now = () => performance.now();

// Every measured run starts from a collected heap in this process (the load generator and the bare
// loops) and with nothing left for the disk to write: one run's garbage (the bare loop's rows, say)
// and dirty pages (a few hundred MB per run) are not collected and written back during the next.
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc');
export function settle() {
  collect();
  execFileSync('sync');
}

// ---- realistic agent spans through the real SDK --------------------------------------------------
/** `count` batches of BATCH spans of weather-agent turns (11 attributes each), from the real SDK. */
export function makeBatches(count) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': 'bench-agent',
      'deployment.environment.name': 'bench',
      'cloud.platform': 'aws_bedrock_agentcore',
    }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('bench', '1.0.0');
  const batches = [];
  let n = 0;
  while (batches.length < count) {
    const session = `sess-${n % 997}`;
    const root = tracer.startSpan('invoke_agent weather', {
      kind: SpanKind.SERVER,
      attributes: {
        'session.id': session,
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': 'weather',
      },
    });
    const ctx = trace.setSpan(context.active(), root);
    for (let i = 0; i < 7; i++) {
      const model = MODELS[(n + i) % 3];
      const s = tracer.startSpan(
        i % 2 ? 'execute_tool get_weather' : `chat ${model}`,
        {
          kind: SpanKind.CLIENT,
          attributes: {
            'session.id': session,
            'gen_ai.operation.name': i % 2 ? 'execute_tool' : 'chat',
            'gen_ai.request.model': model,
            'gen_ai.usage.input_tokens': 100 + i,
            'gen_ai.usage.output_tokens': 20 + i,
            'gen_ai.response.finish_reasons': ['stop'],
            'server.address': 'bedrock-runtime.us-east-1.amazonaws.com',
            'http.response.status_code': 200,
            'gen_ai.tool.name': 'get_weather',
            'aws.request_id': `req-${n}-${i}`,
          },
        },
        ctx,
      );
      if (i === 3 && n % 10 === 0) s.setStatus({ code: SpanStatusCode.ERROR, message: 'throttled' });
      s.end();
    }
    root.end();
    n++;
    const done = exporter.getFinishedSpans();
    if (done.length >= BATCH) {
      batches.push(done.slice(0, BATCH));
      exporter.reset();
    }
  }
  return batches;
}

/** Sends `bodies` from CONCURRENCY clients at once, each request acknowledged; resolves with spans/s. */
export async function ingest(url, bodies, contentType) {
  let next = 0;
  const t0 = now();
  const worker = async () => {
    while (next < bodies.length) {
      const body = bodies[next++];
      const res = await fetch(`${url}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': contentType },
        body,
      });
      if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return (bodies.length * BATCH) / ((now() - t0) / 1000);
}

export const MAIN = fileURLToPath(new URL('../../collector/dist/main.js', import.meta.url));

/** Starts `node collector/dist/main.js` on a free port; resolves once it logs its URL. */
export function startCollectorProcess(dataDir, nodeArgs = []) {
  const child = spawn(process.execPath, [...nodeArgs, MAIN], {
    env: {
      ...process.env,
      AGENTRT_COLLECTOR_PORT: '0',
      AGENTRT_DATA_DIR: dataDir,
      AGENTRT_RETENTION_HOURS: '0',
      AGENTRT_MAX_DB_MB: '0',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('collector did not start within 60 s'));
    }, 60_000);
    child.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (!line) return;
      clearTimeout(timer);
      child.stdout.removeAllListeners('data');
      child.stdout.resume();
      resolve({
        url: JSON.parse(line).url,
        /** CPU time (user + system, all threads) the collector process has used so far, in ms. */
        cpuMs: () => cpuMsOf(child.pid),
        stop: async () => {
          child.kill('SIGTERM');
          const t = setTimeout(() => child.kill('SIGKILL'), 30_000);
          await exited;
          clearTimeout(t);
        },
      });
    });
    child.once('exit', (code) => reject(new Error(`collector exited with ${code}`)));
  });
}

/**
 * One measured ingest run on a collector process of its own in `dataDir`: `prepare(dataDir)` once it
 * listens, a warm-up of 10 requests (JIT, first pages), then `bodies` from a collected heap and
 * clean disk. Resolves with spans/s, the collector's CPU µs a span (all its threads) and this
 * process's (the load generator's), and what `after(collector)` gives, run on the same collector
 * before it stops.
 */
export async function ingestRun(dataDir, bodies, contentType, { nodeArgs = [], prepare, after } = {}) {
  const c = await startCollectorProcess(dataDir, nodeArgs);
  try {
    await prepare?.(dataDir);
    await ingest(c.url, bodies.slice(0, 10), contentType);
    settle();
    const spans = bodies.length * BATCH;
    const cpu0 = c.cpuMs();
    const client0 = process.cpuUsage();
    const rate = await ingest(c.url, bodies, contentType);
    const cpuUs = ((c.cpuMs() - cpu0) * 1000) / spans;
    const client = process.cpuUsage(client0);
    const measured = { rate, cpuUs, clientCpuUs: (client.user + client.system) / spans };
    return { ...measured, ...(await after?.(c)) };
  } finally {
    await c.stop();
  }
}

/** Exactly the rows the collector writes into its span table (its own encoder), document as text. */
export function storeRows(records) {
  // The store's encoder without a store (no database to create); it tracks no attribute keys,
  // which do not change the rows.
  const encoder = createRowEncoder([], 0);
  const text = new TextDecoder();
  const n = SPAN_INSERT_COLUMNS.length;
  const rows = [];
  for (let at = 0; at < records.length; at += BATCH) {
    const { spans, docs, docEnds } = encoder.encode(records.slice(at, at + BATCH));
    for (let i = 0; i < docEnds.length; i++) {
      const doc = text.decode(docs.subarray(i ? docEnds[i - 1] : 0, docEnds[i]));
      rows.push([...spans.slice(i * n, (i + 1) * n), doc]);
    }
  }
  return rows;
}

/**
 * The floor: pre-built rows inserted with a prepared statement in 512-row transactions (WAL,
 * synchronous = NORMAL), checkpointing in its own commits. `open` gives the connection and its
 * settings, `schema` the span table and indexes. Returns spans/s and this thread's CPU µs a span.
 */
export function bareInsert(dir, rows, { schema, columns, open }) {
  mkdirSync(dir, { recursive: true });
  const db = open(join(dir, 'bare.sqlite'));
  db.exec(schema);
  const stmt = db.prepare(`INSERT INTO spans (${columns}) VALUES (${rows[0].map(() => '?').join(', ')})`);
  settle();
  const cpu0 = process.cpuUsage();
  const t0 = now();
  for (let i = 0; i < rows.length; i += BATCH) {
    db.exec('BEGIN');
    for (let j = i; j < Math.min(rows.length, i + BATCH); j++) stmt.run(...rows[j]);
    db.exec('COMMIT');
  }
  const rate = rows.length / ((now() - t0) / 1000);
  const cpu = process.cpuUsage(cpu0);
  db.close();
  return { rate, cpuUs: (cpu.user + cpu.system) / rows.length };
}
