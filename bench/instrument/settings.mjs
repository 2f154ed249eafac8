// The knobs of bench/instrument/index.mjs (its header says what each does), read once, here only.

const env = process.env;

/** The parts to run: BENCH_PARTS=startup,echo,agent (default all three); a subset is printed, not written. */
export const PARTS = new Set((env.BENCH_PARTS ?? 'startup,echo,agent').split(',').map((p) => p.trim()));
export const ALL_PARTS = ['startup', 'echo', 'agent'].every((p) => PARTS.has(p));

export const STARTUP_RUNS = Number(env.BENCH_STARTUP_RUNS ?? 5);
export const THROUGHPUT_SECONDS = Number(env.BENCH_THROUGHPUT_SECONDS ?? 5);
export const THROUGHPUT_ROUNDS = Number(env.BENCH_THROUGHPUT_ROUNDS ?? 3);
/** autocannon connections to the echo agent, and to each reference-agent variant. */
export const CONNECTIONS = 16;
export const AGENT_CONNECTIONS = 4;

export const AGENT_ROUNDS = Number(env.BENCH_AGENT_ROUNDS ?? 5);
export const AGENT_PROFILE = env.BENCH_AGENT_PROFILE !== '0';
/** The profiler's sampling interval (µs): BENCH_AGENT_PROFILE_INTERVAL, default Node's 1000. */
export const PROFILE_INTERVAL_US = Number(env.BENCH_AGENT_PROFILE_INTERVAL ?? 1000);
export const AGENT_INTERLEAVED = env.BENCH_AGENT_INTERLEAVED === '1';
export const AGENT_REQUESTS = Number(env.BENCH_AGENT_REQUESTS ?? 1500);
export const AGENT_BLOCK = Number(env.BENCH_AGENT_BLOCK ?? 100);
/** BENCH_AGENT_EXTRA: one "ours: <name>" variant per entry, our launcher with that environment on top. */
export const AGENT_EXTRA = JSON.parse(env.BENCH_AGENT_EXTRA ?? '{}');
/** BENCH_AGENT_ONLY: the variants kept (bare node always); BENCH_AGENT_PROFILED: those profiled. */
export const AGENT_ONLY = env.BENCH_AGENT_ONLY ? new RegExp(env.BENCH_AGENT_ONLY) : undefined;
export const AGENT_PROFILED = env.BENCH_AGENT_PROFILED ? new RegExp(env.BENCH_AGENT_PROFILED) : undefined;
export const WRITE_ABLATION = env.BENCH_AGENT_WRITE_ABLATION === '1';

/** The BENCH_AGENT_* settings of this run as a shell prefix, for an ablation section's "reproduce with". */
export function agentSettings() {
  return Object.entries(env)
    .filter(([k]) => k.startsWith('BENCH_AGENT_') && k !== 'BENCH_AGENT_WRITE_ABLATION')
    .map(([k, v]) => `${k}='${v}'`)
    .join(' ');
}
