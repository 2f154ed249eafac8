/**
 * Evaluation results in the UI: the query-language queries over the evaluation spans (one span per
 * result, `gen_ai.evaluation.*` and `agentrt.evaluation.*` attributes; docs/evaluations.md) and the
 * rows they return as view types. Pure, so they are tested without a browser.
 */
import type { AttributeValue } from '../../src/wire-types.js';

export interface EvalRunView {
  runId: string;
  results: number;
  /** Mean score of the results that have one; undefined when none has. */
  score?: number;
  errors: number;
  startedMs: number;
}

export interface EvalResultView {
  itemId: string;
  evaluator: string;
  sessionId: string;
  score?: number;
  label?: string;
  explanation?: string;
  errorCode?: string;
  errorMessage?: string;
}

const q = (s: string): string => JSON.stringify(s);
const RESULTS = 'filter ispresent(attributes.gen_ai.evaluation.name)';

/** Every run: its results, mean score, errors and start, newest first. */
export const RUNS_QUERY = `${RESULTS} | stats count(*) as results, avg(attributes.gen_ai.evaluation.score.value) as score, count(attributes.agentrt.evaluation.error_code) as errors, min(@timestamp) as started by attributes.agentrt.evaluation.run_id as run | sort started desc | limit 200`;

/** One run's results, by item. */
export function runResultsQuery(runId: string): string {
  return `${RESULTS} and attributes.agentrt.evaluation.run_id = ${q(runId)} | fields attributes.agentrt.evaluation.item_id as item, attributes.gen_ai.evaluation.name as evaluator, attributes.session.id as session, attributes.gen_ai.evaluation.score.value as score, attributes.gen_ai.evaluation.score.label as label, attributes.gen_ai.evaluation.explanation as explanation, attributes.agentrt.evaluation.error_code as errorCode, attributes.agentrt.evaluation.error_message as errorMessage | sort item asc | limit 5000`;
}

/** The mean score of each session that has evaluation results. */
export const SESSION_SCORES_QUERY = `${RESULTS} | stats avg(attributes.gen_ai.evaluation.score.value) as score, count(*) as results by attributes.session.id as session | limit 10000`;

const num = (v: AttributeValue | undefined): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) ? v : undefined;
const text = (v: AttributeValue | undefined): string | undefined =>
  typeof v === 'string' && v !== '' ? v : undefined;

export function toRuns(rows: readonly Record<string, AttributeValue>[]): EvalRunView[] {
  return rows
    .filter((r) => text(r.run))
    .map((r) => {
      const run: EvalRunView = {
        runId: String(r.run),
        results: num(r.results) ?? 0,
        errors: num(r.errors) ?? 0,
        startedMs: num(r.started) ?? 0,
      };
      const score = num(r.score);
      if (score !== undefined) run.score = score;
      return run;
    });
}

export function toResults(rows: readonly Record<string, AttributeValue>[]): EvalResultView[] {
  return rows.map((r) => {
    const out: EvalResultView = {
      itemId: text(r.item) ?? text(r.session) ?? '',
      evaluator: text(r.evaluator) ?? '',
      sessionId: text(r.session) ?? '',
    };
    const set = <K extends keyof EvalResultView>(key: K, value: EvalResultView[K] | undefined): void => {
      if (value !== undefined) out[key] = value;
    };
    set('score', num(r.score));
    set('label', text(r.label));
    set('explanation', text(r.explanation));
    set('errorCode', text(r.errorCode));
    set('errorMessage', text(r.errorMessage));
    return out;
  });
}

export function toSessionScores(rows: readonly Record<string, AttributeValue>[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of rows) {
    const score = num(r.score);
    if (text(r.session) && score !== undefined) out.set(String(r.session), score);
  }
  return out;
}

/** `good` ≥ 0.75, `fair` ≥ 0.5, else `poor`: the colour of a score. */
export function scoreTone(score: number): 'good' | 'fair' | 'poor' {
  return score >= 0.75 ? 'good' : score >= 0.5 ? 'fair' : 'poor';
}
