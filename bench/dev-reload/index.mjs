// Benchmarks `agentrt dev`'s hot reload (packages/cli dev/hot-reload.ts, from dist/ — build first):
// save of an agent's source → first byte of the next invocation of the same session, from the new
// code; with the rebuild (transpile of the saved file) and the restart (stop of the session's
// worker) as rows of their own, and the new worker's start as what is left. Baseline in the same
// run: the project build `tsc -b` of the agent, what a reload would take without the per-file
// transpile. Goal (#31): save → first byte ≤ 1 s p50. Writes its table into docs/benchmarks.md.
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
 * byte. A call that reaches the worker as it is stopped fails (424): counted, and sent again.
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
save('v0');
await firstByteFrom(client, created.agentRuntimeArn, 'v0');

const rows = { firstByte: [], build: [], restart: [] };
for (let i = 1; i <= SAVES; i++) {
  const before = events.length;
  const saved = performance.now();
  save(`v${i}`);
  // The developer's next message: sent once the reload is done (a call before it is answered by
  // the old code, as it should be).
  while (events.length === before) await new Promise((r) => setTimeout(r, 2));
  const e = events[before];
  if (e.status !== 'reloaded') throw new Error(`save ${i}: ${e.message}`);
  const at = await firstByteFrom(client, created.agentRuntimeArn, `v${i}`);
  rows.firstByte.push(at - saved);
  rows.build.push(e.buildMs);
  rows.restart.push(e.restartMs);
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
    ["restart: stop the session's worker", p50(rows.restart), p95(rows.restart)],
    ['baseline: `tsc -b` of the agent after the same save (3 runs)', p50(tsc), p95(tsc)],
  ],
)}

${SAVES} saves; load average ${loadAverage()}. Each save's invocation is sent once the reload is done (${cutOff} of them failed and were sent again). A call that reaches a session's worker as the reload stops it fails (424, or 409 while it stops): the reload waits for a session's calls in flight to end (up to 10 s) before it stops it, but not for one that arrives at that moment. The watcher waits 30 ms after a save (editors write in steps) before the rebuild. The session id is the same throughout: each save's first invocation is served by a new worker of that session.`;
const file = writeSection('dev-reload', 'agentrt dev: hot reload (bench/dev-reload)', md);
console.log(md);
console.log(`written to ${file}`);
