import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spansToOtlpJson } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCollector } from '../../../../collector/src/testing.test-util.js';
import { FORECAST_TURN, weatherSession } from '../../../runtime/src/evaluate/weather-sessions.test-util.js';
import { createRuntimeServer, sampled } from '@agentrt/runtime';
import { main } from '../main.js';

const SESSIONS = 50;
const sessionId = (run: string, i: number): string => `weather-${run}-${String(i).padStart(2, '0')}`;
const TRAJECTORY = ['http_request', 'http_request', 'ready_to_summarize'];

/** Run "v1" of the agent: every 5th session's second forecast call fails. "v2" (the fix) never fails. */
function sessions(run: 'v1' | 'v2', seed: number) {
  return Array.from({ length: SESSIONS }, (_, i) => {
    const broken = run === 'v1' && i % 5 === 0;
    const turn = broken
      ? { ...FORECAST_TURN, tools: ['http_request', '!http_request'], answer: '' }
      : FORECAST_TURN;
    return weatherSession(sessionId(run, i), [turn], seed + i);
  }).flat();
}

function io(cwd: string) {
  const out = { stdout: '', stderr: '' };
  return {
    out,
    io: { stdout: (t: string) => (out.stdout += t), stderr: (t: string) => (out.stderr += t), env: {}, cwd },
  };
}

describe('agentrt eval', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let dir: string;
  beforeAll(async () => {
    collector = await startCollector();
    dir = mkdtempSync(join(tmpdir(), 'agentrt-eval-'));
    for (const [run, seed] of [
      ['v1', 100],
      ['v2', 300],
    ] as const) {
      const res = await fetch(`${collector.url}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(spansToOtlpJson(sessions(run, seed))),
      });
      expect(res.status).toBe(200);
      const lines = Array.from({ length: SESSIONS }, (_, i) =>
        JSON.stringify({ id: `item-${i}`, sessionId: sessionId(run, i), expectedTrajectory: TRAJECTORY }),
      );
      writeFileSync(join(dir, `${run}.jsonl`), `# weather sessions of ${run}\n${lines.join('\n')}\n`);
    }
  });
  afterAll(async () => {
    await collector?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const evalRun = async (dataset: string, ...flags: string[]) => {
    const t = io(dir);
    const args = ['eval', 'run', '--dataset', dataset, '--url', collector.url, ...flags];
    const code = await main(
      [...args, '--evaluator', 'Builtin.TrajectoryInOrderMatch', '--evaluator', 'Builtin.Helpfulness'],
      t.io,
    );
    return { code, ...t.out };
  };

  it('evaluates 50 stored weather sessions, writes JUnit and JSON, stores scores the query language averages', async () => {
    // Wait for the 100 sessions to be queryable (ingest is asynchronous).
    for (let i = 0; i < 100; i++) {
      const res = await fetch(`${collector.url}/api/sessions/${sessionId('v2', SESSIONS - 1)}`);
      if (res.ok) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const first = await evalRun(
      'v1.jsonl',
      '--fail-under',
      '0.5',
      '--junit',
      'v1.xml',
      '--json',
      'v1.json',
      '--concurrency',
      '8',
    );
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain('[50/50]');
    expect(first.stdout).toMatch(/Builtin\.TrajectoryInOrderMatch\s+0\.800/);
    const report = JSON.parse(readFileSync(join(dir, 'v1.json'), 'utf8')) as {
      runId: string;
      summary: { byEvaluator: Record<string, { mean: number; results: number }> };
    };
    expect(report.summary.byEvaluator['Builtin.TrajectoryInOrderMatch']).toMatchObject({
      mean: 0.8,
      results: 50,
    });
    expect(report.summary.byEvaluator['Builtin.Helpfulness']!.results).toBe(50);
    const junit = readFileSync(join(dir, 'v1.xml'), 'utf8');
    expect(junit).toContain(
      '<testsuite name="Builtin.TrajectoryInOrderMatch" tests="50" failures="10" errors="0">',
    );
    expect(junit).toContain(
      '<testcase name="item-0" classname="Builtin.Helpfulness"><failure message="score 0.000',
    );

    const query = `filter attributes.agentrt.evaluation.run_id = "${report.runId}" | stats avg(attributes.gen_ai.evaluation.score.value) as score, count(*) as n by attributes.gen_ai.evaluation.name as evaluator`;
    let rows: { evaluator: string; score: number; n: number }[] = [];
    for (let i = 0; i < 100 && rows.reduce((a, r) => a + r.n, 0) < 100; i++) {
      const res = await fetch(`${collector.url}/api/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query }),
      });
      rows = ((await res.json()) as { rows: typeof rows }).rows;
      await new Promise((r) => setTimeout(r, 100));
    }
    const trajectory = rows.find((r) => r.evaluator === 'Builtin.TrajectoryInOrderMatch');
    expect(trajectory).toMatchObject({ score: 0.8, n: 50 });
    expect(rows.find((r) => r.evaluator === 'Builtin.Helpfulness')?.n).toBe(50);

    // The agent after a fix: a second run, compared with the first.
    const second = await evalRun('v2.jsonl', '--json', 'v2.json');
    expect(second.code).toBe(0);
    const t = io(dir);
    expect(await main(['eval', 'compare', 'v1.json', 'v2.json'], t.io)).toBe(0);
    expect(t.out.stdout).toMatch(/Builtin\.TrajectoryInOrderMatch\s+0\.800\s+1\.000\s+\+0\.200/);
    expect(t.out.stdout).toContain('item-0  Builtin.TrajectoryInOrderMatch  0.000 → 1.000');
  });

  it('exits 1 under --fail-under, names bad dataset lines, resumes from a journal', async () => {
    const strict = await evalRun('v1.jsonl', '--fail-under', '0.95', '--no-store');
    expect(strict.code).toBe(1);
    expect(strict.stdout).toContain('FAILED');

    writeFileSync(join(dir, 'bad.jsonl'), '{"sessionId": "a"}\n\n{"sessionId": 3}\n');
    const bad = await evalRun('bad.jsonl');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('bad.jsonl:3: sessionId must be a non-empty string');
    writeFileSync(
      join(dir, 'bad2.jsonl'),
      '{"sessionId": "a"}\n{"sessionId": "b", "expectedTrajectory": "x"}\nnot json\n',
    );
    expect((await evalRun('bad2.jsonl')).stderr).toContain(
      'bad2.jsonl:2: expectedTrajectory must be a list of strings',
    );

    writeFileSync(
      join(dir, 'two.jsonl'),
      '{"id": "gone", "sessionId": "no-such-session"}\n{"id": "ok", "sessionId": "weather-v2-00", "expectedTrajectory": []}\n',
    );
    const partial = await evalRun('two.jsonl', '--resume', 'journal.jsonl', '--no-store');
    expect(partial.stderr).toMatch(/gone: error: .*no-such-session/);
    const again = await evalRun('two.jsonl', '--resume', 'journal.jsonl', '--no-store');
    expect(again.stderr).toContain('ok: 2/2 scored (resumed)');
    expect(again.stderr).toMatch(/gone: error: .*no-such-session/); // errored items are tried again
  });

  it('runs custom evaluators: a module that scores, one that throws, one that never returns, a prompt rubric', async () => {
    writeFileSync(
      join(dir, 'no-failed-tools.mjs'),
      'export default (s) => ({ value: s.toolCalls.some((c) => c.failed) ? 0 : 1, explanation: `${s.toolCalls.length} tool calls` });\n',
    );
    writeFileSync(join(dir, 'throws.mjs'), 'export default () => { throw new Error("rubric missing"); };\n');
    writeFileSync(join(dir, 'hangs.mjs'), 'export default () => { for (;;) {} };\n');
    writeFileSync(join(dir, 'tone.md'), '# Tone\n\nIs this answer polite?\n\n{{output}}\n');
    writeFileSync(
      join(dir, 'five.jsonl'),
      [0, 1, 2, 3, 4].map((i) => JSON.stringify({ sessionId: sessionId('v1', i) })).join('\n'),
    );
    const t = io(dir);
    const started = Date.now();
    const code = await main(
      [
        'eval',
        'run',
        '--dataset',
        'five.jsonl',
        '--url',
        collector.url,
        '--no-store',
        '--json',
        'custom.json',
        '--module-timeout',
        '1000',
        '--evaluator',
        './no-failed-tools.mjs',
        '--evaluator',
        './throws.mjs',
        '--evaluator',
        './hangs.mjs',
        '--evaluator',
        './tone.md',
      ],
      t.io,
    );
    expect(code, t.out.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(20_000);
    const report = JSON.parse(readFileSync(join(dir, 'custom.json'), 'utf8')) as {
      items: {
        id: string;
        results: { evaluatorId: string; value?: number; errorCode?: string; errorMessage?: string }[];
      }[];
    };
    const first = report.items[0]!.results;
    expect(first.find((r) => r.evaluatorId === 'no-failed-tools')).toMatchObject({ value: 0 }); // session 0 of v1 fails a call
    expect(report.items[1]!.results.find((r) => r.evaluatorId === 'no-failed-tools')).toMatchObject({
      value: 1,
    });
    expect(first.find((r) => r.evaluatorId === 'throws')).toMatchObject({
      errorCode: 'EvaluatorError',
      errorMessage: 'rubric missing',
    });
    expect(first.find((r) => r.evaluatorId === 'hangs')).toMatchObject({ errorCode: 'EvaluatorTimeout' });
    const tone = report.items[1]!.results.find((r) => r.evaluatorId === 'tone');
    expect(tone?.value).toBeGreaterThanOrEqual(0.5);

    const missing = io(dir);
    expect(
      await main(
        ['eval', 'run', '--dataset', 'five.jsonl', '--url', collector.url, '--evaluator', './nope.mjs'],
        missing.io,
      ),
    ).toBe(2);
    expect(missing.out.stderr).toContain('no module at');
  });

  /** One pass of the online rule `ci` (50% of the completed sessions among `wanted`, Helpfulness). */
  const onlineOnce = async (wanted: readonly string[]) => {
    const t = io(dir);
    const filter = `attributes.session.id in [${wanted.map((id) => JSON.stringify(id)).join(', ')}]`;
    const args = ['eval', 'online', '--once', '--since', '2h', '--idle', '0s', '--sampling', '50'];
    const rule = ['--filter', filter, '--evaluator', 'Builtin.Helpfulness', '--name', 'ci'];
    expect(await main([...args, ...rule, '--url', collector.url], t.io), t.out.stderr).toBe(0);
    return t;
  };

  it('evaluates a sampled share of the completed sessions a filter matches (eval online)', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `weather-v3-${String(i).padStart(2, '0')}`);
    const spans = ids.flatMap((id, i) => weatherSession(id, [FORECAST_TURN], 700 + i));
    await fetch(`${collector.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(spansToOtlpJson(spans)),
    });
    for (let i = 0; i < 100; i++) {
      if ((await fetch(`${collector.url}/api/sessions/${ids.at(-1)}`)).ok) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const wanted = ids.slice(0, 10);
    const t = await onlineOnce(wanted);
    const evaluated = t.out.stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' ')[0]);
    const expected = wanted.filter((id) => sampled(id, 50));
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(10);
    expect(evaluated.sort()).toEqual(expected);
    expect(t.out.stdout).toMatch(/Builtin\.Helpfulness=\d\.\d\d/);
  });

  it('a restarted online rule does not evaluate again what it evaluated before', async () => {
    // The rule's run above stored its results (as a restart finds them).
    for (let i = 0; i < 100; i++) {
      const res = await fetch(`${collector.url}/api/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          query: 'filter attributes.agentrt.evaluation.run_id = "online-ci" | limit 1',
        }),
      });
      if (((await res.json()) as { rows: unknown[] }).rows.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const t = await onlineOnce(
      Array.from({ length: 10 }, (_, i) => `weather-v3-${String(i).padStart(2, '0')}`),
    );
    expect(t.out.stdout).toBe(''); // the same process started again judged them all once already
  });

  it('stores online rules in the runtime: create with filters, list, refuse bad fields, delete (eval rules)', async () => {
    const runtime = await createRuntimeServer({
      host: '127.0.0.1',
      port: 0,
      dataDir: join(dir, 'runtime'),
      logSink: () => undefined,
      evaluation: { judge: { provider: 'offline', timeoutMs: 5000 }, collector: { url: collector.url } },
    });
    try {
      const cli = async (...args: string[]) => {
        const t = io(dir);
        const code = await main(['eval', 'rules', ...args, '--url', runtime.url], t.io);
        return { code, ...t.out };
      };
      const rule = ['--name', 'weather_ci', '--service', 'weather', '--evaluator', 'Builtin.Helpfulness'];
      const made = await cli(
        'create',
        ...rule,
        '--sampling',
        '25',
        '--idle',
        '90s',
        '--where',
        'gen_ai.agent.name=weather',
        '--where',
        'gen_ai.usage.output_tokens>10',
      );
      expect(made.code, made.stderr).toBe(0);
      expect(made.stdout).toMatch(/^weather_ci-[a-zA-Z0-9]{10} {2}ENABLED\n$/);
      const listed = await cli('list');
      expect(listed.stdout).toMatch(
        /^weather_ci-\w{10} {2}ENABLED {2}25% {2}idle 90s {2}weather {2}Builtin\.Helpfulness\n$/,
      );

      const unknown = await cli('create', ...rule.slice(0, 4), '--evaluator', 'Builtin.Nope');
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('evaluators[0].evaluatorId');
      const badKey = await cli('create', ...rule, '--where', 'a b=c');
      expect(badKey.code).toBe(1);
      expect(badKey.stderr).toContain('rule.filters[0].key');
      expect((await cli('create', ...rule, '--where', 'tokens>many')).code).toBe(2);
      expect((await cli('create', ...rule)).stderr).toContain('ConflictException');

      expect((await cli('disable', 'weather_ci')).stdout).toMatch(/ {2}disabled\n$/);
      expect((await cli('list')).stdout).toMatch(/^weather_ci-\w{10} {2}DISABLED /);
      expect((await cli('enable', 'weather_ci')).code).toBe(0);
      expect((await cli('list')).stdout).toMatch(/^weather_ci-\w{10} {2}ENABLED /);
      expect((await cli('delete', 'weather_ci')).code).toBe(0);
      expect((await cli('list')).stdout).toBe('');
      expect((await cli('delete', 'weather_ci')).code).toBe(2);
    } finally {
      await runtime.close();
    }
  });
});
