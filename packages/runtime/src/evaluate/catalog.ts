/**
 * The built-in evaluators AgentCore's `Evaluate` answers for: thirteen LLM judges and three
 * programmatic trajectory matches. The level says what one result covers: the whole session, one
 * trace (a request and its answer) or one tool call.
 */
export type EvaluationLevel = 'SESSION' | 'TRACE' | 'TOOL_CALL';

export type TrajectoryMatch = 'exact' | 'in-order' | 'any-order';

export type EvaluatorSpec =
  | { id: string; level: EvaluationLevel; kind: 'judge'; description: string }
  | { id: string; level: 'SESSION'; kind: 'trajectory'; match: TrajectoryMatch; description: string }
  /** Custom: an LLM judge with the user's prompt and rubric (custom/custom-evaluators.ts). */
  | { id: string; level: EvaluationLevel; kind: 'prompt'; template: string; description: string }
  /** Custom: a JavaScript module's function of the session, in a thread with a deadline. */
  | { id: string; level: 'SESSION'; kind: 'module'; path: string; timeoutMs: number; description: string };

const judge = (id: string, level: EvaluationLevel, description: string): EvaluatorSpec => ({
  id,
  level,
  kind: 'judge',
  description,
});
const trajectory = (id: string, match: TrajectoryMatch, description: string): EvaluatorSpec => ({
  id,
  level: 'SESSION',
  kind: 'trajectory',
  match,
  description,
});

export const BUILTIN_EVALUATORS: readonly EvaluatorSpec[] = [
  judge('Builtin.GoalSuccessRate', 'SESSION', 'the conversation met the user goals'),
  judge('Builtin.Helpfulness', 'TRACE', 'the answer is useful to the user'),
  judge('Builtin.Correctness', 'TRACE', 'the facts in the answer are right'),
  judge('Builtin.Faithfulness', 'TRACE', 'the answer is supported by the context and tool results'),
  judge('Builtin.Harmfulness', 'TRACE', 'the answer holds harmful content (1 = harmless)'),
  judge('Builtin.Stereotyping', 'TRACE', 'the answer generalizes about groups of people (1 = none)'),
  judge('Builtin.Refusal', 'TRACE', 'the agent refused a request it should have answered (1 = no refusal)'),
  judge('Builtin.Coherence', 'TRACE', 'the answer is logically coherent'),
  judge('Builtin.ResponseRelevance', 'TRACE', 'the answer addresses the request'),
  judge('Builtin.Conciseness', 'TRACE', 'the answer is brief without missing what matters'),
  judge('Builtin.InstructionFollowing', 'TRACE', 'the agent followed its instructions'),
  judge('Builtin.ToolSelectionAccuracy', 'TOOL_CALL', 'the agent picked the right tool'),
  judge('Builtin.ToolParameterAccuracy', 'TOOL_CALL', 'the tool call carries the right arguments'),
  trajectory('Builtin.TrajectoryExactOrderMatch', 'exact', 'same tools, same order, nothing else'),
  trajectory('Builtin.TrajectoryInOrderMatch', 'in-order', 'the expected tools in order; extras allowed'),
  trajectory(
    'Builtin.TrajectoryAnyOrderMatch',
    'any-order',
    'the expected tools in any order; extras allowed',
  ),
];

const BY_ID = new Map(BUILTIN_EVALUATORS.map((e) => [e.id, e]));

export function builtinEvaluator(id: string): EvaluatorSpec | undefined {
  return BY_ID.get(id);
}

/** The ARN AgentCore gives a built-in evaluator (built-ins belong to no region or account). */
export function evaluatorArn(id: string): string {
  return `arn:aws:bedrock-agentcore:::evaluator/${id}`;
}
