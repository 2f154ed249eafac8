/**
 * The judges' prompts: one Markdown file per evaluator under `prompts/evaluators/` in this package
 * (`Helpfulness.md` for `Builtin.Helpfulness`), followed by `_answer-format.md`, which asks for the
 * JSON answer the parser reads. A folder given as `promptsDir` (AGENTRT_EVAL_PROMPTS_DIR) replaces
 * any of them file by file. `{{name}}` placeholders are filled from the judged spans.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ToolCallView } from '../session-spans.js';

/** Shown where the agent gave no answer; the offline judge scores it 0. */
export const NO_ANSWER = '[no answer]';
/** Shown after a failed tool call; the offline judge scores the turn 0.25. */
export const TOOL_FAILED = '(tool call failed)';
export const ANSWER_FORMAT_FILE = '_answer-format.md';

/** `prompts/evaluators/` of the package, from src/evaluate/judge or dist/evaluate/judge alike. */
export const PACKAGED_PROMPTS_DIR = fileURLToPath(new URL('../../../prompts/evaluators/', import.meta.url));

export type PromptVariables = Record<string, string>;

export interface PromptSource {
  /** The template of a built-in evaluator (`Builtin.` dropped from the file name). */
  template(evaluatorId: string): string;
  /** A custom prompt evaluator's own text, with the answer format every judge gets. */
  withAnswerFormat(prompt: string): string;
}

export function createPromptSource(promptsDir?: string): PromptSource {
  const cache = new Map<string, string>();
  const read = (file: string): string => {
    let text = cache.get(file);
    if (text === undefined) {
      const own = promptsDir ? join(promptsDir, file) : undefined;
      text = readFileSync(own && existsSync(own) ? own : join(PACKAGED_PROMPTS_DIR, file), 'utf8');
      cache.set(file, text);
    }
    return text;
  };
  const withAnswerFormat = (prompt: string): string => `${prompt.trimEnd()}\n\n${read(ANSWER_FORMAT_FILE)}`;
  return {
    template: (id) => withAnswerFormat(read(`${id.replace(/^Builtin\./, '')}.md`)),
    withAnswerFormat,
  };
}

/** Fills `{{name}}` placeholders; an unknown name becomes empty. */
export function renderPrompt(template: string, variables: PromptVariables): string {
  return template.replace(/\{\{\s*([a-z_]+)\s*\}\}/g, (_, name: string) => variables[name] ?? '');
}

const json = (value: unknown): string => (typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));

export function describeToolCall(call: ToolCallView): string {
  const args = call.arguments === undefined ? '' : ` arguments ${json(call.arguments)}`;
  const result = call.result === undefined ? '' : ` → ${json(call.result)}`;
  return `${call.name}${args}${result}${call.failed ? ` ${TOOL_FAILED}` : ''}`;
}

export function describeToolCalls(calls: readonly ToolCallView[]): string {
  return calls.length ? calls.map((c, i) => `${i + 1}. ${describeToolCall(c)}`).join('\n') : '(none)';
}

export const answerOrMarker = (text: string): string => (text.trim() ? text : NO_ANSWER);
