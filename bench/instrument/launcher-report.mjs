// What bench/instrument/index.mjs records: the "Instrumentation launcher" section of
// docs/benchmarks.md, bench/instrument/agent-profile.md, and an ablation run's own section.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAverage, writeSection } from '../lib/report.mjs';
import { agentLine, agentTable, breakdownTable, topAddedFunctions } from './agent-tables.mjs';
import { echoExplanation, echoLine, throughputTable } from './echo.mjs';
import { here } from './harness.mjs';
import {
  AGENT_BLOCK,
  AGENT_CONNECTIONS,
  AGENT_INTERLEAVED,
  AGENT_REQUESTS,
  AGENT_ROUNDS,
  agentSettings,
  CONNECTIONS,
  STARTUP_RUNS,
  THROUGHPUT_ROUNDS,
  THROUGHPUT_SECONDS,
} from './settings.mjs';
import { startupLine, startupTable } from './startup.mjs';

/** An attribution run (BENCH_AGENT_EXTRA …) recorded as its own section, with what reproduces it. */
export function writeAblation(agent) {
  const file = writeSection(
    'instrument-ablation',
    'Reference agent: what each part of the launcher costs (bench/instrument, ablation)',
    `Our launcher with parts of it turned off by its own settings, beside bare node, on the reference
agent (examples/sdk-agent, offline model)${AGENT_INTERLEAVED ? `, loaded one variant at a time in blocks of ${AGENT_BLOCK} requests, cycling through the variants until each had ${AGENT_REQUESTS} per round` : ''}; overhead is the median over
${AGENT_ROUNDS} rounds of each variant's CPU per request over bare node's in the same round (load average ${loadAverage()}). Reproduce with
\`${agentSettings()} BENCH_PARTS=agent node bench/instrument/index.mjs\`.

${agentTable(agent)}
`,
  );
  console.log(`wrote ${file}`);
}

/** bench/instrument/agent-profile.md: the profiled round by part and by function. */
function writeAgentProfile(agent, agentProfiles, load) {
  writeFileSync(
    join(here, 'agent-profile.md'),
    `# Reference agent: where the instrumented CPU goes

Written by \`node bench/instrument/index.mjs\` (${new Date().toISOString().slice(0, 10)}, load average ${load}).
From \`--cpu-prof\` profiles of bare node, our two variants and the upstream register, loaded together with ADOT; only
samples inside the measured window count, each scaled to the variant's median CPU per request.
The profiles (flame graphs in Chrome DevTools or speedscope) are in bench/.work/instrument-profiles/.

## By part

${breakdownTable(agent, agentProfiles)}

## The functions that grew most against bare node

${topAddedFunctions(agent, agentProfiles)}
`,
  );
}

/** The launcher section of docs/benchmarks.md (and agent-profile.md when profiled), from a full run. */
export function writeLauncherReport({ startup, echo, agent, agentProfiles }) {
  const load = loadAverage();
  const lines = [startupLine(startup), agentLine(agent), echoLine(echo), echoExplanation(echo)];
  // BENCH_AGENT_PROFILE=0 runs have no profiles: agent-profile.md keeps the last profiled run's.
  if (agent.length > 0 && agentProfiles.length > 0) writeAgentProfile(agent, agentProfiles, load);
  const markdown = `
${methodText(load)}
${lines.join('\n')}
How many calls into the OpenTelemetry SDK a reference-agent request makes, and what they add up to,
is in the section written by bench/instrument/op-count.mjs (calls counted exactly, each timed warm):
a bound on the telemetry work itself that a loaded machine does not blur.

${tablesText({ startup, echo, agent, agentProfiles })}
`;
  console.log(
    `\n${lines.join('\n')}\n` +
      `wrote ${writeSection('instrument', 'Instrumentation launcher (bench/instrument)', markdown)}`,
  );
}

/** How the figures were taken, and the goals they are held to. */
function methodText(load) {
  return `Figures are from one run on a shared 2-core machine (load average ${load} at the end of the
run): compare the columns, not the absolute numbers. Start-up: a small CommonJS Koa app that listens on
127.0.0.1 and exits, placed outside the repository with only koa in its node_modules; time from
spawn to its "ready" line, RSS then and 300 ms later, median of ${STARTUP_RUNS} interleaved runs.
@agentrt/instrument loads its OTLP exporter and the metrics SDK on the event-loop turn after the
app's start-up code, so that work is not in "ready" but is in the "300 ms later" memory column.
Throughput: \`POST /invocations\` on the contract server (\`@agentrt/server\` \`serve()\`), autocannon,
${CONNECTIONS} connections, ${THROUGHPUT_SECONDS} s after a 1 s warm-up, median of ${THROUGHPUT_ROUNDS}
interleaved rounds, with the server's CPU time per request (from /proc). Two agents: the reference
SDK-integration agent (examples/sdk-agent: a Strands agent loop, three turns of the offline model and
two HTTP tool calls to the fixture weather API per request) and an echo agent. Every instrumented
variant exports to an OTLP sink in a process of its own; "OTLP bytes/request" is what reached it.
ADOT runs in its AgentCore mode (\`AGENT_OBSERVABILITY_ENABLED=true\`) with its OTLP endpoints pointed
at the same sink. The reference agent's variants are loaded all at once instead (${AGENT_CONNECTIONS}
connections each, ${THROUGHPUT_SECONDS} s after a 2 s warm-up, ${AGENT_ROUNDS} rounds), so a
neighbour's load hits them alike: its overhead column is the median over rounds of each variant's
CPU per request divided by bare node's in the same round. Each variant exports to its own endpoint
prefix of the sink. One more round runs bare node, our two variants and the upstream register under \`--cpu-prof\`; the
breakdown gives each part of the code its share of the profile's busy samples inside the measured
window (by the script of the sampled function, bench/instrument/profile-breakdown.mjs), scaled to
the variant's median CPU per request. The functions behind it are in bench/instrument/agent-profile.md;
the profiles themselves (open them in Chrome DevTools or speedscope as flame graphs) are left in
bench/.work/instrument-profiles/.

Goals (#18): on the reference agent full telemetry at most +10% CPU per request and at most +3% with
the sampler off; on the echo agent at most +25 µs per request; start-up under half of ADOT's added time.`;
}

/** The section's tables: start-up twice, the reference agent and its CPU breakdown, the echo agent. */
function tablesText({ startup, echo, agent, agentProfiles }) {
  return `### Start-up, warm compile cache for every variant (what @agentrt/instrument sets up by itself)

${startupTable(startup.cached)}

### Start-up, no compile cache for any variant

${startupTable(startup.cold)}

### CPU per request, reference agent (examples/sdk-agent, offline model)

${agent.length > 0 ? agentTable(agent) : '_examples not built: not measured_'}

### Where the reference agent's CPU goes (µs per request, from the CPU profiles)

${
  agent.length === 0
    ? '_examples not built: not measured_'
    : agentProfiles.length === 0
      ? '_not profiled in this run (BENCH_AGENT_PROFILE=0); bench/instrument/agent-profile.md has the last profiled run_'
      : breakdownTable(agent, agentProfiles)
}

### Throughput, echo agent

${throughputTable(echo)}`;
}
