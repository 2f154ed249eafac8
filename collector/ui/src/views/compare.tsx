/** Two traces side by side: duration, model vs tool time, token deltas, step differences. */
import { useState } from 'preact/hooks';
import { getTrace } from '../api.js';
import { ErrorBox, Loading } from '../components/common.js';
import { compareTraces, type TraceFigures } from '../compare.js';
import { formatCount, formatDuration, shortId } from '../format.js';
import { navigate, useAsync } from '../hooks.js';
import { routeHref } from '../router.js';
import type { TraceView } from '../view-types.js';

export function CompareView({ a, b }: { a?: string; b?: string }) {
  const [ia, setIa] = useState(a ?? '');
  const [ib, setIb] = useState(b ?? '');
  const state = useAsync(
    async (): Promise<[TraceView, TraceView] | undefined> =>
      a && b ? Promise.all([getTrace(a), getTrace(b)]) : undefined,
    [a, b],
  );
  return (
    <section>
      <h1>Compare traces</h1>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          navigate(routeHref({ view: 'compare', a: ia.trim() || undefined, b: ib.trim() || undefined }));
        }}
      >
        <label class="grow">
          trace A
          <input
            value={ia}
            onInput={(e) => setIa(e.currentTarget.value)}
            placeholder="trace id"
            class="mono"
          />
        </label>
        <label class="grow">
          trace B
          <input
            value={ib}
            onInput={(e) => setIb(e.currentTarget.value)}
            placeholder="trace id"
            class="mono"
          />
        </label>
        <button class="btn primary" type="submit">
          Compare
        </button>
      </form>
      {!(a && b) ? (
        <p class="muted">
          Paste two trace ids, or tick two traces in the{' '}
          <a href={routeHref({ view: 'traces', filters: {} })}>Traces</a> list.
        </p>
      ) : state.error ? (
        <ErrorBox error={state.error} retry={state.reload} />
      ) : !state.data ? (
        <Loading what="traces" />
      ) : (
        <Comparison a={state.data[0]} b={state.data[1]} />
      )}
    </section>
  );
}

function Delta({
  a,
  b,
  format,
  lowerIsBetter = true,
}: {
  a: number;
  b: number;
  format: (n: number) => string;
  lowerIsBetter?: boolean;
}) {
  const d = b - a;
  if (d === 0) return <span class="muted">=</span>;
  const better = lowerIsBetter ? d < 0 : d > 0;
  const pct = a !== 0 ? ` (${d > 0 ? '+' : ''}${Math.round((d / a) * 100)}%)` : '';
  return (
    <span class={better ? 'delta good' : 'delta bad'}>
      {d > 0 ? '+' : '−'}
      {format(Math.abs(d))}
      {pct}
    </span>
  );
}

const ROWS: { label: string; get: (f: TraceFigures) => number; format: (n: number) => string }[] = [
  { label: 'duration', get: (f) => f.durationMs, format: formatDuration },
  { label: 'model time (chat spans)', get: (f) => f.modelMs, format: formatDuration },
  { label: 'tool time', get: (f) => f.toolMs, format: formatDuration },
  { label: 'model calls', get: (f) => f.modelCalls, format: formatCount },
  { label: 'tool calls', get: (f) => f.toolCalls, format: formatCount },
  { label: 'spans', get: (f) => f.spanCount, format: formatCount },
  { label: 'errors', get: (f) => f.errorCount, format: formatCount },
  { label: 'input tokens', get: (f) => f.tokens.input, format: formatCount },
  { label: 'output tokens', get: (f) => f.tokens.output, format: formatCount },
  { label: 'total tokens', get: (f) => f.tokens.total, format: formatCount },
];

function Comparison({ a, b }: { a: TraceView; b: TraceView }) {
  const c = compareTraces(a, b);
  const title = (t: TraceView) => (
    <a href={routeHref({ view: 'trace', traceId: t.summary.traceId })}>
      {t.roots[0]?.span.name ?? t.summary.rootName}{' '}
      <span class="mono muted">{shortId(t.summary.traceId)}</span>
    </a>
  );
  return (
    <>
      <table class="list compare-table plain-head" data-testid="compare-table">
        <thead>
          <tr>
            <th />
            <th>A · {title(a)}</th>
            <th>B · {title(b)}</th>
            <th>B − A</th>
          </tr>
        </thead>
        <tbody>
          {ROWS.map((r) => (
            <tr key={r.label}>
              <th>{r.label}</th>
              <td class="num">{r.format(r.get(c.a))}</td>
              <td class="num">{r.format(r.get(c.b))}</td>
              <td class="num">
                <Delta a={r.get(c.a)} b={r.get(c.b)} format={r.format} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Steps</h2>
      <table class="list steps-table" data-testid="steps-table">
        <thead>
          <tr>
            <th />
            <th>step</th>
            <th class="num">A</th>
            <th class="num">B</th>
            <th class="num">B − A</th>
          </tr>
        </thead>
        <tbody>
          {c.steps.map((s, i) => (
            <tr key={i} class={`step-${s.change}`}>
              <td class="step-mark">
                {s.change === 'same' ? '' : s.change === 'only-a' ? '− A only' : '+ B only'}
              </td>
              <td>{s.label}</td>
              <td class="num">{s.aMs !== undefined ? formatDuration(s.aMs) : ''}</td>
              <td class="num">{s.bMs !== undefined ? formatDuration(s.bMs) : ''}</td>
              <td class="num">
                {s.aMs !== undefined && s.bMs !== undefined && (
                  <Delta a={s.aMs} b={s.bMs} format={formatDuration} />
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
