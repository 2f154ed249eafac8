import { describe, expect, it } from 'vitest';
import {
  type EvalResultView,
  RUNS_QUERY,
  compareRuns,
  runResultsQuery,
  scoreTone,
  toResults,
  toRuns,
  toSessionScores,
} from './evals.js';
import { parseQuery } from '../../src/query/parser.js';

describe('evaluation views', () => {
  it('builds queries the query language parses, quoting the run id', () => {
    expect(() => parseQuery(RUNS_QUERY)).not.toThrow();
    const q = runResultsQuery('run "x"');
    expect(q).toContain('= "run \\"x\\""');
    expect(() => parseQuery(q)).not.toThrow();
  });

  it('turns rows into runs, results and session scores, leaving out what is missing', () => {
    expect(
      toRuns([
        { run: 'r1', results: 4, score: 0.5, errors: 1, started: 10 },
        { run: null, results: 1 },
      ]),
    ).toEqual([{ runId: 'r1', results: 4, score: 0.5, errors: 1, startedMs: 10 }]);
    expect(
      toResults([
        {
          item: 'i',
          evaluator: 'Builtin.Helpfulness',
          session: 's',
          score: 1,
          label: 'Good',
          explanation: null,
          errorCode: null,
        },
      ]),
    ).toEqual([{ itemId: 'i', evaluator: 'Builtin.Helpfulness', sessionId: 's', score: 1, label: 'Good' }]);
    expect([
      ...toSessionScores([
        { session: 's', score: 0.25 },
        { session: 't', score: null },
      ]),
    ]).toEqual([['s', 0.25]]);
    expect([scoreTone(0.8), scoreTone(0.5), scoreTone(0.1)]).toEqual(['good', 'fair', 'poor']);
  });

  it('compares two runs: per-evaluator means and deltas, per-item rows, regressions first', () => {
    const r = (itemId: string, evaluator: string, score?: number, errorCode?: string): EvalResultView => ({
      itemId,
      evaluator,
      sessionId: `s-${itemId}`,
      ...(score === undefined ? {} : { score }),
      ...(errorCode ? { errorCode } : {}),
    });
    const base = [
      r('a', 'H', 0.5),
      r('a', 'H', 1),
      r('b', 'H', 0.5),
      r('c', 'H', 1),
      r('a', 'T', 1),
      r('b', 'T', 1),
    ];
    const run = [
      r('a', 'H', 0.75),
      r('b', 'H', 0.75),
      r('c', 'H', undefined, 'JudgeModelError'),
      r('a', 'T', 1),
      r('b', 'T', 0),
      r('d', 'T', 1),
    ];
    const out = compareRuns(base, run);
    expect(out.evaluators).toEqual([
      { evaluator: 'H', base: 0.75, run: 0.75, delta: 0 },
      { evaluator: 'T', base: 1, run: 2 / 3, delta: 2 / 3 - 1 },
    ]);
    // b: T 1 → 0; c: H errored where the base scored. a's H is a mean of two (0.75 → 0.75).
    expect(out.items.map((i) => [i.itemId, i.regressed])).toEqual([
      ['b', true],
      ['c', true],
      ['a', false],
      ['d', false],
    ]);
    expect(out.items[0]!.cells).toEqual([
      { evaluator: 'H', base: 0.5, run: 0.75, delta: 0.25 },
      { evaluator: 'T', base: 1, run: 0, delta: -1 },
    ]);
    expect(out.items[0]!.sessionId).toBe('s-b');
    expect(out.items[3]!.cells[1]).toEqual({ evaluator: 'T', run: 1 }); // new in the run: no delta
    expect([out.regressions, out.improvements]).toEqual([2, 1]); // d is new: scored where none was
    // The other way round: b (H 0.75 → 0.5) and d (gone) regressed, c (scored again) improved.
    const back = compareRuns(run, base);
    expect([back.regressions, back.improvements]).toEqual([2, 1]);
    expect(back.items.map((i) => i.itemId)).toEqual(['b', 'd', 'a', 'c']);
  });
});
