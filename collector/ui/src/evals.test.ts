import { describe, expect, it } from 'vitest';
import { RUNS_QUERY, runResultsQuery, scoreTone, toResults, toRuns, toSessionScores } from './evals.js';
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
});
