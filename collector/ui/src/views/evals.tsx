/** Evaluations: the runs (an Evaluate call, an `agentrt eval run`) and one run's results by item. */
import { runQuery } from '../api.js';
import { EmptyState, ErrorBox, Loading } from '../components/common.js';
import { RUNS_QUERY, type EvalResultView, runResultsQuery, scoreTone, toResults, toRuns } from '../evals.js';
import { formatAgo, formatDateTime } from '../format.js';
import { useAsync } from '../hooks.js';
import { routeHref } from '../router.js';

export function Score({ score }: { score: number | undefined }) {
  if (score === undefined) return <span class="muted">—</span>;
  return <span class={`score ${scoreTone(score)}`}>{score.toFixed(2)}</span>;
}

export function EvalsView() {
  const state = useAsync(async () => toRuns((await runQuery(RUNS_QUERY)).rows), []);
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
      <table class="list" data-testid="eval-runs">
        <thead>
          <tr>
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
