/**
 * `agentrt eval run --runtime`: the reference agent's dataset (examples/sdk-agent/evals) re-run
 * through a real runtime — each input invoked in a new session of the sdk-agent (offline model, the
 * fixture weather API), its spans awaited in the collector, then judged — as the README's CI
 * section runs it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type WeatherApiFixture, startWeatherApiFixture } from '@agentrt/example-models/fixtures';
import { main } from '@agentrt/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, type RuntimeStack, startRuntimeStack } from './runtime-stack.js';

describe('agentrt eval run re-runs a dataset through a runtime', () => {
  let stack: RuntimeStack;
  let weather: WeatherApiFixture;
  beforeAll(async () => {
    weather = await startWeatherApiFixture({ port: 0 });
    stack = await startRuntimeStack({
      name: 'eval_agent',
      environment: {
        AGENTRT_MODEL_PROVIDER: 'offline',
        OTEL_SERVICE_NAME: 'sdk-agent',
        WEATHER_API_BASE_URL: weather.url,
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
      },
      runtime: { sandboxHostPorts: [weather.port] },
    });
  });
  afterAll(async () => {
    await stack?.close();
    await weather?.close();
  });

  it('invokes each input, judges its spans and passes the bar', { timeout: 180_000 }, async () => {
    let stdout = '';
    let stderr = '';
    const io = {
      stdout: (t: string) => (stdout += t),
      stderr: (t: string) => (stderr += t),
      env: {},
      cwd: stack.dir,
    };
    const code = await main(
      [
        'eval',
        'run',
        '--dataset',
        join(REPO_ROOT, 'examples/sdk-agent/evals/weather.jsonl'),
        '--runtime',
        'eval_agent',
        '--runtime-url',
        stack.runtime.url,
        '--url',
        stack.collector.url,
        '--evaluator',
        'Builtin.TrajectoryExactOrderMatch',
        '--evaluator',
        'Builtin.GoalSuccessRate',
        '--fail-under',
        '0.5',
        '--json',
        'eval.json',
        '--wait',
        '60',
      ],
      io,
    );
    const report = JSON.parse(readFileSync(join(stack.dir, 'eval.json'), 'utf8')) as {
      items: {
        id: string;
        sessionId: string;
        error?: string;
        results: { evaluatorId: string; value?: number; explanation?: string }[];
      }[];
    };
    expect(code, stderr).toBe(0);
    for (const item of report.items) {
      expect(item.error, item.id).toBeUndefined();
      expect(item.sessionId).toMatch(/^eval-/);
      const trajectory = item.results.find((r) => r.evaluatorId === 'Builtin.TrajectoryExactOrderMatch');
      expect(trajectory?.value, `${item.id}: ${trajectory?.explanation}`).toBe(1);
    }
  });
});
