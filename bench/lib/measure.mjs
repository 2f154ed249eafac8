// Overhead measurement shared by the benchmarks: a path through some layer against its baseline,
// timed call by call in alternation so both see the same machine load, and the table rows saying
// what the layer adds.

/** The p-th percentile (nearest rank) of `values`. */
export function pct(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Milliseconds for a table cell: two decimals below 10 ms. */
export const ms = (v) => `${v.toFixed(v < 10 ? 2 : 0)} ms`;

const cpuUs = (since) => {
  const c = process.cpuUsage(since);
  return c.user + c.system;
};

/**
 * Runs `warmup` untimed pairs, then `n` timed pairs of `via()` and `direct()`, one after the other.
 * Returns each path's times (ms), the p50 overhead (`via` p50 − `direct` p50) and `extraCpuUs`:
 * this process's CPU time per call through `via` minus per call `direct` — when the layer runs in
 * this process (as the benchmarks start the runtime), its own work per call, whatever the machine's
 * load does to the wall times.
 */
export async function measure({ via, direct, n, warmup = 0 }) {
  for (let i = 0; i < warmup; i++) {
    await via();
    await direct();
  }
  const times = { via: [], direct: [] };
  const cpu = { via: 0, direct: 0 };
  for (let i = 0; i < n; i++) {
    let c0 = process.cpuUsage();
    let t0 = performance.now();
    await via();
    times.via.push(performance.now() - t0);
    cpu.via += cpuUs(c0);
    c0 = process.cpuUsage();
    t0 = performance.now();
    await direct();
    times.direct.push(performance.now() - t0);
    cpu.direct += cpuUs(c0);
  }
  return {
    ...times,
    overheadMs: pct(times.via, 50) - pct(times.direct, 50),
    extraCpuUs: (cpu.via - cpu.direct) / n,
  };
}

/**
 * The two rows of a measured pair: `[label, p50, p95, ratio, note]` for the baseline and for the
 * path through the layer. `goalMs`: the note says whether the p50 overhead met it.
 */
export function overheadRows(result, { direct, via, goalMs, note = '' }) {
  const ratio = pct(result.via, 50) / pct(result.direct, 50);
  const goal =
    goalMs === undefined ? '' : ` (goal < ${goalMs} ms: ${result.overheadMs < goalMs ? 'met' : 'missed'})`;
  return [
    [direct, ms(pct(result.direct, 50)), ms(pct(result.direct, 95)), '1.00×', ''],
    [
      via,
      ms(pct(result.via, 50)),
      ms(pct(result.via, 95)),
      `${ratio.toFixed(2)}×`,
      `overhead p50 ${ms(result.overheadMs)}${goal}; CPU +${result.extraCpuUs.toFixed(0)} µs/call${note ? ` ${note}` : ''}`,
    ],
  ];
}
