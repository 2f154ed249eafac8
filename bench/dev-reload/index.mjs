// Benchmarks `agentrt dev`'s hot reload (packages/cli dev/hot-reload.ts, from dist/ — build first):
// save of an agent's source → first byte of the next invocation of the same session, from the new
// code; with the rebuild (transpile of the saved file) and the restart (the runtime's new worker
// for the session, started beside the old one and swapped in) as rows of their own. Baselines in
// the same run: the reload as it was before (stop the session's worker, then the next invocation
// starts one: StopRuntimeSession + a cold start) and the project build `tsc -b` of the agent.
// Goal (#31): save → first byte ≤ 1 s p50. Writes its table into docs/benchmarks.md.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startHotReload } from '@agentrt/cli';
import { createRuntimeClient, createRuntimeServer } from '@agentrt/runtime';
import { ms, pct } from '../lib/measure.mjs';
import { loadAverage, table, writeSection } from '../lib/report.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..');
const SAVES = Number(process.env.BENCH_SAVES ?? 15);
const work = join(here, '..', '.work', 'dev-reload');
const agentDir = join(work, 'agent');
const app = join(agentDir, 'src', 'app.ts');
const SESSION = `bench-reload-session-${'0'.repeat(20)}`;

function copyAgent() {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(agentDir, { recursive: true });
  const example = join(repo, 'examples', 'custom-agent');
  for (const part of ['src', 'dist', 'package.json'])
    cpSync(join(example, part), join(agentDir, part), { recursive: true });
  writeFileSync(
    join(agentDir, 'tsconfig.json'),
    JSON.stringify({
      extends: join(repo, 'tsconfig.base.json'),
      compilerOptions: { rootDir: 'src', outDir: 'dist' },
      include: ['src'],
      references: [{ path: join(repo, 'packages', 'server') }, { path: join(repo, 'examples', 'models') }],
    }),
  );
}

/** Rewrites the agent's answer to start with `tag`. */
const save = (tag) =>
  writeFileSync(
    app,
    readFileSync(app, 'utf8').replace(
      /content: \[.*\] \},$/m,
      `content: [{ text: \`${tag}: \${answer.text}\` }] },`,
    ),
  );

/**
 * Invokes the session until its answer starts with `tag`; resolves with the time of that first
 * byte. A call that reaches a worker as it is stopped fails (424, or 409): counted, sent again.
 */
let cutOff = 0;
async function firstByteFrom(client, arn, tag) {
  for (;;) {
    const res = await client
      .invoke(arn, JSON.stringify({ input: { prompt: 'hello' } }), { sessionId: SESSION })
      .catch((error) => {
        // 424: the call reached the worker as it was stopped; 409: while it stops.
        if (error.status !== 424 && error.status !== 409) throw error;
        cutOff++;
        return undefined;
      });
    if (!res) continue;
    const reader = res.body.getReader();
    const { value } = await reader.read();
    const at = performance.now();
    let text = new TextDecoder().decode(value);
    for (let r = await reader.read(); !r.done; r = await reader.read())
      text += new TextDecoder().decode(r.value);
    if (text.includes(`"${tag}: `)) return at;
  }
}

copyAgent();
const dataDir = join(work, 'runtime');
const server = await createRuntimeServer({
  host: '127.0.0.1',
  port: 0,
  dataDir,
  fileArtifacts: 'live',
  logSink: () => {},
});
const client = createRuntimeClient({ url: server.url });
const created = await client.create('bench_reload', {
  containerUri: pathToFileURL(agentDir).href,
  environmentVariables: { AGENTRT_MODEL_PROVIDER: 'offline' },
});
await client.waitSettled(created.agentRuntimeId);
const events = [];
const reloader = await startHotReload({
  agents: [{ name: 'bench_reload', arn: created.agentRuntimeArn, dir: agentDir }],
  runtime: client,
  log: () => {},
  onEvent: (e) => events.push(e),
});
/** Saves `tag` and resolves with the reload's event (one per save: the next save waits for it). */
async function saveAndReload(tag) {
  const before = events.length;
  save(tag);
  while (events.length === before) await new Promise((r) => setTimeout(r, 2));
  const e = events[before];
  if (e.status !== 'reloaded') throw new Error(`save ${tag}: ${e.message}`);
  return e;
}
const arn = created.agentRuntimeArn;
await saveAndReload('v0');
await firstByteFrom(client, arn, 'v0');

const rows = { firstByte: [], build: [], restart: [], invoke: [], warm: [], before: [] };
for (let i = 1; i <= SAVES; i++) {
  const saved = performance.now();
  // The developer's next message: sent once the reload is done (a call before it is answered by
  // the old code, as it should be; one sent while the new worker starts waits for it).
  const e = await saveAndReload(`v${i}`);
  const sent = performance.now();
  const at = await firstByteFrom(client, arn, `v${i}`);
  rows.firstByte.push(at - saved);
  rows.build.push(e.buildMs);
  rows.restart.push(e.restartMs);
  rows.invoke.push(at - sent);
  const again = performance.now();
  rows.warm.push((await firstByteFrom(client, arn, `v${i}`)) - again);
  // Baseline, the reload before #31's fix: the session's worker stopped, the next call cold-starts.
  const stopped = performance.now();
  await client.stopSession(arn, SESSION);
  rows.before.push((await firstByteFrom(client, arn, `v${i}`)) - stopped + e.buildMs);
}
reloader.close();
await server.close();

const tsc = [];
for (let i = 0; i < 3; i++) {
  save(`tsc${i}`);
  const t0 = performance.now();
  const r = spawnSync(
    process.execPath,
    [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-b', agentDir],
    { encoding: 'utf8' },
  );
  tsc.push(performance.now() - t0);
  if (r.status !== 0) console.error(r.stdout, r.stderr);
}
rmSync(work, { recursive: true, force: true });

const p50 = (v) => ms(pct(v, 50));
const p95 = (v) => ms(pct(v, 95));
const md = `${table(
  ['step (examples/custom-agent, one session, offline model)', 'p50', 'p95'],
  [
    ['save → first byte from the new code (goal ≤ 1 s p50)', p50(rows.firstByte), p95(rows.firstByte)],
    ['rebuild: transpile the saved file', p50(rows.build), p95(rows.build)],
    ["restart: the session's new worker started and swapped in", p50(rows.restart), p95(rows.restart)],
    ['first byte of the invocation sent once the reload is done', p50(rows.invoke), p95(rows.invoke)],
    ['floor: first byte of the next invocation (same worker, no reload)', p50(rows.warm), p95(rows.warm)],
    [
      'baseline, the reload before: rebuild + stop the worker + the next invocation cold-starts one',
      p50(rows.before),
      p95(rows.before),
    ],
    ['baseline: `tsc -b` of the agent after the same save (3 runs)', p50(tsc), p95(tsc)],
  ],
)}

${SAVES} saves; load average ${loadAverage()}. Each save's invocation is sent once the reload is done (${cutOff} calls failed with 409/424 and were sent again). The reload asks the runtime for fresh workers (POST /local/runtimes/{arn}/sessions/restart): each live session's new worker starts beside the old one, a call arriving meanwhile waits for it, and the old worker is stopped once its calls in flight ended — nobody waits for its shutdown. The watcher waits 30 ms after a save (editors write in steps) before the rebuild. The session id is the same throughout. Workers run uninstrumented here; \`agentrt dev\` preloads @agentrt/instrument into them, which adds to each start.

What a save costs is the new worker's start (Node loading the agent's modules, ~0.5–0.8 s on this machine) and the answer itself (the floor row: the offline model streams its answer at 15 ms a chunk and this agent answers JSON once it is whole). Since the reload starts the new worker at the save, a message sent a second or more after it gets its first byte at the floor's pace (the "sent once the reload is done" row), where before the fix it paid the cold start on top (the baseline row: that message's first byte came a cold start later). Before the fix this bench recorded save → first byte 3834 ms p50 and "restart" 3379 ms p50 at load 21: it read each save's event one save late (the first save's reload was not awaited), so its "restart" row timed the next worker's cold start under load 21 while the reload waited for that call to end; StopRuntimeSession of an idle worker itself takes 5–30 ms (measured with and without @agentrt/instrument in the worker). The fix also removed the 409s a call met while the old worker stopped and the second cold start a session paid when a reload stopped the worker that had just started for it.`;
const file = writeSection('dev-reload', 'agentrt dev: hot reload (bench/dev-reload)', md);
console.log(md);
console.log(`written to ${file}`);
