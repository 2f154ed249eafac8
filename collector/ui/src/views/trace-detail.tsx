/** One trace: summary, waterfall with critical path, span panel. */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { Cost, ErrorBox, Loading, Section, StatusPill, Tokens } from '../components/common.js';
import { ReplayButton } from '../components/replay-button.js';
import { LogList, SpanPanel } from '../components/span-panel.js';
import { Waterfall, type WaterfallViewChange } from '../components/waterfall.js';
import { formatClock, formatDateTime, formatDuration } from '../format.js';
import { tokensByModel } from '../../../src/trace-model/index.js';
import { navigate, useLiveSpans, usePrices } from '../hooks.js';
import { routeHref, type TraceRoute } from '../router.js';
import { streamTrace } from '../trace-stream.js';
import type { TraceView } from '../view-types.js';
import { Card } from './sessions.js';

/**
 * The trace as it streams in (trace-stream.ts): the first records paint at once, the rest fill in
 * (`done` once every record is in). A reload (new spans of the trace arrived live) keeps showing
 * the trace it has until the new one is whole.
 */
function useStreamedTrace(traceId: string): {
  trace?: TraceView;
  done: boolean;
  error?: Error;
  reload: () => void;
} {
  const [state, setState] = useState<{ trace?: TraceView; done: boolean; error?: Error }>({ done: false });
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    const abort = new AbortController();
    streamTrace(
      traceId,
      (trace, done) => setState((prev) => (done || generation === 0 ? { trace, done } : prev)),
      abort.signal,
    ).catch((error: unknown) => {
      if (!abort.signal.aborted)
        setState({ done: true, error: error instanceof Error ? error : new Error(String(error)) });
    });
    return () => abort.abort();
  }, [traceId, generation]);
  return { ...state, reload: () => setGeneration((g) => g + 1) };
}

export function TraceDetailView({ traceId, spanId, filter, root, depth, fold }: Omit<TraceRoute, 'view'>) {
  const state = useStreamedTrace(traceId);
  useLiveSpans((spans) => {
    if (state.done && spans.some((s) => s.traceId === traceId)) state.reload();
  }, 500);
  const prices = usePrices();
  const folding = useMemo(() => ({ depth, fold: fold ?? [] }), [depth, fold?.join(',')]);
  if (state.error) return <ErrorBox error={state.error} retry={state.reload} />;
  if (!state.trace) return <Loading what="trace" />;
  const trace = state.trace;
  const selected = spanId ? trace.spans.find((s) => s.spanId === spanId) : undefined;
  const go = (next: WaterfallViewChange): void =>
    navigate(routeHref({ view: 'trace', traceId, spanId, filter, root, depth, fold, ...next }));
  const select = (id: string | undefined): void => go({ spanId: id });
  const rootSpan = trace.roots[0]?.span;
  const criticalMs = trace.criticalPath.segments.reduce(
    (sum, s) => sum + (s.endTimeUnixNano - s.startTimeUnixNano) / 1e6,
    0,
  );
  const errors = trace.spans.filter((s) => s.status === 'error').length;
  const sessionId = trace.summary.sessionId;
  return (
    <section class="trace-detail">
      <nav class="crumbs">
        <a href={routeHref({ view: 'traces', filters: {} })}>Traces</a>
        {sessionId && (
          <>
            {' '}
            · session <a href={routeHref({ view: 'session', sessionId })}>{sessionId}</a>
          </>
        )}{' '}
        / <span class="mono">{traceId}</span>
      </nav>
      <h1 class="trace-title">
        {rootSpan?.name ?? trace.summary.rootName}
        <StatusPill errors={errors} inProgress={trace.summary.inProgress} />
      </h1>
      <div class="summary-cards">
        <Card label="duration" value={formatDuration(trace.endMs - trace.startMs)} />
        <Card
          label="spans"
          value={
            state.done ? (
              trace.spans.length
            ) : (
              <span data-testid="trace-loading" title="The rest of the trace is arriving.">
                {trace.spans.length}…
              </span>
            )
          }
        />
        <Card label="critical path" value={formatDuration(criticalMs)} />
        <Card label="tokens in / out" value={<Tokens tokens={trace.tokens.total} />} />
        <Card
          label="cost"
          value={<Cost byModel={tokensByModel(trace.roots, trace.tokens)} prices={prices} />}
        />
        <Card label="errors" value={errors} tone={errors > 0 ? 'bad' : undefined} />
        <Card
          label="started"
          value={<span title={formatDateTime(trace.startMs)}>{formatClock(trace.startMs).slice(0, 8)}</span>}
        />
      </div>
      <div class="toolbar">
        <ReplayButton traceId={traceId} />
        <a class="btn ghost" href={routeHref({ view: 'compare', a: traceId })}>
          Compare with…
        </a>
        <a class="btn ghost" data-testid="trace-logs" href={routeHref({ view: 'logs', traceId })}>
          Logs
        </a>
        <a
          class="btn ghost"
          href={routeHref({
            view: 'search',
            query: `filter traceId = "${traceId}" | fields name, durationNano, status.code | sort startTimeUnixNano asc`,
          })}
        >
          Query spans
        </a>
        <a
          class="btn ghost"
          href={`/api/traces/${encodeURIComponent(traceId)}`}
          target="_blank"
          rel="noopener"
        >
          JSON
        </a>
      </div>
      <div class={`trace-body ${selected ? 'with-panel' : ''}`}>
        <Waterfall
          trace={trace}
          selectedSpanId={selected?.spanId}
          onSelect={select}
          filter={filter}
          root={root}
          folding={folding}
          onView={go}
        />
        {selected && (
          <SpanPanel key={selected.spanId} span={selected} trace={trace} onClose={() => select(undefined)} />
        )}
      </div>
      {trace.logs.length > 0 && (
        <div class="trace-logs">
          <Section title="Trace log records (not tied to a span)" count={trace.logs.length}>
            <LogList logs={trace.logs} />
          </Section>
        </div>
      )}
    </section>
  );
}
