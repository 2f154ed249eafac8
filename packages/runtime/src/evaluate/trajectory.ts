/**
 * The three programmatic trajectory evaluators: the tool names the session called (in time order)
 * against the expected ones. Pure and deterministic: the same spans give the same bytes.
 */
import { type TrajectoryMatch } from './catalog.js';

export interface TrajectoryVerdict {
  value: number;
  label: 'Yes' | 'No';
  explanation: string;
}

/** Is `expected` a subsequence of `actual` (extras allowed between and around)? */
function inOrder(actual: readonly string[], expected: readonly string[]): boolean {
  let next = 0;
  for (const name of actual) if (next < expected.length && name === expected[next]) next++;
  return next === expected.length;
}

/** Does `actual` hold every expected name, as many times as expected, in any order? */
function anyOrder(actual: readonly string[], expected: readonly string[]): boolean {
  const left = new Map<string, number>();
  for (const name of actual) left.set(name, (left.get(name) ?? 0) + 1);
  return expected.every((name) => {
    const n = left.get(name) ?? 0;
    left.set(name, n - 1);
    return n > 0;
  });
}

const exact = (actual: readonly string[], expected: readonly string[]): boolean =>
  actual.length === expected.length && actual.every((name, i) => name === expected[i]);

const RULES: Record<TrajectoryMatch, { test: typeof exact; rule: string }> = {
  exact: { test: exact, rule: 'the same tools in the same order, nothing else' },
  'in-order': { test: inOrder, rule: 'the expected tools in this order, others allowed between' },
  'any-order': { test: anyOrder, rule: 'every expected tool, in any order, others allowed' },
};

const list = (names: readonly string[]): string =>
  names.length ? `[${names.join(', ')}]` : '[] (no tool call)';

export function matchTrajectory(
  match: TrajectoryMatch,
  actual: readonly string[],
  expected: readonly string[],
): TrajectoryVerdict {
  const { test, rule } = RULES[match];
  const ok = test(actual, expected);
  return {
    value: ok ? 1 : 0,
    label: ok ? 'Yes' : 'No',
    explanation: `${ok ? 'Match' : 'No match'} (${rule}): called ${list(actual)}, expected ${list(expected)}.`,
  };
}
