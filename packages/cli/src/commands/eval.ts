import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { QueryResponse } from '@agentrt/collector';
import {
  BUILTIN_EVALUATORS,
  type DatasetItem,
  type ItemOutcome,
  readDatasetFile,
  runBatch,
  sessionItems,
} from '@agentrt/runtime';
import { type CliIO, type Command, UsageError, parseCommandArgs } from '../command.js';
import { collectorJson, collectorUrl } from '../collector-client.js';
import { compareReports } from '../eval/eval-compare.js';
import { type EvalReport, junitXml, summarize, summaryText } from '../eval/eval-report.js';
import { createRerun } from '../eval/eval-rerun.js';
import { runOnline } from '../eval/eval-online.js';
import { runRules } from '../eval/eval-rules.js';
import { evaluationFor, numberFlag } from '../eval/eval-service.js';

const usage = `Usage: agentrt eval run --dataset <d> --evaluator <id>… [--fail-under <score>] [--junit <file>]
                        [--json <file>] [--concurrency <n>] [--resume <journal>] [--no-store]
                        [--runtime <name|arn>] [--runtime-url <url>] [--wait <s>] [--url <collector>]
       agentrt eval online --evaluator <id>… [--sampling <percent>] [--filter <q>] [--idle <d>]
                           [--interval <d>] [--since <d>] [--name <rule>] [--once] [--url <collector>]
       agentrt eval rules create --name <n> --service <name>… --evaluator <id>… [--sampling <p>]
                              [--idle <d>] [--where <key=value>…] [--disabled] [--url <runtime>]
       agentrt eval rules list | enable <rule> | disable <rule> | delete <rule> [--url <runtime>]
       agentrt eval compare <before.json> <after.json>
       agentrt eval list

Scores a dataset of agent sessions with AgentCore's evaluators (docs/evaluations.md), locally: the
spans come from the collector, the LLM judges from AGENTRT_JUDGE_PROVIDER (default: the offline
judge, deterministic and without network). Exits 1 when the mean score is under --fail-under.
  --dataset <d>        a JSONL file (one item a line: sessionId, spans or input; expectedTrajectory,
                       expectedResponse, assertions), sessions:<id>,<id>…, or query:<filter> (the
                       sessions of the spans a query-language filter matches)
  --evaluator <id>     Builtin.* id (repeat for several; \`agentrt eval list\` names them), or a
                       custom evaluator file: a .js/.mjs module whose default export scores the
                       session ({ value, label, explanation }), or a .md LLM prompt with its rubric
  --module-timeout <ms>  a custom module's deadline per session (default 10000)
  --fail-under <x>     the bar for the run's mean score (0–1); an errored result scores 0
  --junit <file>       JUnit XML: a testsuite per evaluator, a testcase per item
  --json <file>        the whole report (input of \`agentrt eval compare\`)
  --concurrency <n>    items evaluated at once (default 4)
  --resume <journal>   JSONL journal of finished items: a rerun with it skips them
  --no-store           do not store results in the collector as evaluation spans
  --runtime <name>     re-run items that have an input through this runtime (name, id or ARN)
  --runtime-url <url>  the runtime (default $AGENTRT_RUNTIME_URL or http://127.0.0.1:8787)
  --wait <s>           how long a re-run's spans may take to reach the collector (default 30)
  --url <url>          the collector (default $AGENTRT_COLLECTOR_URL or http://127.0.0.1:4318)

online: a rule that evaluates a share of new sessions as they complete, until Ctrl-C
  --sampling <p>       percent of sessions evaluated (default 100; the same sessions every time)
  --filter <q>         only sessions with a span this query-language filter matches
  --idle <d>           a session is complete after this long without a span (default 30s)
  --interval <d>       how often the collector is read (default 5s)
  --since <d>          also sessions active this long before the start (default: only new ones)
  --name <rule>        the rule's name; results are stored as run online-<name> (default default)
  --once               one pass, then exit

rules: online rules stored in the runtime and run by it (they outlive a restart; sessions that ended
while it was down are judged once it is back). The runtime must read a collector (AGENTRT_COLLECTOR_URL).
  --service <name>     sessions with spans of this service.name (repeat for several)
  --idle <d>           a session is complete after this long without a span (default 15m)
  --where <k=v>        only sessions with a span whose attribute k matches (also != > < >= <= ~ !~;
                       ~ is contains); repeat: all must hold on one span
  --url <url>          the runtime (default $AGENTRT_RUNTIME_URL or http://127.0.0.1:8787)`;

const DEFAULT_CONCURRENCY = 4;

/** The sessions of the spans a query-language filter matches. */
async function querySessions(base: string, filter: string): Promise<string[]> {
  const query = `filter ${filter} and ispresent(attributes.session.id) | stats count(*) by attributes.session.id as session`;
  const out = await collectorJson<QueryResponse>(base, '/api/query', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  return out.rows.map((r) => String(r.session)).sort();
}

async function datasetItems(spec: string, base: string, io: CliIO): Promise<DatasetItem[]> {
  if (spec.startsWith('sessions:'))
    return sessionItems(spec.slice('sessions:'.length).split(',').filter(Boolean));
  if (spec.startsWith('query:')) {
    const ids = await querySessions(base, spec.slice('query:'.length));
    if (ids.length === 0) throw new Error(`no session matches ${spec}`);
    return sessionItems(ids);
  }
  return readDatasetFile(resolve(io.cwd, spec));
}

function progressLine(done: number, total: number, outcome: ItemOutcome): string {
  const scored = outcome.results.filter((r) => r.value !== undefined && !r.errorCode);
  const state = outcome.error
    ? `error: ${outcome.error}`
    : `${scored.length}/${outcome.results.length} scored${outcome.resumed ? ' (resumed)' : ''}`;
  return `[${done}/${total}] ${outcome.id}: ${state}\n`;
}

async function run(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseCommandArgs({
    args: argv,
    options: {
      dataset: { type: 'string' },
      evaluator: { type: 'string', multiple: true },
      'fail-under': { type: 'string' },
      'module-timeout': { type: 'string' },
      junit: { type: 'string' },
      json: { type: 'string' },
      concurrency: { type: 'string' },
      resume: { type: 'string' },
      'no-store': { type: 'boolean' },
      runtime: { type: 'string' },
      'runtime-url': { type: 'string' },
      wait: { type: 'string' },
      url: { type: 'string' },
    },
  });
  if (!values.dataset) throw new UsageError('give --dataset');
  const failUnder = numberFlag(values['fail-under'], 'fail-under', 0, 1);
  const concurrency = numberFlag(values.concurrency, 'concurrency', 1, 256) ?? DEFAULT_CONCURRENCY;
  const base = collectorUrl(values.url, io);
  // The runtime's reading of the judge and collector settings, so `eval run` judges as Evaluate does.
  const timeoutMs = numberFlag(values['module-timeout'], 'module-timeout', 1, 3_600_000);
  const { service, evaluators } = evaluationFor(base, io, values.evaluator ?? [], timeoutMs);
  const items = await datasetItems(values.dataset, base, io);
  const runId = `eval-${new Date().toISOString().replace(/[:.]/g, '-')}-${randomBytes(3).toString('hex')}`;
  io.stderr(
    `run ${runId}: ${items.length} items × ${evaluators.length} evaluators, judge ${service.deps.judge.provider}\n`,
  );
  const outcomes = await runBatch({
    service,
    items,
    evaluatorIds: evaluators,
    concurrency,
    runId,
    store: !values['no-store'],
    ...(values.resume ? { journalPath: resolve(io.cwd, values.resume) } : {}),
    ...(values.runtime
      ? {
          rerun: createRerun({
            runtimeUrl: values['runtime-url'] ?? io.env.AGENTRT_RUNTIME_URL ?? 'http://127.0.0.1:8787',
            agent: values.runtime,
            collectorUrl: base,
            waitSeconds: numberFlag(values.wait, 'wait', 0, 3600) ?? 30,
            ...(io.env.AGENTRT_API_KEY ? { apiKey: io.env.AGENTRT_API_KEY } : {}),
          }),
        }
      : {}),
    onProgress: ({ done, total, outcome }) => io.stderr(progressLine(done, total, outcome)),
    onWarning: (message) => io.stderr(`warning: ${message}\n`),
  });
  const { provider, modelId } = service.deps.judge;
  const report: EvalReport = {
    runId,
    dataset: values.dataset,
    evaluators,
    judge: { provider, modelId },
    ...(failUnder !== undefined ? { failUnder } : {}),
    summary: summarize(outcomes, evaluators, failUnder),
    items: outcomes,
  };
  if (values.json) writeReport(resolve(io.cwd, values.json), `${JSON.stringify(report, null, 2)}\n`);
  if (values.junit) writeReport(resolve(io.cwd, values.junit), junitXml(report));
  io.stdout(summaryText(report));
  return report.summary.passed ? 0 : 1;
}

function readReport(path: string): EvalReport {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as EvalReport;
  } catch (error) {
    throw new Error(`${path}: not an eval report (${(error as Error).message})`, { cause: error });
  }
}

export const evalCommand: Command = {
  name: 'eval',
  summary: 'score sessions with AgentCore evaluators (Builtin.*): run a dataset, compare runs',
  usage,
  async run(argv, io) {
    const [sub, ...rest] = argv;
    if (sub === 'run') return run(rest, io);
    if (sub === 'online') return runOnline(rest, io);
    if (sub === 'rules') return runRules(rest, io);
    if (sub === 'list') {
      for (const e of BUILTIN_EVALUATORS)
        io.stdout(`${e.id.padEnd(34)} ${e.level.padEnd(9)} ${e.description}\n`);
      return 0;
    }
    if (sub === 'compare') {
      if (rest.length !== 2) throw new UsageError('compare takes two JSON reports (--json of two runs)');
      io.stdout(compareReports(readReport(resolve(io.cwd, rest[0]!)), readReport(resolve(io.cwd, rest[1]!))));
      return 0;
    }
    throw new UsageError(
      sub
        ? `unknown subcommand ${JSON.stringify(sub)}`
        : 'give a subcommand: run, online, rules, compare or list',
    );
  },
};

/** A report file, its folder made first (`--json .data/eval.json` on a fresh clone). */
function writeReport(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}
