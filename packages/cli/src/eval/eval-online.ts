// `agentrt eval online`: the online evaluation rule, run against a collector — every interval, the
// sessions that completed since the last pass, sampled and filtered, are judged and their scores
// stored; one line per evaluated session. `--once` makes one pass (scripts, tests).
import { createOnlineEvaluator } from '@agentrt/runtime';
import { type CliIO, UsageError, parseCommandArgs } from '../command.js';
import { collectorUrl, parseDurationMs } from '../collector-client.js';
import { evaluationFor, numberFlag } from './eval-service.js';

function duration(raw: string | undefined, name: string, fallbackMs: number): number {
  if (raw === undefined) return fallbackMs;
  try {
    return parseDurationMs(raw, `--${name}`);
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }
}

export async function runOnline(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseCommandArgs({
    args: argv,
    options: {
      evaluator: { type: 'string', multiple: true },
      sampling: { type: 'string' },
      filter: { type: 'string' },
      idle: { type: 'string' },
      interval: { type: 'string' },
      since: { type: 'string' },
      name: { type: 'string' },
      once: { type: 'boolean' },
      url: { type: 'string' },
    },
  });
  const base = collectorUrl(values.url, io);
  const { service, evaluators } = evaluationFor(base, io, values.evaluator ?? []);
  const name = values.name ?? 'default';
  if (!/^[a-zA-Z0-9_-]+$/.test(name)) throw new UsageError('--name may hold letters, digits, _ and - only');
  const rule = {
    name,
    samplingPercent: numberFlag(values.sampling, 'sampling', 0, 100) ?? 100,
    evaluatorIds: evaluators,
    idleMs: duration(values.idle, 'idle', 30_000),
    ...(values.filter ? { filter: values.filter } : {}),
  };
  const intervalMs = duration(values.interval, 'interval', 5_000);
  const online = createOnlineEvaluator(
    service,
    { url: base },
    rule,
    Date.now() - duration(values.since, 'since', 0),
  );
  io.stderr(
    `online rule ${name}: ${rule.samplingPercent}% of sessions idle for ${rule.idleMs} ms, ${evaluators.join(', ')}\n`,
  );
  for (;;) {
    for (const outcome of await online.tick()) {
      const scores = outcome.results.map((r) => `${r.evaluatorId}=${r.errorCode ?? r.value?.toFixed(2)}`);
      io.stdout(`${outcome.id}  ${outcome.error ? `error: ${outcome.error}` : scores.join('  ')}\n`);
    }
    if (values.once) return 0;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
