/** The spans of one Inspector turn (its trace), beside the chat or the tool call. */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, getTrace } from '../api.js';
import { formatDuration } from '../format.js';
import { useLiveSpans, usePrices } from '../hooks.js';
import { routeHref } from '../router.js';
import type { TraceView } from '../view-types.js';
import { Cost, ErrorBox, KindBadge, Tokens } from './common.js';

/** The spans of one turn's trace, refreshed as the live feed brings more of them. */
export function TurnSpans({ traceId }: { traceId: string }) {
  const [trace, setTrace] = useState<TraceView | undefined>();
  const [error, setError] = useState<Error | undefined>();
  const prices = usePrices();
  const loading = useRef(false);
  const load = useMemo(
    () => async () => {
      if (loading.current) return;
      loading.current = true;
      try {
        setTrace(await getTrace(traceId));
        setError(undefined);
      } catch (e) {
        // The trace's first spans have not arrived yet: the live feed brings them.
        if (!(e instanceof ApiError && e.status === 404)) setError(e as Error);
      } finally {
        loading.current = false;
      }
    },
    [traceId],
  );
  useEffect(() => void load(), [load]);
  useLiveSpans((spans) => {
    if (spans.some((s) => s.traceId === traceId)) void load();
  }, 300);
  if (error) return <ErrorBox error={error} />;
  if (!trace) return <p class="muted">waiting for the turn's spans…</p>;
  return (
    <div data-testid="turn-spans">
      <h2>
        This turn <Tokens tokens={trace.summary.tokens} />{' '}
        <Cost byModel={trace.summary.tokensByModel} prices={prices} />
      </h2>
      <ul class="turn-spans">
        {trace.spans.map((s) => (
          <li key={s.spanId} data-testid="turn-span" class={s.status === 'error' ? 'error' : ''}>
            <KindBadge kind={s.genai.kind} /> {s.name}{' '}
            <span class="muted">{formatDuration(s.durationMs)}</span>
          </li>
        ))}
      </ul>
      <a href={routeHref({ view: 'trace', traceId })} data-testid="full-trace">
        Open the full trace
      </a>
    </div>
  );
}
