/**
 * Evaluations: the runs (an Evaluate call, an `agentrt eval run`), one run's results by item, and
 * two runs compared (per-evaluator deltas, per-item rows, regressions first and marked).
 */
import { useState } from 'preact/hooks';
import { runQuery } from '../api.js';
import { EmptyState, ErrorBox, Loading } from '../components/common.js';
import {
  type EvalResultView,
  type EvaluatorDelta,
  RUNS_QUERY,
  SCORE_EPSILON,
  compareRuns,
  runResultsQuery,
  scoreTone,
  toResults,
  toRuns,
} from '../evals.js';
import { formatAgo, formatDateTime } from '../format.js';
import { useAsync } from '../hooks.js';
import { routeHref } from '../router.js';

export function Score({ score }: { score: number | undefined }) {
  if (score === undefined) return <span class="muted">—</span>;
  return <span class={`score ${scoreTone(score)}`}>{score.toFixed(2)}</span>;
}

/** Picks two runs (the first picked is the base) and links to their compare. */
function ComparePicker({ picked }: { picked: string[] }) {
  if (picked.length < 2)
    return <p class="muted">Tick two runs to compare them (the first ticked is the base).</p>;
  const [base, run] = picked as [string, string];
  return (
    <p>
      <a data-testid="eval-compare-link" href={routeHref({ view: 'eval-compare', base, run })}>
        Compare {run} with {base}
      </a>
    </p>
  );
}

export function EvalsView() {
  const state = useAsync(async () => toRuns((await runQuery(RUNS_QUERY)).rows), []);
  const [picked, setPicked] = useState<string[]>([]);
  const toggle = (runId: string) =>
    setPicked((p) => (p.includes(runId) ? p.filter((x) => x !== runId) : [...p, runId].slice(-2)));
  if (state.error) return <ErrorBox error={state.error} retry={state.reload} />;
  if (!state.data) return <Loading what="evaluation runs" />;
  if (state.data.length === 0)
    return (
      <EmptyState title="No evaluations yet">
        <p>
          Run <code>agentrt eval run --dataset … --evaluator Builtin.Helpfulness</code>, or call the runtime's{' '}
          <code>Evaluate</code> API: results are stored here as evaluation spans.
        </p>
      </EmptyState>
    );
  return (
    <section>
      <h1>
        Evaluation runs <span class="count">{state.data.length}</span>
      </h1>
      <ComparePicker picked={picked} />
      <table class="list" data-testid="eval-runs">
        <thead>
          <tr>
            <th aria-label="compare" />
            <th>run</th>
            <th class="num">results</th>
            <th class="num">mean score</th>
            <th class="num">errors</th>
            <th>started</th>
          </tr>
        </thead>
        <tbody>
          {state.data.map((r) => (
            <tr key={r.runId}>
              <td>
                <input
                  type="checkbox"
                  aria-label={`compare ${r.runId}`}
                  checked={picked.includes(r.runId)}
                  onChange={() => toggle(r.runId)}
                />
              </td>
              <td>
                <a class="mono" href={routeHref({ view: 'eval-run', runId: r.runId })}>
                  {r.runId}
                </a>
              </td>
              <td class="num">{r.results}</td>
              <td class="num">
                <Score score={r.score} />
              </td>
              <td class="num">{r.errors}</td>
              <td title={formatDateTime(r.startedMs)}>{formatAgo(r.startedMs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function ResultRow({ r }: { r: EvalResultView }) {
  return (
    <tr>
      <td class="mono">{r.itemId}</td>
      <td>{r.evaluator}</td>
      <td class="num">
        <Score score={r.score} />
      </td>
      <td>{r.label ?? (r.errorCode ? <span class="pill pill-error">{r.errorCode}</span> : '')}</td>
      <td class="explanation">{r.explanation ?? r.errorMessage ?? ''}</td>
      <td>
        {r.sessionId && (
          <a class="mono" href={routeHref({ view: 'session', sessionId: r.sessionId })}>
            {r.sessionId}
          </a>
        )}
      </td>
    </tr>
  );
}

export function EvalRunView({ runId }: { runId: string }) {
  const state = useAsync(async () => toResults((await runQuery(runResultsQuery(runId))).rows), [runId]);
  if (state.error) return <ErrorBox error={state.error} retry={state.reload} />;
  if (!state.data) return <Loading what="evaluation results" />;
  const scored = state.data.filter((r) => r.score !== undefined);
  const mean = scored.length ? scored.reduce((a, r) => a + r.score!, 0) / scored.length : undefined;
  return (
    <section>
      <nav class="crumbs">
        <a href={routeHref({ view: 'evals' })}>Evaluations</a> / <span class="mono">{runId}</span>
      </nav>
      <h1>
        {state.data.length} results · mean <Score score={mean} />
      </h1>
      <table class="list" data-testid="eval-results">
        <thead>
          <tr>
            <th>item</th>
            <th>evaluator</th>
            <th class="num">score</th>
            <th>label</th>
            <th>explanation</th>
            <th>session</th>
          </tr>
        </thead>
        <tbody>
          {state.data.map((r, i) => (
            <ResultRow key={i} r={r} />
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** A score change: signed, coloured down (worse) or up (better); nothing when unchanged. */
function Delta({ d }: { d: EvaluatorDelta }) {
  if (d.base !== undefined && d.run === undefined) return <span class="delta down">no score</span>;
  if (d.delta === undefined || Math.abs(d.delta) < SCORE_EPSILON) return <span class="muted">±0</span>;
  const sign = d.delta > 0 ? '+' : '−';
  return (
    <span class={`delta ${d.delta > 0 ? 'up' : 'down'}`}>
      {sign}
      {Math.abs(d.delta).toFixed(2)}
    </span>
  );
}

function CompareCell({ d }: { d: EvaluatorDelta }) {
  return (
    <td class="num" data-evaluator={d.evaluator}>
      <Score score={d.base} /> → <Score score={d.run} /> <Delta d={d} />
    </td>
  );
}

/** Two runs side by side: `base` is the reference, `run` the one judged against it. */
export function EvalCompareView({ base, run }: { base: string; run: string }) {
  const state = useAsync(async () => {
    const [b, r] = await Promise.all([runQuery(runResultsQuery(base)), runQuery(runResultsQuery(run))]);
    return compareRuns(toResults(b.rows), toResults(r.rows));
  }, [base, run]);
  if (state.error) return <ErrorBox error={state.error} retry={state.reload} />;
  if (!state.data) return <Loading what="the two runs" />;
  const { evaluators, items, regressions, improvements } = state.data;
  return (
    <section>
      <nav class="crumbs">
        <a href={routeHref({ view: 'evals' })}>Evaluations</a> / compare
      </nav>
      <h1>
        <a class="mono" href={routeHref({ view: 'eval-run', runId: run })}>
          {run}
        </a>{' '}
        against{' '}
        <a class="mono" href={routeHref({ view: 'eval-run', runId: base })}>
          {base}
        </a>
      </h1>
      <p data-testid="eval-compare-summary">
        {items.length} items · <span class="delta down">{regressions} regressed</span> ·{' '}
        <span class="delta up">{improvements} improved</span>
      </p>
      <table class="list" data-testid="eval-compare-evaluators">
        <thead>
          <tr>
            <th>evaluator</th>
            <th class="num">base → run (mean)</th>
          </tr>
        </thead>
        <tbody>
          {evaluators.map((d) => (
            <tr
              key={d.evaluator}
              class={d.delta !== undefined && d.delta < -SCORE_EPSILON ? 'regression' : ''}
            >
              <td>{d.evaluator}</td>
              <CompareCell d={d} />
            </tr>
          ))}
        </tbody>
      </table>
      <table class="list" data-testid="eval-compare-items">
        <thead>
          <tr>
            <th>item</th>
            {evaluators.map((d) => (
              <th key={d.evaluator} class="num">
                {d.evaluator}
              </th>
            ))}
            <th>session</th>
          </tr>
        </thead>
        <tbody>
          {items.map((item) => (
            <tr key={item.itemId} class={item.regressed ? 'regression' : ''}>
              <td class="mono">{item.itemId}</td>
              {item.cells.map((d) => (
                <CompareCell key={d.evaluator} d={d} />
              ))}
              <td>
                {item.sessionId && (
                  <a class="mono" href={routeHref({ view: 'session', sessionId: item.sessionId })}>
                    {item.sessionId}
                  </a>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
