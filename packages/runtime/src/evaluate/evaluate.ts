/**
 * One evaluator over one session: the units its level names (the session, each turn, each tool
 * call; narrowed by `evaluationTarget`), each scored by a trajectory match or an LLM judge, as the
 * service's `EvaluationResultContent`. A judge that fails or answers garbage gives a result with
 * `errorCode`; nothing here throws for a bad model.
 */
import { validationError } from '../errors.js';
import { type EvaluatorSpec, evaluatorArn } from './catalog.js';
import { type EvaluationTarget, type ReferenceInput, type SpanContextRef } from './evaluate-request.js';
import { type JudgeModel } from './judge/judge-model.js';
import { parseJudgeAnswer } from './judge/parse-answer.js';
import {
  type PromptSource,
  type PromptVariables,
  answerOrMarker,
  describeToolCall,
  describeToolCalls,
  renderPrompt,
} from './judge/prompts.js';
import { type SessionView, type ToolCallView, type TurnView } from './session-spans.js';
import { matchTrajectory } from './trajectory.js';
import { runModuleEvaluator } from './custom/module-evaluator.js';

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

/** `EvaluationResultContent` of the `Evaluate` response. */
export interface EvaluationResult {
  evaluatorArn: string;
  evaluatorId: string;
  evaluatorName: string;
  context: { spanContext: SpanContextRef };
  explanation?: string;
  value?: number;
  label?: string;
  tokenUsage?: TokenUsage;
  errorMessage?: string;
  errorCode?: string;
  ignoredReferenceInputFields?: string[];
}

export interface EvaluationDeps {
  judge: JudgeModel;
  prompts: PromptSource;
  /** A judge call's deadline. */
  judgeTimeoutMs: number;
}

interface Unit {
  context: SpanContextRef;
  turn?: TurnView;
  toolCall?: ToolCallView;
}

type ReferenceField = 'expectedResponse' | 'assertions' | 'expectedTrajectory';
const REFERENCE_FIELDS: readonly ReferenceField[] = ['expectedResponse', 'assertions', 'expectedTrajectory'];

/** The reference fields an evaluator reads; the others come back as `ignoredReferenceInputFields`. */
function usedFields(spec: EvaluatorSpec): ReferenceField[] {
  if (spec.kind === 'trajectory') return ['expectedTrajectory'];
  if (spec.kind === 'module') return [];
  if (spec.kind === 'prompt') return ['expectedResponse', 'assertions'];
  if (spec.id === 'Builtin.GoalSuccessRate') return ['assertions'];
  if (spec.level === 'TRACE') return ['expectedResponse'];
  return [];
}

function unitsOf(spec: EvaluatorSpec, view: SessionView, target: EvaluationTarget | undefined): Unit[] {
  const sessionId = view.sessionId;
  const wanted = (traceId: string, spanId?: string): boolean =>
    (!target?.traceIds || target.traceIds.includes(traceId)) &&
    (!target?.spanIds || (spanId !== undefined && target.spanIds.includes(spanId)));
  if (spec.level === 'SESSION') return [{ context: { sessionId } }];
  if (spec.level === 'TRACE')
    return view.turns
      .filter((t) => wanted(t.traceId, target?.spanIds ? t.spanId : undefined))
      .map((turn) => ({ context: { sessionId, traceId: turn.traceId }, turn }));
  return view.toolCalls
    .filter((c) => wanted(c.traceId, c.spanId))
    .map((toolCall) => ({
      context: { sessionId, traceId: toolCall.traceId, spanId: toolCall.spanId },
      toolCall,
    }));
}

/** The reference input of a unit: one naming its trace, else the session-wide one. */
function referenceFor(unit: Unit, refs: readonly ReferenceInput[]): ReferenceInput | undefined {
  const traceId = unit.context.traceId;
  return (
    (traceId ? refs.find((r) => r.context.traceId === traceId) : undefined) ??
    refs.find((r) => r.context.traceId === undefined)
  );
}

function baseResult(spec: EvaluatorSpec, unit: Unit, ref: ReferenceInput | undefined): EvaluationResult {
  const result: EvaluationResult = {
    evaluatorArn: evaluatorArn(spec.id),
    evaluatorId: spec.id,
    evaluatorName: spec.id,
    context: { spanContext: unit.context },
  };
  const used = usedFields(spec);
  const ignored = REFERENCE_FIELDS.filter((f) => ref?.[f] !== undefined && !used.includes(f));
  if (ignored.length) result.ignoredReferenceInputFields = ignored;
  return result;
}

function trajectoryResult(spec: EvaluatorSpec, view: SessionView, unit: Unit, ref?: ReferenceInput) {
  if (spec.kind !== 'trajectory') throw new TypeError(`${spec.id} is not a trajectory evaluator`);
  if (ref?.expectedTrajectory === undefined)
    throw validationError(
      'evaluationReferenceInputs[].expectedTrajectory',
      `${spec.id} needs an expected trajectory (toolNames) for session ${view.sessionId}`,
    );
  const verdict = matchTrajectory(
    spec.match,
    view.toolCalls.map((c) => c.name),
    ref.expectedTrajectory,
  );
  const tokenUsage: TokenUsage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  return { ...baseResult(spec, unit, ref), ...verdict, tokenUsage };
}

async function moduleResult(spec: EvaluatorSpec, view: SessionView, unit: Unit, ref?: ReferenceInput) {
  if (spec.kind !== 'module') throw new TypeError(`${spec.id} is not a module evaluator`);
  const verdict = await runModuleEvaluator(spec.path, view, spec.timeoutMs);
  const tokenUsage: TokenUsage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  return { ...baseResult(spec, unit, ref), ...verdict, tokenUsage };
}

const dialogue = (turns: readonly TurnView[]): string =>
  turns.length
    ? turns
        .map(
          (t) =>
            `User: ${t.input}\nTool calls: ${describeToolCalls(t.toolCalls)}\nAgent: ${answerOrMarker(t.output)}`,
        )
        .join('\n\n')
    : '(none)';

function promptVariables(view: SessionView, unit: Unit, ref: ReferenceInput | undefined): PromptVariables {
  // A session-level unit reads the last turn as the request and answer.
  const turn =
    unit.turn ??
    view.turns.find((t) => t.traceId === unit.context.traceId) ??
    view.turns[view.turns.length - 1];
  const index = turn ? view.turns.indexOf(turn) : view.turns.length;
  return {
    conversation: dialogue(unit.turn ? view.turns.slice(0, index) : view.turns),
    input: turn?.input ?? '',
    output: answerOrMarker(turn?.output ?? ''),
    tool_calls: describeToolCalls(turn?.toolCalls ?? []),
    tool_call: unit.toolCall ? describeToolCall(unit.toolCall) : '',
    available_tools: [...new Set(view.toolCalls.map((c) => c.name))].join(', ') || '(none)',
    expected_response: ref?.expectedResponse ?? '',
    assertions: (ref?.assertions ?? []).map((a, i) => `${i + 1}. ${a}`).join('\n'),
  };
}

async function judgeResult(
  spec: EvaluatorSpec,
  view: SessionView,
  unit: Unit,
  ref: ReferenceInput | undefined,
  deps: EvaluationDeps,
): Promise<EvaluationResult> {
  const result = baseResult(spec, unit, ref);
  const template =
    spec.kind === 'prompt' ? deps.prompts.withAnswerFormat(spec.template) : deps.prompts.template(spec.id);
  const prompt = renderPrompt(template, promptVariables(view, unit, ref));
  let answer;
  try {
    answer = await deps.judge.complete(prompt, AbortSignal.timeout(deps.judgeTimeoutMs));
  } catch (error) {
    return { ...result, errorCode: 'JudgeModelError', errorMessage: (error as Error).message };
  }
  const { inputTokens, outputTokens } = answer;
  result.tokenUsage = { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens };
  const parsed = parseJudgeAnswer(answer.text);
  if (!parsed.ok)
    return { ...result, errorCode: 'JudgeAnswerUnparseable', errorMessage: parsed.errorMessage };
  return { ...result, value: parsed.value, label: parsed.label, explanation: parsed.explanation };
}

/** Scores every unit of the session the evaluator's level names. */
export async function runEvaluator(
  spec: EvaluatorSpec,
  view: SessionView,
  request: { target?: EvaluationTarget; references: readonly ReferenceInput[] },
  deps: EvaluationDeps,
): Promise<EvaluationResult[]> {
  const units = unitsOf(spec, view, request.target);
  if (units.length === 0) {
    const unit: Unit = { context: { sessionId: view.sessionId } };
    const what = spec.level === 'TOOL_CALL' ? 'tool call' : 'trace';
    return [
      {
        ...baseResult(spec, unit, undefined),
        errorCode: 'NoEvaluationTarget',
        errorMessage: `the spans hold no ${what} to evaluate`,
      },
    ];
  }
  const results: EvaluationResult[] = [];
  for (const unit of units) {
    const ref = referenceFor(unit, request.references);
    results.push(
      spec.kind === 'trajectory'
        ? trajectoryResult(spec, view, unit, ref)
        : spec.kind === 'module'
          ? await moduleResult(spec, view, unit, ref)
          : await judgeResult(spec, view, unit, ref, deps),
    );
  }
  return results;
}
