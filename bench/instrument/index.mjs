// bench/instrument: what the launcher adds to start-up time, memory and request throughput, side by
// side with plain @opentelemetry/auto-instrumentations-node/register and the AWS distro (ADOT JS).
// Run after building: `node bench/instrument/index.mjs`. Loopback only; bounded to a few minutes.
// BENCH_PARTS=startup,echo,agent (default: all three) runs a subset and prints it without writing
// docs/benchmarks.md. BENCH_STARTUP_RUNS (start-up, default 5), BENCH_THROUGHPUT_SECONDS,
// BENCH_THROUGHPUT_ROUNDS (echo) and BENCH_AGENT_ROUNDS (reference agent, default 5) set the load.
//
// Attributing the reference agent's overhead (partial runs, printed only):
//   BENCH_AGENT_EXTRA='{"no undici":{"OTEL_TRACES_SAMPLER":"always_off","OTEL_NODE_DISABLED_INSTRUMENTATIONS":"undici"}}'
//     adds one "ours: <name>" variant per entry (our launcher with that environment on top);
//   BENCH_AGENT_ONLY='sampler off|^ours' keeps the variants whose name matches (bare node always);
//   BENCH_AGENT_PROFILE=0 skips the profiled round (BENCH_AGENT_PROFILE_INTERVAL: its sampling µs,
//     default 1000); BENCH_AGENT_PROFILED='otel' profiles the variants whose
//     name matches (bare node always) instead of bare, ours sampler off, ours full and the upstream register;
//   BENCH_AGENT_WRITE_ABLATION=1 records such a run as its own section of docs/benchmarks.md;
//   BENCH_AGENT_INTERLEAVED=1 loads one variant at a time in blocks of BENCH_AGENT_BLOCK (default 100)
//     requests, cycling through the variants until each has had BENCH_AGENT_REQUESTS (default 1500)
//     per round: on this shared machine, whose speed drifts over seconds, it resolves a few percent,
//     where loading them all at once (the default, robust to a busy neighbour) does not.
import { runAgent } from './agent.mjs';
import { runEcho } from './echo.mjs';
import { startSink } from './harness.mjs';
import { writeAblation, writeLauncherReport } from './launcher-report.mjs';
import { ALL_PARTS, PARTS, WRITE_ABLATION } from './settings.mjs';
import { runStartup } from './startup.mjs';
import { ensureAdot, launcherVariants, peersOf, requireBuilt } from './variants.mjs';

// One module per part: startup.mjs, echo.mjs, agent.mjs (+ agent-interleaved.mjs, agent-tables.mjs);
// variants.mjs the launchers, harness.mjs the processes and load, launcher-report.mjs what is written.
const hasAdot = ensureAdot();
requireBuilt();
const sink = await startSink();
const variants = launcherVariants(sink.url, hasAdot);

const startup = PARTS.has('startup') ? await runStartup(variants) : { cached: [], cold: [] };
const echo = PARTS.has('echo') ? await runEcho(peersOf(variants), sink) : [];
const { rows: agent, profiles: agentProfiles } = PARTS.has('agent')
  ? await runAgent(peersOf(variants), sink)
  : { rows: [], profiles: [] };
sink.stop();

if (WRITE_ABLATION && agent.length > 0) writeAblation(agent);
if (!ALL_PARTS) process.exit(0); // a partial run is printed, not recorded
writeLauncherReport({ startup, echo, agent, agentProfiles });
