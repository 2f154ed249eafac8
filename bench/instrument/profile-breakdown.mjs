// Where a request's CPU goes, from V8 `--cpu-prof` profiles: every sample is given to
// one part (the SDK's span work, metrics, the undici instrumentation, the app's agent loop …) by
// the file of the function it was in, only samples inside the measured window count, and each
// part's share of the busy samples is scaled to the CPU per request measured over the same window.
// Samples are counted, not weighted by the time since the previous one: on a shared machine a
// process waits for a core between samples, and that wait would be charged to whatever function
// happened to run next.
// Used by bench/instrument/index.mjs; on its own it prints a profile's parts and top functions
// inside the window the bench measured (window.json beside the profile), or the functions whose
// share grew most against a second (bare node's) profile:
//   node bench/instrument/profile-breakdown.mjs <file.cpuprofile> [<bare.cpuprofile>] [--top N]
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The parts, first match wins: [part, test on the function's script URL]. Telemetry parts first,
 * then the app's own work (which the launcher can make slower without running code of its own:
 * extra headers to write, context frames to copy).
 */
export const PARTS = [
  [
    'OTel context (AsyncLocalStorage)',
    /@opentelemetry\/context-async-hooks|async_context_frame|async_local_storage/,
  ],
  [
    'undici/fetch instrumentation (ours or upstream)',
    /packages\/instrument\/dist\/fetch-client|@opentelemetry\/instrumentation-undici|node:diagnostics_channel/,
  ],
  ['http instrumentation (outgoing)', /@opentelemetry\/instrumentation-http/],
  ['our HTTP server span', /packages\/instrument\/dist\/http-server/],
  [
    'OTLP serialize + export',
    /packages\/instrument\/dist\/otlp|packages\/instrument\/dist\/exporters|@opentelemetry\/(otlp|exporter)/,
  ],
  [
    'our span processors (baggage, redaction)',
    /packages\/instrument\/dist\/(span-processors|attribute-filter)/,
  ],
  ['other @agentrt/instrument', /packages\/instrument\/dist/],
  ['metrics SDK', /@opentelemetry\/sdk-metrics/],
  ['logs SDK', /@opentelemetry\/(sdk-logs|api-logs)/],
  ['trace SDK (spans, sampler, batch processor)', /@opentelemetry\/sdk-trace/],
  ['OTel API + core (propagators, attributes)', /@opentelemetry\/(api|core|resources|instrumentation\/)/],
  ['@agentrt/propagation (X-Ray, session header)', /packages\/propagation\/dist/],
  ['GenAI layer (examples/models)', /examples\/models\/dist\/genai-telemetry/],
  ["Strands' telemetry (tracer, meter)", /@strands-agents\/sdk\/dist\/src\/telemetry/],
  ['Strands agent loop', /@strands-agents/],
  ['app: example models, tools, zod', /examples\/(models|sdk-agent)\/dist|node_modules\/zod/],
  [
    'app: @agentrt/server + Koa',
    /packages\/server\/dist|node_modules\/(koa|@koa|koa-|on-finished|raw-body|http-errors|statuses|depd)/,
  ],
  ['undici (fetch itself)', /undici/],
  [
    'Node http, net, streams',
    /^node:(_http|net|http|stream|internal\/streams|internal\/webstreams|internal\/stream_base)/,
  ],
  [
    'Node async hooks, promises, timers',
    /^node:(async_hooks|internal\/async_hooks|internal\/process\/task_queues|internal\/timers|timers)/,
  ],
];
const OTHER = 'other (Node, V8, modules)';
const GC = 'garbage collector';
const NATIVE = 'V8/Node native, no JS frame (socket I/O, event loop)';

function partOf(callFrame) {
  if (callFrame.functionName === '(garbage collector)') return GC;
  if (callFrame.functionName === '(program)') return NATIVE;
  for (const [part, test] of PARTS) if (test.test(callFrame.url)) return part;
  if (callFrame.url === '' && callFrame.functionName === 'runMicrotasks')
    return 'Node async hooks, promises, timers';
  return OTHER;
}

/**
 * Samples per part and per function of one profile, counting only samples taken between `fromUs`
 * and `toUs` (V8 profile clock = CLOCK_MONOTONIC µs, the clock of process.hrtime).
 */
export function profileParts(profile, fromUs = -Infinity, toUs = Infinity) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parts = new Map();
  const functions = new Map();
  let busy = 0;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    const dt = 1;
    if (t < fromUs || t > toUs) continue;
    const node = byId.get(profile.samples[i]);
    const frame = node.callFrame;
    if (frame.functionName === '(idle)') continue;
    busy += dt;
    const part = partOf(frame);
    parts.set(part, (parts.get(part) ?? 0) + dt);
    const fn = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(packages|examples)\//, '$1/')}:${frame.lineNumber + 1}`;
    functions.set(fn, (functions.get(fn) ?? 0) + dt);
  }
  return { busy, parts, functions };
}

/** Each part's share of the busy samples, scaled to `cpuUsPerRequest` (µs per request). */
export function perRequest({ busy, parts }, cpuUsPerRequest) {
  const out = new Map();
  for (const [part, us] of parts) out.set(part, busy > 0 ? (us / busy) * cpuUsPerRequest : 0);
  return out;
}

/** Every part in a stable order: the table's rows. */
export const PART_NAMES = [...PARTS.map(([p]) => p), GC, NATIVE, OTHER];

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const top = args.includes('--top') ? Number(args[args.indexOf('--top') + 1]) : 25;
  const [file, bareFile] = args.filter((a) => a.endsWith('.cpuprofile'));
  const windowFile = join(dirname(file), 'window.json');
  const { fromUs, toUs } = existsSync(windowFile) ? JSON.parse(readFileSync(windowFile, 'utf8')) : {};
  const read = (f) => profileParts(JSON.parse(readFileSync(f, 'utf8')), fromUs, toUs);
  const { busy, parts, functions } = read(file);
  const pct = (x) => `${(x * 100).toFixed(2).padStart(6)}%`;
  console.log(`${busy} busy samples${fromUs === undefined ? '' : ' in the measured window'}`);
  for (const [p, n] of [...parts].sort((a, b) => b[1] - a[1])) console.log(`${pct(n / busy)}  ${p}`);
  const bare = bareFile === undefined ? undefined : read(bareFile);
  const share = (m, total, f) => (m.get(f) ?? 0) / total;
  const rows = [...new Set([...functions.keys(), ...(bare?.functions.keys() ?? [])])].map((f) => [
    f,
    share(functions, busy, f) - (bare ? share(bare.functions, bare.busy, f) : 0),
  ]);
  console.log(bare ? "\nshare of busy samples, minus bare node's:" : '\nshare of busy samples:');
  for (const [f, d] of rows.sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(d)}  ${f}`);
}
