// `agentrt eval compare <before.json> <after.json>`: two runs' JSON reports side by side — the mean
// per evaluator and the items whose score moved.
import { type EvalReport, scoreOf } from './eval-report.js';

const fmt = (n: number): string => n.toFixed(3);
const signed = (n: number): string => `${n >= 0 ? '+' : ''}${n.toFixed(3)}`;

function itemScores(report: EvalReport): Map<string, number> {
  const out = new Map<string, number>();
  for (const item of report.items) {
    for (const r of item.results) {
      const key = `${item.id}\t${r.evaluatorId}`;
      out.set(key, (out.get(key) ?? 0) + scoreOf(r));
    }
  }
  return out;
}

export function compareReports(before: EvalReport, after: EvalReport): string {
  const ids = [...new Set([...before.evaluators, ...after.evaluators])];
  const width = Math.max(9, ...ids.map((e) => e.length));
  const lines = [`${'evaluator'.padEnd(width)}  before  after   change`];
  for (const id of ids) {
    const a = before.summary.byEvaluator[id]?.mean;
    const b = after.summary.byEvaluator[id]?.mean;
    const change = a !== undefined && b !== undefined ? signed(b - a) : 'n/a';
    lines.push(
      `${id.padEnd(width)}  ${a === undefined ? '  -  ' : fmt(a)}   ${b === undefined ? '  -  ' : fmt(b)}  ${change}`,
    );
  }
  lines.push(
    `${'mean'.padEnd(width)}  ${fmt(before.summary.mean)}   ${fmt(after.summary.mean)}  ${signed(after.summary.mean - before.summary.mean)}`,
  );
  const was = itemScores(before);
  const moved = [...itemScores(after)].filter(([key, v]) => was.has(key) && was.get(key) !== v);
  lines.push('', moved.length ? `${moved.length} item scores changed:` : 'no item score changed');
  for (const [key, v] of moved) {
    const [item, evaluator] = key.split('\t');
    lines.push(`  ${item}  ${evaluator}  ${fmt(was.get(key)!)} → ${fmt(v)}`);
  }
  return `${lines.join('\n')}\n`;
}
