// The evaluation loop end to end on the reference weather agent (examples/sdk-agent, offline model,
// the fixture weather API) hosted by the runtime: 50 inputs re-run through it by `agentrt eval run`,
// each new session's spans judged, the scores stored in the collector and averaged by the query
// language, the run shown in Chromium; then a code change to the agent deployed as a new version
// (UpdateAgentRuntime), the dataset run again, and the two runs compared in the CLI and the UI.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { GetAgentRuntimeCommand, UpdateAgentRuntimeCommand } from '@aws-sdk/client-bedrock-agentcore-control';
import { main } from '@agentrt/cli';
import { type WeatherApiFixture, startWeatherApiFixture } from '@agentrt/example-models/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, type RuntimeStack, startRuntimeStack, until } from '../observability/runtime-stack.js';
import { buildUiIfStale, hasChromium, usePage, screenshot } from './browser.js';

const ITEMS = 50;
const CITIES = ['Seattle', 'Denver', 'Boston', 'Austin', 'Chicago'];
/** The code change: the agent now cuts the prompt to its first 24 characters. */
const CAP = 24;
/** Even items name the city early (under the cap), odd items late (beyond it). */
const prompt = (i: number): string => {
  const city = CITIES[i % CITIES.length]!;
  return i % 2 === 0
    ? `Weather in ${city}?`
    : `Could you please tell me what the weather is like in ${city}?`;
};
const EVALUATORS = ['Builtin.TrajectoryExactOrderMatch', 'Builtin.GoalSuccessRate'];

let weather: WeatherApiFixture;
let stack: RuntimeStack;
/** The agent's code, copied inside the repo (its packages resolve from the repo's node_modules). */
const agentDir = (version: string) => join(work, version);
const work = mkdtempSync(join(REPO_ROOT, 'examples', '.eval-agent-'));

function copyAgent(version: string, change?: (entrypoint: string) => string): string {
  const dir = agentDir(version);
  for (const part of ['package.json', 'dist'])
    cpSync(join(REPO_ROOT, 'examples', 'sdk-agent', part), join(dir, part), { recursive: true });
  if (change) {
    const file = join(dir, 'dist', 'entrypoint.js');
    const before = readFileSync(file, 'utf8');
    const after = change(before);
    if (after === before) throw new Error('the code change found nothing to change in entrypoint.js');
    writeFileSync(file, after);
  }
  return pathToFileURL(dir).href;
}

async function evalRun(json: string): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  const io = { stdout: () => undefined, stderr: (t: string) => void (stderr += t), env: {}, cwd: work };
  const args = ['eval', 'run', '--dataset', 'weather50.jsonl', '--runtime', 'weather_eval'];
  const targets = ['--runtime-url', stack.runtime.url, '--url', stack.collector.url, '--wait', '90'];
  const flags = ['--concurrency', '10', '--json', json, ...EVALUATORS.flatMap((e) => ['--evaluator', e])];
  const code = await main([...args, ...targets, ...flags], io);
  return { code, stderr };
}

interface Report {
  runId: string;
  summary: { byEvaluator: Record<string, { mean: number; results: number }> };
  items: { id: string; error?: string; results: { evaluatorId: string; value?: number }[] }[];
}
const report = (name: string) => JSON.parse(readFileSync(join(work, name), 'utf8')) as Report;

beforeAll(async () => {
  weather = await startWeatherApiFixture({ port: 0 });
  writeFileSync(
    join(work, 'weather50.jsonl'),
    Array.from({ length: ITEMS }, (_, i) =>
      JSON.stringify({
        id: `q${String(i).padStart(2, '0')}`,
        input: { prompt: prompt(i) },
        expectedTrajectory: ['http_request', 'http_request'],
      }),
    ).join('\n'),
  );
  stack = await startRuntimeStack({
    name: 'weather_eval',
    containerUri: copyAgent('v1'),
    environment: {
      AGENTRT_MODEL_PROVIDER: 'offline',
      OTEL_SERVICE_NAME: 'sdk-agent',
      WEATHER_API_BASE_URL: weather.url,
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
      OTEL_BSP_SCHEDULE_DELAY: '500',
    },
    runtime: { sandboxHostPorts: [weather.port], maxSessions: 20 },
  });
  if (!hasChromium) return;
  buildUiIfStale();
}, 120_000);

const page = usePage('evals-agent');

afterAll(async () => {
  await stack?.close();
  await weather?.close();
  rmSync(work, { recursive: true, force: true });
}, 60_000);

describe('50 weather-agent sessions evaluated, stored, queried, shown, and compared after a code change', () => {
  it('judges the first version: every trajectory matches, the scores queryable by evaluator', async () => {
    const first = await evalRun('v1.json');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain(`[${ITEMS}/${ITEMS}]`);
    const v1 = report('v1.json');
    expect(v1.items.filter((i) => i.error)).toEqual([]);
    expect(v1.summary.byEvaluator['Builtin.TrajectoryExactOrderMatch']).toEqual(
      expect.objectContaining({ mean: 1, results: ITEMS }),
    );
    expect(v1.summary.byEvaluator['Builtin.GoalSuccessRate']?.results).toBe(ITEMS);

    const query = `filter attributes.agentrt.evaluation.run_id = "${v1.runId}" | stats avg(attributes.gen_ai.evaluation.score.value) as score, count(*) as n by attributes.gen_ai.evaluation.name as evaluator`;
    const rows = await until('the run’s 100 stored results', async () => {
      const res = await fetch(`${stack.collector.url}/api/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query }),
      });
      const out = ((await res.json()) as { rows: { evaluator: string; score: number; n: number }[] }).rows;
      return out.reduce((a, r) => a + r.n, 0) === ITEMS * EVALUATORS.length ? out : undefined;
    });
    const byName = new Map(rows.map((r) => [r.evaluator, r]));
    expect(byName.get('Builtin.TrajectoryExactOrderMatch')).toEqual(
      expect.objectContaining({ score: 1, n: ITEMS }),
    );
    expect(byName.get('Builtin.GoalSuccessRate')?.score).toBeCloseTo(
      v1.summary.byEvaluator['Builtin.GoalSuccessRate']!.mean,
      6,
    );
  }, 600_000);

  it('judges the changed version and compares: the prompts the change cut short regress', async () => {
    const uri = copyAgent('v2', (code) =>
      code.replace(
        'return { prompt: prompt?.trim() ? prompt : DEFAULT_PROMPT,',
        `return { prompt: prompt?.trim() ? prompt.slice(0, ${CAP}) : DEFAULT_PROMPT,`,
      ),
    );
    const id = stack.arn.split('/').at(-1)!;
    await stack.control.send(
      new UpdateAgentRuntimeCommand({
        agentRuntimeId: id,
        agentRuntimeArtifact: { containerConfiguration: { containerUri: uri } },
        roleArn: 'arn:aws:iam::123456789012:role/AgentRuntimeRole',
        networkConfiguration: { networkMode: 'PUBLIC' },
        environmentVariables: {
          AGENTRT_MODEL_PROVIDER: 'offline',
          OTEL_SERVICE_NAME: 'sdk-agent',
          WEATHER_API_BASE_URL: weather.url,
          OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
          OTEL_BSP_SCHEDULE_DELAY: '500',
        },
      }),
    );
    await until('version 2 READY', async () => {
      const got = await stack.control.send(new GetAgentRuntimeCommand({ agentRuntimeId: id }));
      return got.status === 'READY' && got.agentRuntimeVersion === '2' ? true : undefined;
    });
    const second = await evalRun('v2.json');
    expect(second.code, second.stderr).toBe(0);
    const v2 = report('v2.json');
    const trajectory = (r: Report, id: string) =>
      r.items.find((i) => i.id === id)!.results.find((x) => x.evaluatorId === EVALUATORS[0])!.value;
    const regressed = v2.items.filter((i) => trajectory(v2, i.id) === 0).map((i) => i.id);
    const late = Array.from({ length: ITEMS }, (_, i) => `q${String(i).padStart(2, '0')}`).filter(
      (_, i) => i % 2 === 1,
    );
    expect(regressed).toEqual(late);

    let stdout = '';
    const io = { stdout: (t: string) => void (stdout += t), stderr: () => undefined, env: {}, cwd: work };
    expect(await main(['eval', 'compare', 'v1.json', 'v2.json'], io)).toBe(0);
    expect(stdout).toMatch(/Builtin\.TrajectoryExactOrderMatch\s+1\.000\s+0\.500\s+-0\.500/);
    expect(stdout).toContain('q01  Builtin.TrajectoryExactOrderMatch  1.000 → 0.000');
    expect(stdout).not.toContain('q00  Builtin.TrajectoryExactOrderMatch');
  }, 600_000);

  it.skipIf(!hasChromium)(
    'shows both runs in Chromium: the per-item results, and the compare',
    async () => {
      await page().goto(`${stack.collector.url}/#/evals`);
      const runs = page().locator('[data-testid=eval-runs] tbody tr');
      await expect.poll(() => runs.count(), { timeout: 30_000 }).toBe(2);
      expect((await runs.nth(1).locator('td').allTextContents())[2]).toBe(String(ITEMS * EVALUATORS.length));
      await runs.nth(1).locator('a').click();
      const rows = page().locator('[data-testid=eval-results] tbody tr');
      await expect.poll(() => rows.count(), { timeout: 30_000 }).toBe(ITEMS * EVALUATORS.length);
      await screenshot(page(), 'eval-agent-run');

      await page().goto(`${stack.collector.url}/#/evals`);
      await runs.nth(1).locator('input[type=checkbox]').check();
      await runs.nth(0).locator('input[type=checkbox]').check();
      await page().locator('[data-testid=eval-compare-link]').click();
      const summary = page().locator('[data-testid=eval-compare-summary]');
      await expect
        .poll(() => summary.textContent(), { timeout: 30_000 })
        .toMatch(new RegExp(`^${ITEMS} items · (\\d+) regressed`));
      const regressedCount = Number(/· (\d+) regressed/.exec((await summary.textContent()) ?? '')?.[1]);
      expect(regressedCount).toBeGreaterThanOrEqual(ITEMS / 2);
      const trajectory = page()
        .locator('[data-testid=eval-compare-evaluators] tbody tr')
        .filter({ hasText: 'Builtin.TrajectoryExactOrderMatch' });
      expect(await trajectory.locator('td.num').textContent()).toBe('1.00 → 0.50 −0.50');
      const first = page().locator('[data-testid=eval-compare-items] tbody tr').first();
      expect(await first.getAttribute('class')).toBe('regression');
      await screenshot(page(), 'eval-agent-compare');
    },
    120_000,
  );
});
