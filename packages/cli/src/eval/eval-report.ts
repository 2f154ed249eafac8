// What `agentrt eval run` reports: per evaluator the mean score, the run's mean, the JSON report
// (the input of `agentrt eval compare`) and JUnit XML for CI. An errored result scores 0: a judge
// that fails must not lift the mean. A level with nothing to judge (a tool-call evaluator on a
// session without tool calls, `NoEvaluationTarget`) does not count either way (JUnit: skipped).
import type { EvaluationResult, ItemOutcome } from '@agentrt/runtime';

export interface EvaluatorSummary {
  mean: number;
  results: number;
  errors: number;
}

export interface EvalReport {
  runId: string;
  dataset: string;
  evaluators: string[];
  judge: { provider: string; modelId: string };
  failUnder?: number;
  summary: {
    mean: number;
    passed: boolean;
    items: number;
    erroredItems: number;
    byEvaluator: Record<string, EvaluatorSummary>;
  };
  items: ItemOutcome[];
}

/** The score a result counts for in means. */
export const scoreOf = (r: EvaluationResult): number => (r.errorCode || r.value === undefined ? 0 : r.value);
const NOTHING_TO_JUDGE = 'NoEvaluationTarget';
const counted = (r: EvaluationResult): boolean => r.errorCode !== NOTHING_TO_JUDGE;
const mean = (xs: readonly number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

export function summarize(
  items: readonly ItemOutcome[],
  evaluators: readonly string[],
  failUnder: number | undefined,
): EvalReport['summary'] {
  const byEvaluator: Record<string, EvaluatorSummary> = {};
  const all = items.flatMap((i) => i.results).filter(counted);
  for (const id of evaluators) {
    const own = all.filter((r) => r.evaluatorId === id);
    byEvaluator[id] = {
      mean: mean(own.map(scoreOf)),
      results: own.length,
      errors: own.filter((r) => r.errorCode).length,
    };
  }
  const erroredItems = items.filter((i) => i.error).length;
  // An item without results counts as one 0 per evaluator.
  const scores = [...all.map(scoreOf), ...Array<number>(erroredItems * evaluators.length).fill(0)];
  const overall = mean(scores);
  return {
    mean: overall,
    passed: failUnder === undefined || overall >= failUnder,
    items: items.length,
    erroredItems,
    byEvaluator,
  };
}

const fmt = (n: number): string => n.toFixed(3);

export function summaryText(report: EvalReport): string {
  const s = report.summary;
  const width = Math.max(9, ...report.evaluators.map((e) => e.length));
  const rows = report.evaluators.map((id) => {
    const e = s.byEvaluator[id]!;
    return `${id.padEnd(width)}  ${fmt(e.mean)}  ${String(e.results).padStart(7)}  ${String(e.errors).padStart(6)}`;
  });
  const bar =
    report.failUnder === undefined
      ? ''
      : ` (fail under ${fmt(report.failUnder)}: ${s.passed ? 'passed' : 'FAILED'})`;
  return [
    `${'evaluator'.padEnd(width)}  mean   results  errors`,
    ...rows,
    `mean ${fmt(s.mean)} over ${s.items} items, ${s.erroredItems} errored${bar}`,
    '',
  ].join('\n');
}

const xml = (text: string): string =>
  text.replace(
    /[<>&"']/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!,
  );

function testCase(item: ItemOutcome, evaluatorId: string, failUnder: number | undefined): string {
  const name = `name="${xml(item.id)}" classname="${xml(evaluatorId)}"`;
  if (item.error) return `    <testcase ${name}><error message="${xml(item.error)}"/></testcase>`;
  const all = item.results.filter((r) => r.evaluatorId === evaluatorId);
  const results = all.filter(counted);
  if (all.length > 0 && results.length === 0)
    return `    <testcase ${name}><skipped message="${xml(all[0]!.errorMessage ?? NOTHING_TO_JUDGE)}"/></testcase>`;
  const errored = results.find((r) => r.errorCode);
  if (errored)
    return `    <testcase ${name}><error type="${xml(errored.errorCode!)}" message="${xml(errored.errorMessage ?? '')}"/></testcase>`;
  const score = mean(results.map(scoreOf));
  const why = results
    .map((r) => r.explanation ?? '')
    .filter(Boolean)
    .join('\n');
  const out = why ? `<system-out>${xml(why)}</system-out>` : '';
  if (failUnder !== undefined && score < failUnder)
    return `    <testcase ${name}><failure message="score ${fmt(score)} is under ${fmt(failUnder)}"/>${out}</testcase>`;
  return `    <testcase ${name}>${out}</testcase>`;
}

/** One testsuite per evaluator, one testcase per dataset item. */
export function junitXml(report: EvalReport): string {
  const suites = report.evaluators.map((id) => {
    const cases = report.items.map((item) => testCase(item, id, report.failUnder));
    const failures = cases.filter((c) => c.includes('<failure')).length;
    const errors = cases.filter((c) => c.includes('<error')).length;
    return `  <testsuite name="${xml(id)}" tests="${cases.length}" failures="${failures}" errors="${errors}">\n${cases.join('\n')}\n  </testsuite>`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="agentrt eval ${xml(report.runId)}">\n${suites.join('\n')}\n</testsuites>\n`;
}
