// bench/instrument's start-up part: time to ready and memory of a small Koa app under each launcher.
import { copyFileSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { table } from '../lib/report.mjs';
import { here, median, root, runUntilReady } from './harness.mjs';
import { STARTUP_RUNS } from './settings.mjs';

// The start-up app lives outside the repository, with only koa in its node_modules, as a deployed
// app would: the launcher loads the instrumentations whose libraries the app has, and the
// monorepo's hoisted node_modules (pino, winston, openai, AWS SDK …) must not count as the app's.
const appDir = join(os.tmpdir(), 'agentrt-bench-instrument');
const startupApp = join(appDir, 'startup-app.cjs');
const compileCacheDir = join(appDir, 'compile-cache');

function prepareApp() {
  rmSync(appDir, { recursive: true, force: true });
  mkdirSync(join(appDir, 'node_modules'), { recursive: true });
  symlinkSync(join(root, 'node_modules', 'koa'), join(appDir, 'node_modules', 'koa'), 'dir');
  copyFileSync(join(here, 'startup-app.cjs'), startupApp);
}

/** Start-up with a warm compile cache for every variant, then with none; printed as they come. */
export async function runStartup(variants) {
  prepareApp();
  const cached = await measureStartup(variants, true);
  const cold = await measureStartup(variants, false);
  console.log(`start-up, warm compile cache for all:\n${startupTable(cached)}`);
  console.log(`start-up, no compile cache:\n${startupTable(cold)}`);
  return { cached, cold };
}

/**
 * Median time-to-ready and RSS of every variant. `cached`: every variant runs with the same warm
 * NODE_COMPILE_CACHE (what @agentrt/instrument turns on by itself); otherwise no variant has one
 * (ours with AGENTRT_COMPILE_CACHE=false).
 */
async function measureStartup(variants, cached) {
  const extra = cached ? { NODE_COMPILE_CACHE: compileCacheDir } : { AGENTRT_COMPILE_CACHE: 'false' };
  const samples = new Map(variants.map((v) => [v.name, { ms: [], rss: [], settled: [] }]));
  for (const v of variants) await runUntilReady(v.args, startupApp, { ...v.env, ...extra }); // warm caches
  for (let i = 0; i < STARTUP_RUNS; i++) {
    // interleave the variants so a noisy neighbour hurts them all alike
    for (const v of variants) {
      const r = await runUntilReady(v.args, startupApp, { ...v.env, ...extra });
      samples.get(v.name).ms.push(r.ms);
      samples.get(v.name).rss.push(r.rss);
      samples.get(v.name).settled.push(r.settledRss);
    }
  }
  const bare = samples.get('bare node');
  const bareMs = median(bare.ms);
  const bareMb = median(bare.rss) / 2 ** 20;
  const bareSettledMb = median(bare.settled) / 2 ** 20;
  return variants.map((v) => {
    const s = samples.get(v.name);
    const ms = median(s.ms);
    const mb = median(s.rss) / 2 ** 20;
    const settledMb = median(s.settled) / 2 ** 20;
    return {
      name: v.name,
      ms,
      mb,
      addedMs: ms - bareMs,
      addedMb: mb - bareMb,
      addedSettledMb: settledMb - bareSettledMb,
    };
  });
}

export function startupTable(rows) {
  const adot = rows.find((r) => r.name.startsWith('ADOT'));
  return table(
    [
      'variant',
      'ready (ms)',
      'added ms',
      'RSS at ready (MB)',
      'added MB',
      'added MB 300 ms later',
      'added ms vs ADOT',
      'added MB vs ADOT',
    ],
    rows.map((r) => [
      r.name,
      r.ms.toFixed(0),
      r.addedMs.toFixed(0),
      r.mb.toFixed(1),
      r.addedMb.toFixed(1),
      r.addedSettledMb.toFixed(1),
      adot && adot.addedMs > 0 ? `${((r.addedMs / adot.addedMs) * 100).toFixed(0)}%` : 'n/a',
      adot && adot.addedMb > 0 ? `${((r.addedMb / adot.addedMb) * 100).toFixed(0)}%` : 'n/a',
    ]),
  );
}

/** The report's start-up sentence: ours against ADOT, with a warm compile cache and with none. */
export function startupLine({ cached, cold }) {
  const oursStart = cached.find((r) => r.name === '@agentrt/instrument (--require)');
  const adotRow = cached.find((r) => r.name.startsWith('ADOT'));
  const oursCold = cold.find((r) => r.name === '@agentrt/instrument (--require)');
  const adotCold = cold.find((r) => r.name.startsWith('ADOT'));
  return adotRow
    ? `Start-up: @agentrt/instrument adds ${oursStart.addedMs.toFixed(0)} ms / ${oursStart.addedMb.toFixed(1)} MB ` +
        `against ADOT's ${adotRow.addedMs.toFixed(0)} ms / ${adotRow.addedMb.toFixed(1)} MB ` +
        `(${((oursStart.addedMs / adotRow.addedMs) * 100).toFixed(0)}% of its added time) with a warm compile cache ` +
        `for both, and ${oursCold.addedMs.toFixed(0)} ms against ${adotCold.addedMs.toFixed(0)} ms ` +
        `(${((oursCold.addedMs / adotCold.addedMs) * 100).toFixed(0)}%) with none.`
    : `ADOT could not be installed, so only the upstream register is compared.`;
}
