/**
 * CreateOnlineEvaluationConfig's request, validated field by field (an error names the field the
 * way the SDK's `fieldList` does: `rule.filters[1].operator`), and the record it becomes.
 */
import { validationError } from '../errors.js';
import { type OnlineEvaluationFilter, type OnlineEvaluationRecord } from './store.js';
import { NAME_RE } from './validate.js';

type Body = Record<string, unknown>;

const OPERATORS: readonly OnlineEvaluationFilter['operator'][] = [
  'Equals',
  'NotEquals',
  'GreaterThan',
  'LessThan',
  'GreaterThanOrEqual',
  'LessThanOrEqual',
  'Contains',
  'NotContains',
];
/** A span attribute key as the query language names it (`gen_ai.agent.name`). */
const FILTER_KEY_RE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$/;
const MAX_FILTERS = 20;
const MAX_EVALUATORS = 20;
/** AWS takes whole minutes 1–1440; agentrt also takes fractions down to a second (tests, dev loops). */
const MIN_TIMEOUT_MINUTES = 1 / 60;
const MAX_TIMEOUT_MINUTES = 1440;

const isObject = (v: unknown): v is Body => v !== null && typeof v === 'object' && !Array.isArray(v);

function object(field: string, value: unknown): Body {
  if (value === undefined || value === null) throw validationError(field, 'is required');
  if (!isObject(value)) throw validationError(field, 'must be an object');
  return value;
}

function text(field: string, value: unknown, max: number, re?: RegExp): string {
  if (value === undefined || value === null) throw validationError(field, 'is required');
  if (typeof value !== 'string') throw validationError(field, 'must be a string');
  if (value.length < 1 || value.length > max)
    throw validationError(field, `length ${value.length} is outside 1–${max}`);
  if (re && !re.test(value)) throw validationError(field, `does not match ${re.source}`);
  return value;
}

function number(field: string, value: unknown, min: number, max: number): number {
  if (value === undefined || value === null) throw validationError(field, 'is required');
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max)
    throw validationError(field, `must be a number ${+min.toFixed(4)}–${max}`);
  return value;
}

function list(field: string, value: unknown, min: number, max: number): unknown[] {
  if (value === undefined || value === null) {
    if (min === 0) return [];
    throw validationError(field, 'is required');
  }
  if (!Array.isArray(value)) throw validationError(field, 'must be a list');
  if (value.length < min || value.length > max) throw validationError(field, `must have ${min}–${max} items`);
  return value;
}

function filterValue(field: string, value: unknown, operator: string): OnlineEvaluationFilter['value'] {
  const v = object(field, value);
  const keys = Object.keys(v);
  if (keys.length !== 1)
    throw validationError(field, 'must set exactly one of stringValue, doubleValue, booleanValue');
  const [key] = keys as [string];
  const member = v[key];
  const kind = { stringValue: 'string', doubleValue: 'number', booleanValue: 'boolean' }[key];
  if (!kind) throw validationError(field, `unknown member ${key}`);
  if (typeof member !== kind || (kind === 'number' && !Number.isFinite(member)))
    throw validationError(`${field}.${key}`, `must be a ${kind}`);
  if (kind === 'string' && (member as string).length > 1024)
    throw validationError(`${field}.${key}`, 'is longer than 1024 characters');
  const ordered = /Than/.test(operator);
  if ((ordered && kind !== 'number') || (/Contains/.test(operator) && kind !== 'string'))
    throw validationError(field, `${operator} takes a ${ordered ? 'doubleValue' : 'stringValue'}`);
  return { [key]: member };
}

function filter(field: string, value: unknown): OnlineEvaluationFilter {
  const f = object(field, value);
  const key = text(`${field}.key`, f.key, 256, FILTER_KEY_RE);
  const operator = f.operator as OnlineEvaluationFilter['operator'];
  if (!OPERATORS.includes(operator))
    throw validationError(`${field}.operator`, `must be one of ${OPERATORS.join(', ')}`);
  return { key, operator, value: filterValue(`${field}.value`, f.value, operator) };
}

function serviceNames(value: unknown): string[] {
  const source = object('dataSourceConfig', value);
  if (Object.keys(source).some((k) => k !== 'cloudWatchLogs'))
    throw validationError('dataSourceConfig', 'must set cloudWatchLogs, its only member');
  const logs = object('dataSourceConfig.cloudWatchLogs', source.cloudWatchLogs);
  const field = 'dataSourceConfig.cloudWatchLogs.serviceNames';
  return list(field, logs.serviceNames, 1, 20).map((n, i) => text(`${field}[${i}]`, n, 256));
}

type RuleFields = Pick<OnlineEvaluationRecord, 'samplingPercentage' | 'filters' | 'sessionTimeoutMinutes'>;

function parseRule(value: unknown): RuleFields {
  const rule = object('rule', value);
  const sampling = object('rule.samplingConfig', rule.samplingConfig);
  const session = object('rule.sessionConfig', rule.sessionConfig);
  return {
    samplingPercentage: number(
      'rule.samplingConfig.samplingPercentage',
      sampling.samplingPercentage,
      0.01,
      100,
    ),
    filters: list('rule.filters', rule.filters, 0, MAX_FILTERS).map((f, i) =>
      filter(`rule.filters[${i}]`, f),
    ),
    sessionTimeoutMinutes: number(
      'rule.sessionConfig.sessionTimeoutMinutes',
      session.sessionTimeoutMinutes,
      MIN_TIMEOUT_MINUTES,
      MAX_TIMEOUT_MINUTES,
    ),
  };
}

function parseEvaluators(value: unknown, knownEvaluator: (evaluatorId: string) => void): string[] {
  return list('evaluators', value, 1, MAX_EVALUATORS).map((e, i) => {
    const ref = object(`evaluators[${i}]`, e);
    const evaluatorId = text(`evaluators[${i}].evaluatorId`, ref.evaluatorId, 256);
    try {
      knownEvaluator(evaluatorId);
    } catch {
      throw validationError(`evaluators[${i}].evaluatorId`, `no evaluator ${JSON.stringify(evaluatorId)}`);
    }
    return evaluatorId;
  });
}

const description = (body: Body) =>
  body.description === undefined ? {} : { description: text('description', body.description, 200) };

/** The record a Create request makes; `knownEvaluator` throws for an id no evaluator answers. */
export function parseOnlineEvaluationConfig(
  body: Body,
  id: (name: string) => { id: string; arn: string },
  knownEvaluator: (evaluatorId: string) => void,
): OnlineEvaluationRecord {
  const name = text('onlineEvaluationConfigName', body.onlineEvaluationConfigName, 48, NAME_RE);
  const fields = { ...description(body), ...parseRule(body.rule) };
  const evaluatorIds = parseEvaluators(body.evaluators, knownEvaluator);
  const serviceNamesOf = serviceNames(body.dataSourceConfig);
  text('evaluationExecutionRoleArn', body.evaluationExecutionRoleArn, 2048);
  if (typeof body.enableOnCreate !== 'boolean')
    throw validationError('enableOnCreate', 'is required: true or false');
  const at = new Date().toISOString();
  return {
    ...id(name),
    name,
    ...fields,
    serviceNames: serviceNamesOf,
    evaluatorIds,
    executionStatus: body.enableOnCreate ? 'ENABLED' : 'DISABLED',
    createdAt: at,
    updatedAt: at,
  };
}

/** The record an Update request makes of `record`: the fields it gives replace the record's. */
export function parseOnlineEvaluationUpdate(
  body: Body,
  record: OnlineEvaluationRecord,
  knownEvaluator: (evaluatorId: string) => void,
): OnlineEvaluationRecord {
  const status = body.executionStatus;
  if (status !== undefined && status !== 'ENABLED' && status !== 'DISABLED')
    throw validationError('executionStatus', 'must be ENABLED or DISABLED');
  if (body.evaluationExecutionRoleArn !== undefined)
    text('evaluationExecutionRoleArn', body.evaluationExecutionRoleArn, 2048);
  return {
    ...record,
    ...description(body),
    ...(body.rule !== undefined ? parseRule(body.rule) : {}),
    ...(body.evaluators !== undefined
      ? { evaluatorIds: parseEvaluators(body.evaluators, knownEvaluator) }
      : {}),
    ...(body.dataSourceConfig !== undefined ? { serviceNames: serviceNames(body.dataSourceConfig) } : {}),
    ...(status !== undefined ? { executionStatus: status } : {}),
    updatedAt: new Date(Math.max(Date.now(), Date.parse(record.updatedAt) + 1)).toISOString(),
  };
}

/** A value as a query-language literal (its string syntax escapes only `\\`, quotes, \\n and \\t). */
function literal(v: OnlineEvaluationFilter['value']): string {
  if (v.stringValue === undefined) return String(v.doubleValue ?? v.booleanValue);
  const escaped = v.stringValue.replace(/[\\"]/g, '\\$&').replace(/\n/g, '\\n').replace(/\t/g, '\\t');
  return `"${escaped}"`;
}

/** A rule's filters as one query-language filter over span attributes (undefined: none). */
export function filtersToQuery(filters: readonly OnlineEvaluationFilter[]): string | undefined {
  const ops: Record<OnlineEvaluationFilter['operator'], string> = {
    Equals: '=',
    NotEquals: '!=',
    GreaterThan: '>',
    LessThan: '<',
    GreaterThanOrEqual: '>=',
    LessThanOrEqual: '<=',
    Contains: 'like',
    NotContains: 'not like',
  };
  const parts = filters.map((f) => `attributes.${f.key} ${ops[f.operator]} ${literal(f.value)}`);
  return parts.length ? parts.join(' and ') : undefined;
}
