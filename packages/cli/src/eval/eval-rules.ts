// `agentrt eval rules create|list|enable|disable|delete`: online evaluation rules stored in the runtime (its
// CreateOnlineEvaluationConfig API), which runs them — they outlive the CLI and a runtime restart.
import { type CliIO, UsageError, parseCommandArgs } from '../command.js';
import { parseDurationMs } from '../collector-client.js';
import { clientFrom } from '../commands/runtime.js';
import { numberFlag } from './eval-service.js';

type RuntimeClient = ReturnType<typeof clientFrom>;

const CLIENT_OPTIONS = { url: { type: 'string' }, 'api-key': { type: 'string' } } as const;
const WHERE_RE = /^([^=!<>~]+)(=|!=|>=|<=|>|<|~|!~)(.*)$/;
const OPERATORS: Record<string, string> = {
  '=': 'Equals',
  '!=': 'NotEquals',
  '>': 'GreaterThan',
  '<': 'LessThan',
  '>=': 'GreaterThanOrEqual',
  '<=': 'LessThanOrEqual',
  '~': 'Contains',
  '!~': 'NotContains',
};

/** `--where key=value` (also != > < >= <= ~ !~) as a rule filter; `>`… compare numbers. */
function whereFilter(text: string) {
  const m = WHERE_RE.exec(text);
  if (!m) throw new UsageError(`--where takes key=value (or != > < >= <= ~ !~), got '${text}'`);
  const [, key, op, raw] = m as unknown as [string, string, string, string];
  const numeric = /[<>]/.test(op);
  if (numeric && !Number.isFinite(Number(raw)))
    throw new UsageError(`--where ${key}${op}: a number, got '${raw}'`);
  return {
    key: key.trim(),
    operator: OPERATORS[op]!,
    value: numeric ? { doubleValue: Number(raw) } : { stringValue: raw },
  };
}

async function create(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseCommandArgs({
    args: argv,
    options: {
      ...CLIENT_OPTIONS,
      name: { type: 'string' },
      evaluator: { type: 'string', multiple: true },
      service: { type: 'string', multiple: true },
      sampling: { type: 'string' },
      idle: { type: 'string' },
      where: { type: 'string', multiple: true },
      disabled: { type: 'boolean' },
    },
  });
  if (!values.name) throw new UsageError('--name is required');
  if (!values.evaluator?.length) throw new UsageError('give at least one --evaluator');
  if (!values.service?.length) throw new UsageError('give at least one --service (the agent’s service.name)');
  let idleMs = 15 * 60_000;
  try {
    if (values.idle) idleMs = parseDurationMs(values.idle, '--idle');
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }
  const created = await clientFrom(values, io).createOnlineEvaluation({
    onlineEvaluationConfigName: values.name,
    rule: {
      samplingConfig: { samplingPercentage: numberFlag(values.sampling, 'sampling', 0.01, 100) ?? 100 },
      sessionConfig: { sessionTimeoutMinutes: idleMs / 60_000 },
      filters: (values.where ?? []).map(whereFilter),
    },
    dataSourceConfig: { cloudWatchLogs: { logGroupNames: [], serviceNames: values.service } },
    evaluators: values.evaluator.map((evaluatorId) => ({ evaluatorId })),
    evaluationExecutionRoleArn: 'arn:aws:iam::123456789012:role/AgentRuntimeLocal',
    enableOnCreate: !values.disabled,
  });
  io.stdout(`${created.onlineEvaluationConfigId}  ${created.executionStatus}\n`);
  return 0;
}

async function list(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseCommandArgs({ args: argv, options: CLIENT_OPTIONS });
  const client = clientFrom(values, io);
  for (const summary of await client.onlineEvaluations()) {
    const r = await client.onlineEvaluation(summary.onlineEvaluationConfigId);
    const evaluators = r.evaluators.map((e) => e.evaluatorId).join(',');
    const idle = `${+(r.rule.sessionConfig.sessionTimeoutMinutes * 60).toFixed(1)}s`;
    io.stdout(
      `${r.onlineEvaluationConfigId}  ${r.executionStatus}  ${r.rule.samplingConfig.samplingPercentage}%  idle ${idle}  ${r.dataSourceConfig.cloudWatchLogs.serviceNames.join(',')}  ${evaluators}\n`,
    );
  }
  return 0;
}

/** A rule by id, or by name when exactly one rule has it. */
async function resolveRule(client: RuntimeClient, ref: string): Promise<string> {
  const found = (await client.onlineEvaluations()).find(
    (r) => r.onlineEvaluationConfigId === ref || r.onlineEvaluationConfigName === ref,
  );
  if (!found)
    throw new UsageError(`no online evaluation rule ${JSON.stringify(ref)} (agentrt eval rules list)`);
  return found.onlineEvaluationConfigId;
}

/** `delete`, `enable` or `disable` of one rule, by name or id. */
async function onOne(verb: 'delete' | 'enable' | 'disable', argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseCommandArgs({
    args: argv,
    options: CLIENT_OPTIONS,
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw new UsageError(`${verb} takes one rule: its name or id`);
  const client = clientFrom(values, io);
  const id = await resolveRule(client, positionals[0]!);
  if (verb === 'delete') await client.deleteOnlineEvaluation(id);
  else
    await client.updateOnlineEvaluation(id, { executionStatus: verb === 'enable' ? 'ENABLED' : 'DISABLED' });
  io.stdout(`${id}  ${verb}d\n`);
  return 0;
}

export function runRules(argv: string[], io: CliIO): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === 'create') return create(rest, io);
  if (sub === 'list') return list(rest, io);
  if (sub === 'delete' || sub === 'enable' || sub === 'disable') return onOne(sub, rest, io);
  throw new UsageError('eval rules takes create, list, enable, disable or delete');
}
