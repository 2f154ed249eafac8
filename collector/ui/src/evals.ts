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

/** Scores closer than this are the same: a change below it is noise, not a regression. */
export const SCORE_EPSILON = 1e-6;

/** One evaluator's mean score in the base run and in the compared run. */
export interface EvaluatorDelta {
  evaluator: string;
  base?: number;
  run?: number;
  /** run − base, when both have a score. */
  delta?: number;
}

/** One item's (session's) mean score per evaluator in both runs. */
export interface ItemCompare {
  itemId: string;
  sessionId: string;
  /** By evaluator, in `evaluators` order. */
  cells: EvaluatorDelta[];
  /** Some evaluator scored it lower than the base run did, or failed where the base run scored. */
  regressed: boolean;
}

export interface RunCompare {
  evaluators: EvaluatorDelta[];
  items: ItemCompare[];
  regressions: number;
  improvements: number;
}

/** The mean of the scored results; undefined when none has a score. */
function meanScore(results: readonly EvalResultView[]): number | undefined {
  const scores = results.map((r) => r.score).filter((s): s is number => s !== undefined);
  return scores.length ? scores.reduce((a, s) => a + s, 0) / scores.length : undefined;
}

function deltaOf(evaluator: string, base: EvalResultView[], run: EvalResultView[]): EvaluatorDelta {
  const out: EvaluatorDelta = { evaluator };
  const [b, r] = [meanScore(base), meanScore(run)];
  if (b !== undefined) out.base = b;
  if (r !== undefined) out.run = r;
  if (b !== undefined && r !== undefined) out.delta = r - b;
  return out;
}

/** Lower than the base (beyond noise), or no score where the base had one. */
function isRegression(d: EvaluatorDelta): boolean {
  return d.base !== undefined && (d.run === undefined ? true : d.run < d.base - SCORE_EPSILON);
}

/** Higher than the base (beyond noise), or a score where the base had none. */
function isImprovement(d: EvaluatorDelta): boolean {
  return d.run !== undefined && (d.base === undefined || d.run > d.base + SCORE_EPSILON);
}

function groupBy(results: readonly EvalResultView[], key: (r: EvalResultView) => string) {
  const out = new Map<string, EvalResultView[]>();
  for (const r of results) out.set(key(r), [...(out.get(key(r)) ?? []), r]);
  return out;
}

/**
 * Two runs side by side: each evaluator's mean in both and its delta, and each item (matched by
 * item id: a dataset's line or session, the same across re-runs) with its per-evaluator deltas.
 * Items that regressed come first, then the rest in item order.
 */
export function compareRuns(base: readonly EvalResultView[], run: readonly EvalResultView[]): RunCompare {
  const evaluators = [...new Set([...base, ...run].map((r) => r.evaluator))].sort();
  const baseBy = groupBy(base, (r) => r.evaluator);
  const runBy = groupBy(run, (r) => r.evaluator);
  const itemIds = [...new Set([...base, ...run].map((r) => r.itemId))].sort();
  const baseItems = groupBy(base, (r) => r.itemId);
  const runItems = groupBy(run, (r) => r.itemId);
  const items = itemIds.map((itemId): ItemCompare => {
    const [b, r] = [baseItems.get(itemId) ?? [], runItems.get(itemId) ?? []];
    const cells = evaluators.map((e) =>
      deltaOf(
        e,
        b.filter((x) => x.evaluator === e),
        r.filter((x) => x.evaluator === e),
      ),
    );
    const sessionId = (r[0] ?? b[0])?.sessionId ?? '';
    return { itemId, sessionId, cells, regressed: cells.some(isRegression) };
  });
  const improvements = items.filter((i) => !i.regressed && i.cells.some(isImprovement)).length;
  return {
    evaluators: evaluators.map((e) => deltaOf(e, baseBy.get(e) ?? [], runBy.get(e) ?? [])),
    items: [...items.filter((i) => i.regressed), ...items.filter((i) => !i.regressed)],
    regressions: items.filter((i) => i.regressed).length,
    improvements,
  };
}
