// BENCH_AGENT_INTERLEAVED=1: bench/instrument's reference agent loaded one variant at a time, in
// short blocks that cycle through the variants. On this shared machine, whose speed drifts over
// seconds, it resolves a few percent, where loading them all at once (agent.mjs, robust to a busy
// neighbour) does not.
import { logRound } from './agent-tables.mjs';
import { autocannon, cpuMs, invocationLoad, median, startServer } from './harness.mjs';
import { AGENT_BLOCK, AGENT_CONNECTIONS, AGENT_REQUESTS } from './settings.mjs';

/**
 * One round: every variant's server up and warmed, then cycles of a block of AGENT_BLOCK requests to
 * each in turn (the order rotating with the cycle) until each has had AGENT_REQUESTS; CPU per request
 * is each server's whole CPU over the round (its exports included, whenever they ran) over its
 * requests. Blocks of a fraction of a second let every variant share each fast and slow moment alike.
 */
export async function interleavedRound(workload, round, sink) {
  const servers = [];
  try {
    for (const v of workload.variants) {
      const server = await startServer(workload, v);
      servers.push({ v, ...server, opts: invocationLoad(workload, server.port, AGENT_CONNECTIONS) });
    }
    await sink.stats(); // counts from here on
    const warm = [];
    for (const s of servers) warm.push(await autocannon({ ...s.opts, amount: 200 }));
    const cpu0 = servers.map((s) => cpuMs(s.child.pid));
    const runs = await loadInBlocks(servers, round);
    const cpu1 = servers.map((s) => cpuMs(s.child.pid));
    // what the batch processors still hold goes out within their 5 s delay
    await new Promise((resolve) => setTimeout(resolve, 6000));
    const exported = await sink.stats();
    const out = servers.map((s, i) => ({
      name: s.v.name,
      rps: NaN, // one variant at a time: no common load to compare
      cpuUsPerReq: ((cpu1[i] - cpu0[i]) * 1000) / Math.max(1, runs[i].requests),
      otlpBytesPerReq:
        (exported.byPrefix[s.v.prefix]?.bytes ?? 0) / Math.max(1, runs[i].requests + warm[i].requests.total),
      p50: median(runs[i].p50),
      p99: median(runs[i].p99),
      errors: runs[i].errors,
    }));
    logRound(`agent round ${round} (interleaved)`, out);
    return { rows: out };
  } finally {
    for (const s of servers) s.child.kill('SIGKILL');
  }
}

/** The cycles of blocks; per server its requests, errors and each block's p50 and p99. */
async function loadInBlocks(servers, round) {
  const runs = servers.map(() => ({ requests: 0, errors: 0, p50: [], p99: [] }));
  const n = servers.length;
  for (let cycle = 0; cycle * AGENT_BLOCK < AGENT_REQUESTS; cycle++) {
    for (let k = 0; k < n; k++) {
      const i = (k + cycle + round) % n;
      const r = await autocannon({ ...servers[i].opts, amount: AGENT_BLOCK });
      runs[i].requests += r.requests.total;
      runs[i].errors += r.errors + r.non2xx;
      runs[i].p50.push(r.latency.p50);
      runs[i].p99.push(r.latency.p99);
    }
  }
  return runs;
}
