// bench/instrument/fetch-client.mjs: what tracing a fetch() costs, @agentrt/instrument's own fetch
// instrumentation (packages/instrument/src/fetch-client.ts) against the upstream
// @opentelemetry/instrumentation-undici it replaces, and against no instrumentation, in one run:
// GETs to a JSON server in another process, from one client process that switches between the
// settings block by block (bench/instrument/fetch-client-load.mjs); the figure is the client's CPU
// per call, and what an instrumentation adds is the median over cycles of its block minus the
// uninstrumented block of the same cycle. Run after building: `node bench/instrument/fetch-client.mjs`
// (about a minute; BENCH_FETCH_CYCLES, default 60, BENCH_FETCH_BLOCK, default 400 calls); writes its
// section of docs/benchmarks.md unless BENCH_WRITE=0.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAverage, table, writeSection } from '../lib/report.mjs';

const here = dirname(fileURLToPath(import.meta.url));

// The JSON server: in a child process, so its CPU is not the measured client's.
const serverSource = `
  const body = JSON.stringify({ properties: { forecast: 'http://127.0.0.1/gridpoints/SEW/124,67/forecast', periods: Array.from({ length: 4 }, (_, i) => ({ number: i, temperature: 50 + i, shortForecast: 'Rain' })) } });
  const server = require('node:http').createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/geo+json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  server.keepAliveTimeout = 60000;
  server.listen(0, '127.0.0.1', () => process.stdout.write('PORT ' + server.address().port + '\\n'));`;
const serverProcess = spawn(process.execPath, ['-e', serverSource], { stdio: ['ignore', 'pipe', 'inherit'] });
process.once('exit', () => serverProcess.kill());
const port = await new Promise((resolve, reject) => {
  let out = '';
  serverProcess.stdout.on('data', (d) => {
    out += d;
    const m = /PORT (\d+)/.exec(out);
    if (m) resolve(Number(m[1]));
  });
  serverProcess.once('exit', (code) => reject(new Error(`server exited ${code}`)));
});
const url = `http://127.0.0.1:${port}/points/47.6062,-122.3321?units=us`;

const CYCLES = Number(process.env.BENCH_FETCH_CYCLES ?? 60);
const BLOCK = Number(process.env.BENCH_FETCH_BLOCK ?? 400);
const LABELS = {
  none: 'no fetch instrumentation',
  upstream: '@opentelemetry/instrumentation-undici 0.33',
  agentrt: '@agentrt/instrument fetch-client',
};

const { settings, cycles } = await new Promise((resolve, reject) => {
  const child = spawn(process.execPath, [join(here, 'fetch-client-load.mjs')], {
    env: {
      ...process.env,
      BENCH_FETCH_URL: url,
      BENCH_FETCH_CYCLES: String(CYCLES),
      BENCH_FETCH_BLOCK: String(BLOCK),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.once('exit', (code) => {
    const m = /RESULT (\{.*\})/.exec(out);
    if (code === 0 && m) resolve(JSON.parse(m[1]));
    else reject(new Error(`the client exited ${code}: ${out}`));
  });
});
serverProcess.kill();

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const column = (variant, mode) => settings.findIndex(([v, m]) => v === variant && m === mode);
/** Median over cycles of a setting's CPU per call, and of its difference from no instrumentation. */
function figures(variant, mode) {
  const i = column(variant, mode);
  const base = column('none', mode);
  return {
    us: median(cycles.map((row) => row[i])),
    added: median(cycles.map((row) => row[i] - row[base])),
  };
}
const signed = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(1)}`;
const rows = [];
for (const mode of ['off', 'on']) {
  const upstream = figures('upstream', mode).added;
  for (const variant of Object.keys(LABELS)) {
    const { us, added } = figures(variant, mode);
    rows.push([
      mode === 'on' ? 'on (every span recorded)' : 'off (no span recorded)',
      LABELS[variant],
      us.toFixed(1),
      variant === 'none' ? '' : signed(added),
      variant === 'none' ? '' : `${((added / upstream) * 100).toFixed(0)}%`,
    ]);
  }
}
const result = table(
  [
    'sampler',
    'variant',
    `client CPU µs per fetch (median of ${CYCLES} blocks)`,
    'added µs (median of per-cycle differences)',
    'added, of upstream’s',
  ],
  rows,
);
console.log(result);
if (process.env.BENCH_WRITE !== '0') {
  const load = loadAverage();
  const file = writeSection(
    'instrument-fetch',
    'fetch() client spans (bench/instrument/fetch-client.mjs)',
    `What tracing one fetch() costs the calling process: GETs of a 300-byte JSON body, one at a time, each
inside a parent span as an agent's tool call is, to a server in another process, with an SDK set up as
the launcher sets it up (AsyncLocalStorage context, W3C trace context + baggage, a meter provider
recording \`http.client.request.duration\`, spans processed and dropped, so export is not in it). One
client process switches between the six settings block by block (${BLOCK} calls a block, ${CYCLES}
cycles, load average ${load}): client CPU per call from getrusage; "added" is the median over cycles
of a setting's block minus the uninstrumented block of the same cycle, which cancels the drift of
this shared machine's speed (over seconds it moved CPU per call by a third). Both instrumentations
make the same spans, headers and metric points (packages/instrument/src/fetch-client.test.ts
compares them request by request).

${result}
`,
  );
  console.log(`wrote ${file}`);
}
