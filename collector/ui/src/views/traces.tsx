/** Traces: list with filters (service, status, duration, free text); links to the waterfall. */
import { useState } from 'preact/hooks';
import { listServices, listTraces } from '../api.js';
import { Cost, EmptyState, ErrorBox, Loading, StatusPill, Tokens } from '../components/common.js';
import { formatAgo, formatDateTime, formatDuration, shortId } from '../format.js';
import { navigate, useAsync, useListNav, useLiveSpans, usePrices } from '../hooks.js';
import { routeHref, type TraceFilters } from '../router.js';
import type { TraceSummaryView } from '../view-types.js';
import { KeyHint } from './sessions.js';

export function TracesView({ filters }: { filters: TraceFilters }) {
  const key = JSON.stringify(filters);
  const state = useAsync(() => listTraces(filters), [key]);
  const services = useAsync(listServices, []);
  useLiveSpans(() => {
    state.reload();
    services.reload();
  }, 1000);
  const [picked, setPicked] = useState<string[]>([]);
  const traces = state.data ?? [];
  const open = (i: number): void => {
    const t = traces[i];
    if (t) navigate(routeHref({ view: 'trace', traceId: t.traceId }));
  };
  const [cursor] = useListNav(traces.length, open);
  const pick = (traceId: string): void =>
    setPicked((p) => (p.includes(traceId) ? p.filter((x) => x !== traceId) : [...p, traceId].slice(-2)));
  const filtered = Object.keys(filters).length > 0;

  return (
    <section>
      <h1>Traces {state.data && <span class="count">{traces.length}</span>}</h1>
      <TraceFiltersForm filters={filters} services={services.data ?? []} picked={picked} />
      {state.error ? (
        <ErrorBox error={state.error} retry={state.reload} />
      ) : !state.data ? (
        <Loading what="traces" />
      ) : traces.length === 0 ? (
        filtered ? (
          <div class="state">No trace matches these filters.</div>
        ) : (
          <EmptyState title="No traces yet" />
        )
      ) : (
        <>
          <TracesTable traces={traces} cursor={cursor} open={open} picked={picked} pick={pick} />
          <KeyHint />
        </>
      )}
    </section>
  );
}

/** Goes to the traces list with `patch` applied to its filters (empty ones dropped). */
function setFilter(filters: TraceFilters, patch: Partial<TraceFilters>): void {
  const next: TraceFilters = { ...filters, ...patch };
  for (const k of Object.keys(next) as (keyof TraceFilters)[])
    if (next[k] === undefined || next[k] === '') delete next[k];
  navigate(routeHref({ view: 'traces', filters: next }));
}

/** Service, status, minimum duration, text, probes, the time window; Compare once two are picked. */
function TraceFiltersForm({
  filters,
  services,
  picked,
}: {
  filters: TraceFilters;
  services: { name: string }[];
  picked: string[];
}) {
  const filtered = Object.keys(filters).length > 0;
  return (
    <form
      class="filters"
      onSubmit={(e) => {
        e.preventDefault();
        const q = (e.currentTarget.elements.namedItem('q') as HTMLInputElement).value.trim();
        setFilter(filters, { q: q || undefined });
      }}
    >
      <label>
        service
        <select
          value={filters.service ?? ''}
          onChange={(e) =>
            setFilter(filters, { service: (e.target as HTMLSelectElement).value || undefined })
          }
        >
          <option value="">all</option>
          {services.map((s) => (
            <option key={s.name} value={s.name}>
              {s.name}
            </option>
          ))}
        </select>
      </label>
      <label>
        status
        <select
          value={filters.status ?? ''}
          onChange={(e) =>
            setFilter(filters, {
              status: ((e.target as HTMLSelectElement).value || undefined) as TraceFilters['status'],
            })
          }
        >
          <option value="">all</option>
          <option value="error">errors</option>
          <option value="ok">ok</option>
        </select>
      </label>
      <label>
        min duration
        <select
          value={String(filters.minDurationMs ?? '')}
          onChange={(e) =>
            setFilter(filters, { minDurationMs: Number((e.target as HTMLSelectElement).value) || undefined })
          }
        >
          <option value="">any</option>
          {[10, 100, 500, 1000, 5000, 30000].map((ms) => (
            <option key={ms} value={ms}>
              ≥ {formatDuration(ms)}
            </option>
          ))}
        </select>
      </label>
      <label class="grow">
        text
        <input
          name="q"
          type="search"
          placeholder="root name, trace id, attribute value…"
          value={filters.q ?? ''}
        />
      </label>
      <button class="btn" type="submit">
        Filter
      </button>
      <label
        class="check"
        title="health probes (GET /ping, /healthz …), agentrt doctor checks and the stack's own traffic"
      >
        <input
          type="checkbox"
          data-testid="show-noise"
          checked={filters.noise === 'include'}
          onChange={() => setFilter(filters, { noise: filters.noise === 'include' ? undefined : 'include' })}
        />{' '}
        show probes &amp; internal
      </label>
      {filters.startMs !== undefined && (
        <span class="chip" data-testid="time-window">
          started {formatDateTime(filters.startMs)}
          {filters.endMs !== undefined && <> – {formatDateTime(filters.endMs)}</>}{' '}
          <button
            type="button"
            class="btn ghost"
            aria-label="clear the time window"
            onClick={() => setFilter(filters, { startMs: undefined, endMs: undefined })}
          >
            ×
          </button>
        </span>
      )}
      {filtered && (
        <a class="btn ghost" href={routeHref({ view: 'traces', filters: {} })}>
          Clear
        </a>
      )}
      {picked.length === 2 && (
        <a class="btn primary" href={routeHref({ view: 'compare', a: picked[0], b: picked[1] })}>
          Compare 2 traces
        </a>
      )}
    </form>
  );
}

function TracesTable({
  traces,
  cursor,
  open,
  picked,
  pick,
}: {
  traces: TraceSummaryView[];
  cursor: number;
  open: (i: number) => void;
  picked: string[];
  pick: (traceId: string) => void;
}) {
  const prices = usePrices();
  return (
    <table class="list" data-testid="traces-table">
      <thead>
        <tr>
          <th title="pick two to compare">⇄</th>
          <th>root</th>
          <th>agent</th>
          <th>started</th>
          <th class="num">duration</th>
          <th class="num">spans</th>
          <th>status</th>
          <th class="num">tokens</th>
          <th class="num">cost</th>
          <th>trace</th>
        </tr>
      </thead>
      <tbody>
        {traces.map((t, i) => (
          <tr
            key={t.traceId}
            class={i === cursor ? 'cursor' : ''}
            data-row-index={i}
            data-trace-id={t.traceId}
            onClick={() => open(i)}
          >
            <td onClick={(e) => e.stopPropagation()}>
              <input
                type="checkbox"
                aria-label="pick for comparison"
                checked={picked.includes(t.traceId)}
                onChange={() => pick(t.traceId)}
              />
            </td>
            <td>
              <a href={routeHref({ view: 'trace', traceId: t.traceId })}>
                {t.rootName || '(root not arrived)'}
              </a>
              {t.noise && (
                <span class="pill pill-noise" data-testid="noise-pill">
                  {t.noise}
                </span>
              )}
            </td>
            <td
              data-testid="trace-agent"
              title={t.agent ? `hosted agent, called through ${t.service}` : `service ${t.service}`}
            >
              {t.agent ?? t.service}
            </td>
            <td title={formatDateTime(t.startMs)}>{formatAgo(t.startMs)}</td>
            <td class="num">{formatDuration(t.durationMs)}</td>
            <td class="num">{t.spanCount}</td>
            <td>
              <StatusPill errors={t.errorCount} inProgress={t.inProgress} />
            </td>
            <td class="num">
              <Tokens tokens={t.tokens} />
            </td>
            <td class="num">
              <Cost byModel={t.tokensByModel} prices={prices} />
            </td>
            <td class="mono muted">{shortId(t.traceId)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
