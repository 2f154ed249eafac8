/** Live: spans as they arrive (server-sent events), grouped by trace, unfinished traces marked. */
import { useContext, useEffect, useState } from 'preact/hooks';
import { EmptyState, KindBadge } from '../components/common.js';
import { formatClock, formatDuration, shortId } from '../format.js';
import { LiveContext, useLiveSpans } from '../hooks.js';
import { routeHref } from '../router.js';
import type { SpanView } from '../view-types.js';

interface LiveTrace {
  traceId: string;
  spans: SpanView[];
  root?: SpanView;
  lastMs: number;
}

function group(spans: SpanView[]): LiveTrace[] {
  const byId = new Map<string, LiveTrace>();
  for (const s of spans) {
    const t = byId.get(s.traceId) ?? { traceId: s.traceId, spans: [], lastMs: 0 };
    byId.set(s.traceId, t);
    t.spans.push(s);
    if (!s.parentSpanId) t.root = s;
    t.lastMs = Math.max(t.lastMs, s.startMs + s.durationMs);
  }
  return [...byId.values()].sort((a, b) => b.lastMs - a.lastMs);
}

export function LiveView() {
  const feed = useContext(LiveContext);
  const [spans, setSpans] = useState<SpanView[]>(() => feed?.recent() ?? []);
  useLiveSpans(() => setSpans(feed?.recent() ?? []));
  // Spans that arrived between the first render and the (deferred) subscription above.
  useEffect(() => setSpans(feed?.recent() ?? []), [feed]);
  const traces = group(spans).slice(0, 100);
  return (
    <section>
      <h1>
        Live <span class="count">{spans.length} spans since this page opened</span>
      </h1>
      {traces.length === 0 ? (
        <EmptyState title="Waiting for spans…">
          <p>This page updates by itself as soon as the collector receives spans.</p>
        </EmptyState>
      ) : (
        <div class="live-list" data-testid="live-list">
          {traces.map((t) => (
            <div
              key={t.traceId}
              class={`live-trace ${t.root ? '' : 'in-progress'}`}
              data-trace-id={t.traceId}
            >
              <div class="live-head">
                <a href={routeHref({ view: 'trace', traceId: t.traceId })}>
                  {t.root?.name ?? 'trace in progress'}
                </a>
                <span class="mono muted">{shortId(t.traceId)}</span>
                {t.root ? (
                  <span>{formatDuration(t.root.durationMs)}</span>
                ) : (
                  <span class="pill pill-live" title="The root span has not ended yet">
                    <span class="pulse" /> in progress
                  </span>
                )}
                <span class="muted">
                  {t.spans.length} span{t.spans.length === 1 ? '' : 's'}
                </span>
              </div>
              <ul class="live-spans">
                {[...t.spans]
                  .sort((a, b) => b.startMs + b.durationMs - (a.startMs + a.durationMs))
                  .slice(0, 8)
                  .map((s) => (
                    <li key={s.spanId} data-testid="live-span" class={s.status === 'error' ? 'err' : ''}>
                      <span class="muted mono">{formatClock(s.startMs + s.durationMs)}</span>{' '}
                      <KindBadge kind={s.genai.kind} />{' '}
                      <a href={routeHref({ view: 'trace', traceId: s.traceId, spanId: s.spanId })}>
                        {s.name}
                      </a>{' '}
                      <span class="muted">
                        {s.service} · {formatDuration(s.durationMs)}
                      </span>
                    </li>
                  ))}
              </ul>
            </div>
          ))}
        </div>
      )}
    </section>
  );
}
