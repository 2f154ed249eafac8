/**
 * The `Evaluate` request as the AWS SDK sends it (`POST /evaluations/evaluate/{evaluatorId}`, body
 * `evaluationInput`, `evaluationTarget`, `evaluationReferenceInputs`), checked field by field: a bad
 * one is a ValidationException naming it, as the service answers.
 */
import { validationError } from '../errors.js';

/** The service's evaluator id pattern: a built-in, or a custom evaluator's `<name>-<10 alnum>`. */
const EVALUATOR_ID = /^(Builtin\.[a-zA-Z0-9_-]+|[a-zA-Z][a-zA-Z0-9_-]{0,99}(-[a-zA-Z0-9]{10})?)$/;

export interface SpanContextRef {
  sessionId: string;
  traceId?: string;
  spanId?: string;
}

export interface ReferenceInput {
  context: SpanContextRef;
  expectedResponse?: string;
  assertions?: string[];
  expectedTrajectory?: string[];
}

export interface EvaluationTarget {
  traceIds?: string[];
  spanIds?: string[];
}

export interface EvaluateRequest {
  evaluatorId: string;
  /** The documents given inline; empty when the spans come from the collector by session id. */
  sessionSpans: unknown[];
  target?: EvaluationTarget;
  references: ReferenceInput[];
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function strings(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v !== ''))
    throw validationError(field, 'must be a list of non-empty strings');
  return value as string[];
}

/** A union member: exactly one of `members` set. */
function unionMember(value: unknown, field: string, members: readonly string[]): string {
  if (!isObject(value)) throw validationError(field, `must be an object with one of ${members.join(', ')}`);
  const set = Object.keys(value).filter((k) => value[k] !== undefined && value[k] !== null);
  if (set.length !== 1 || !members.includes(set[0]!))
    throw validationError(field, `must set exactly one of ${members.join(', ')}`);
  return set[0]!;
}

function parseSpanContext(value: unknown, field: string): SpanContextRef {
  unionMember(value, field, ['spanContext']);
  const ctx = (value as Json).spanContext;
  if (!isObject(ctx) || typeof ctx.sessionId !== 'string' || ctx.sessionId === '')
    throw validationError(`${field}.spanContext.sessionId`, 'is required');
  const out: SpanContextRef = { sessionId: ctx.sessionId };
  for (const key of ['traceId', 'spanId'] as const) {
    const v = ctx[key];
    if (v === undefined) continue;
    if (typeof v !== 'string' || v === '')
      throw validationError(`${field}.spanContext.${key}`, 'must be a string');
    out[key] = v.toLowerCase();
  }
  return out;
}

function textContent(value: unknown, field: string): string {
  unionMember(value, field, ['text']);
  const text = (value as Json).text;
  if (typeof text !== 'string') throw validationError(`${field}.text`, 'must be a string');
  return text;
}

function parseReference(value: unknown, field: string): ReferenceInput {
  if (!isObject(value)) throw validationError(field, 'must be an object');
  const ref: ReferenceInput = { context: parseSpanContext(value.context, `${field}.context`) };
  if (value.expectedResponse !== undefined)
    ref.expectedResponse = textContent(value.expectedResponse, `${field}.expectedResponse`);
  if (value.assertions !== undefined) {
    if (!Array.isArray(value.assertions)) throw validationError(`${field}.assertions`, 'must be a list');
    ref.assertions = value.assertions.map((a, i) => textContent(a, `${field}.assertions[${i}]`));
  }
  if (value.expectedTrajectory !== undefined) {
    const t = value.expectedTrajectory;
    if (!isObject(t))
      throw validationError(`${field}.expectedTrajectory`, 'must be an object with toolNames');
    ref.expectedTrajectory =
      t.toolNames === undefined ? [] : strings(t.toolNames, `${field}.expectedTrajectory.toolNames`);
  }
  return ref;
}

function parseTarget(value: unknown): EvaluationTarget {
  const member = unionMember(value, 'evaluationTarget', ['spanIds', 'traceIds']);
  const ids = strings((value as Json)[member], `evaluationTarget.${member}`).map((id) => id.toLowerCase());
  return member === 'spanIds' ? { spanIds: ids } : { traceIds: ids };
}

export function parseEvaluateRequest(evaluatorId: string, body: Json): EvaluateRequest {
  if (!EVALUATOR_ID.test(evaluatorId))
    throw validationError('evaluatorId', `${JSON.stringify(evaluatorId)} is not an evaluator id`);
  if (body.evaluationInput === undefined) throw validationError('evaluationInput', 'is required');
  unionMember(body.evaluationInput, 'evaluationInput', ['sessionSpans']);
  const sessionSpans = (body.evaluationInput as Json).sessionSpans;
  if (!Array.isArray(sessionSpans))
    throw validationError('evaluationInput.sessionSpans', 'must be a list of span documents');
  const refs = body.evaluationReferenceInputs;
  if (refs !== undefined && !Array.isArray(refs))
    throw validationError('evaluationReferenceInputs', 'must be a list');
  const request: EvaluateRequest = {
    evaluatorId,
    sessionSpans,
    references: (refs ?? []).map((r, i) => parseReference(r, `evaluationReferenceInputs[${i}]`)),
  };
  if (body.evaluationTarget !== undefined) request.target = parseTarget(body.evaluationTarget);
  return request;
}
