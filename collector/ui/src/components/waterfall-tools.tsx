/**
 * The waterfall's toolbar: the span filter (its draft kept while the view re-renders), next and
 * previous error, folding (collapse all, expand to a depth, expand all) and re-rooting.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { WaterfallViewChange } from './waterfall.js';

const DEPTHS = [1, 2, 3, 4, 5];
/** A pause in typing this long puts the filter in the URL (Enter does at once). */
const FILTER_PAUSE_MS = 400;

/**
 * The filter box. What is typed is its own state until it goes to the URL (a pause, Enter or
 * leaving the box): the waterfall renders again as it scrolls or as a trace streams in, and a box
 * bound to the URL's filter lost what was typed since at each of those.
 */
function FilterBox({
  filter,
  onFilter,
}: {
  filter: string | undefined;
  onFilter: (f: string | undefined) => void;
}) {
  const [draft, setDraft] = useState(filter ?? '');
  // The box follows the URL when it changes elsewhere (a link, back), not the echo of its own
  // commit (typing may have gone on meanwhile).
  const committed = useRef(filter);
  useEffect(() => {
    if (filter !== committed.current) setDraft(filter ?? '');
    committed.current = filter;
  }, [filter]);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const commit = (value: string): void => {
    clearTimeout(timer.current);
    if ((value || undefined) === filter) return;
    committed.current = value || undefined;
    onFilter(value || undefined);
  };
  useEffect(() => () => clearTimeout(timer.current), []);
  return (
    <input
      type="search"
      class="wf-filter"
      placeholder="filter spans: name, or key=value"
      data-testid="wf-filter"
      value={draft}
      onInput={(e) => {
        const value = (e.target as HTMLInputElement).value;
        setDraft(value);
        clearTimeout(timer.current);
        timer.current = setTimeout(() => commit(value), FILTER_PAUSE_MS);
      }}
      onChange={(e) => commit((e.target as HTMLInputElement).value)}
    />
  );
}

/** The toolbar: filter, next / previous error, folding, re-root, and the row count. */
export function WaterfallTools(props: {
  filter: string | undefined;
  root: string | undefined;
  selectedSpanId: string | undefined;
  errorCount: number;
  shown: number;
  total: number;
  depth: number | undefined;
  onView: (view: WaterfallViewChange) => void;
  goToError: (step: 1 | -1) => void;
}) {
  const { filter, root, selectedSpanId, errorCount, onView, goToError } = props;
  return (
    <div class="toolbar wf-tools">
      <FilterBox filter={filter} onFilter={(f) => onView({ filter: f })} />
      <button
        type="button"
        class="btn ghost"
        data-testid="prev-error"
        disabled={!errorCount}
        onClick={() => goToError(-1)}
      >
        ↑ error
      </button>
      <button
        type="button"
        class="btn ghost"
        data-testid="next-error"
        disabled={!errorCount}
        onClick={() => goToError(1)}
      >
        ↓ next error
      </button>
      <button
        type="button"
        class="btn ghost"
        data-testid="collapse-all"
        onClick={() => onView({ depth: 0, fold: undefined })}
      >
        Collapse all
      </button>
      <select
        class="wf-depth"
        data-testid="wf-depth"
        aria-label="expand to depth"
        value={props.depth === undefined || props.depth === 0 ? '' : String(props.depth)}
        onChange={(e) => {
          const v = (e.target as HTMLSelectElement).value;
          onView({ depth: v ? Number(v) : undefined, fold: undefined });
        }}
      >
        <option value="">expand to depth…</option>
        {DEPTHS.map((d) => (
          <option key={d} value={String(d)}>
            depth {d}
          </option>
        ))}
      </select>
      <button
        type="button"
        class="btn ghost"
        data-testid="expand-all"
        onClick={() => onView({ depth: undefined, fold: undefined })}
      >
        Expand all
      </button>
      {root ? (
        <button
          type="button"
          class="btn ghost"
          data-testid="unroot"
          onClick={() => onView({ root: undefined })}
        >
          Whole trace
        </button>
      ) : (
        <button
          type="button"
          class="btn ghost"
          data-testid="reroot"
          disabled={!selectedSpanId}
          onClick={() => onView({ root: selectedSpanId, spanId: selectedSpanId })}
        >
          Re-root at selected
        </button>
      )}
      <span class="muted small" data-testid="wf-count">
        {props.shown} of {props.total} spans
      </span>
    </div>
  );
}
