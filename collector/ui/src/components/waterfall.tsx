/**
 * The waterfall timeline: nested spans to scale, critical path highlighted, collapsible. Only the
 * rows in view are in the page (a 50,000-span trace scrolls like a small one); next / previous
 * error, a filter, collapse / expand all and re-rooting at a span, the last two in the URL.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { CriticalSegment } from '../../../src/trace-model/index.js';
import { niceTicks } from '../chart-model.js';
import { formatDuration } from '../format.js';
import { useListNav } from '../hooks.js';
import type { TraceView } from '../view-types.js';
import { ancestorsOf, nextError, parentIds, rootsAt, visibleRows } from '../waterfall-model.js';
import { KindBadge, Tokens } from './common.js';

/** Every row is this tall (styles.css .wf-row); rows past the window are spacers. */
const ROW_HEIGHT = 30;
const OVERSCAN = 25;

interface WaterfallProps {
  trace: TraceView;
  selectedSpanId?: string;
  onSelect: (spanId: string | undefined) => void;
  /** Shows only spans matching it (a name part, or `key=value`). */
  filter?: string;
  /** Shows only the subtree of this span. */
  root?: string;
  /** A change of the filter or the root (kept in the URL). */
  onView: (view: { filter?: string; root?: string; spanId?: string }) => void;
}

/** The first and last row index in the window (and overscan), following the page's scroll. */
function useRowWindow(count: number): [ref: { current: HTMLDivElement | null }, first: number, last: number] {
  const ref = useRef<HTMLDivElement>(null);
  const [range, setRange] = useState<[number, number]>([0, 60]);
  useEffect(() => {
    const update = (): void => {
      const top = ref.current?.getBoundingClientRect().top ?? 0;
      const first = Math.max(0, Math.floor(-top / ROW_HEIGHT) - OVERSCAN);
      const last = Math.min(count, Math.ceil((innerHeight - top) / ROW_HEIGHT) + OVERSCAN);
      setRange((prev) => (prev[0] === first && prev[1] === last ? prev : [first, last]));
    };
    update();
    addEventListener('scroll', update, { passive: true });
    addEventListener('resize', update);
    return () => {
      removeEventListener('scroll', update);
      removeEventListener('resize', update);
    };
  }, [count]);
  return [ref, range[0], range[1]];
}

export function Waterfall({ trace, selectedSpanId, onSelect, filter, root, onView }: WaterfallProps) {
  const [collapsed, setCollapsed] = useState<Set<string>>(new Set());
  const shownRoots = useMemo(() => rootsAt(trace.roots, root), [trace, root]);
  const baseDepth = shownRoots[0]?.depth ?? 0;
  const rows = useMemo(() => visibleRows(shownRoots, collapsed, filter), [shownRoots, collapsed, filter]);
  const segments = useMemo(() => {
    const bySpan = new Map<string, CriticalSegment[]>();
    for (const seg of trace.criticalPath.segments)
      bySpan.set(seg.spanId, [...(bySpan.get(seg.spanId) ?? []), seg]);
    return bySpan;
  }, [trace]);
  const [listRef, first, last] = useRowWindow(rows.length);
  const totalMs = Math.max(trace.endMs - trace.startMs, 1e-6);
  const rootService = trace.roots[0]?.span.service;
  const toggle = (spanId: string, open?: boolean): void =>
    setCollapsed((prev) => {
      const next = new Set(prev);
      const isOpen = !next.has(spanId);
      if (open ?? !isOpen) next.delete(spanId);
      else next.add(spanId);
      return next;
    });
  const selectedIndex = Math.max(
    0,
    rows.findIndex((r) => r.span.spanId === selectedSpanId),
  );
  const [cursor, setCursor] = useListNav(
    rows.length,
    (i) => onSelect(rows[i]?.span.spanId),
    (e, i) => {
      const row = rows[i];
      if (!row) return false;
      if (e.key === 'ArrowLeft' || e.key === 'h') {
        if (row.children.length > 0 && !collapsed.has(row.span.spanId)) toggle(row.span.spanId, false);
        return true;
      }
      if (e.key === 'ArrowRight' || e.key === 'l') {
        toggle(row.span.spanId, true);
        return true;
      }
      if (e.key === 'Escape') {
        onSelect(undefined);
        return true;
      }
      return false;
    },
  );
  useEffect(() => {
    if (selectedSpanId) setCursor(selectedIndex);
    // Follow the selection (from a link or a click), not the other way round.
  }, [selectedSpanId, selectedIndex, setCursor]);
  useEffect(() => {
    // A selected row out of the window (next error, a link) is scrolled to.
    const i = rows.findIndex((r) => r.span.spanId === selectedSpanId);
    const top = listRef.current?.getBoundingClientRect().top;
    if (i < 0 || top === undefined) return;
    const y = top + i * ROW_HEIGHT;
    if (y < 0 || y > innerHeight - ROW_HEIGHT) scrollBy({ top: y - innerHeight / 3 });
  }, [selectedSpanId, rows, listRef]);
  const goToError = (step: 1 | -1): void => {
    const id = nextError(shownRoots, selectedSpanId, step);
    if (!id) return;
    setCollapsed((prev) => {
      const next = new Set(prev);
      for (const a of ancestorsOf(trace.spans, id)) next.delete(a);
      return next;
    });
    onSelect(id);
  };
  const errorCount = useMemo(() => trace.spans.filter((s) => s.status === 'error').length, [trace]);
  const ticks = niceTicks(totalMs, 5).filter((t) => t <= totalMs * 1.0001);
  const pct = (ms: number): number => Math.min(100, Math.max(0, (ms / totalMs) * 100));

  return (
    <>
      <div class="toolbar wf-tools">
        <input
          type="search"
          class="wf-filter"
          placeholder="filter spans: name, or key=value"
          data-testid="wf-filter"
          value={filter ?? ''}
          onChange={(e) => onView({ filter: (e.target as HTMLInputElement).value || undefined })}
        />
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
          onClick={() => setCollapsed(parentIds(shownRoots))}
        >
          Collapse all
        </button>
        <button
          type="button"
          class="btn ghost"
          data-testid="expand-all"
          onClick={() => setCollapsed(new Set())}
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
          {rows.length} of {trace.spans.length} spans
        </span>
      </div>
      <div class="waterfall" role="tree" aria-label="span waterfall">
        <div class="wf-header">
          <div class="wf-label-col">
            <span>span</span>
            <span class="legend">
              <span class="legend-crit" /> critical path
            </span>
          </div>
          <div class="wf-axis">
            {ticks.map((t) => (
              <span key={t} class="wf-tick" style={{ left: `${pct(t)}%` }}>
                {formatDuration(t)}
              </span>
            ))}
          </div>
        </div>
        <div ref={listRef}>
          <div style={{ height: `${first * ROW_HEIGHT}px` }} />
          {rows.slice(first, last).map((node, k) => {
            const i = first + k;
            const s = node.span;
            const left = pct(s.startMs - trace.startMs);
            const width = Math.max(pct(s.durationMs), 0.15);
            const onPath = trace.criticalPath.spanIds.has(s.spanId);
            const isCollapsed = collapsed.has(s.spanId);
            const rolled = trace.tokens.rolledUp.get(s.spanId);
            const classes = [
              'wf-row',
              s.spanId === selectedSpanId ? 'selected' : '',
              i === cursor ? 'cursor' : '',
              s.status === 'error' ? 'error' : '',
              onPath ? 'critical' : '',
            ].join(' ');
            return (
              <div
                key={s.spanId}
                class={classes}
                role="treeitem"
                aria-level={node.depth - baseDepth + 1}
                aria-expanded={node.children.length > 0 ? !isCollapsed : undefined}
                aria-selected={s.spanId === selectedSpanId}
                data-testid="waterfall-row"
                data-row-index={i}
                data-span-id={s.spanId}
                data-kind={s.genai.kind}
                onClick={() => {
                  setCursor(i);
                  onSelect(s.spanId);
                }}
              >
                <div
                  class="wf-label-col"
                  style={{ paddingLeft: `${8 + Math.min(node.depth - baseDepth, 30) * 16}px` }}
                >
                  {node.children.length > 0 ? (
                    <button
                      class="caret"
                      aria-label={isCollapsed ? 'expand' : 'collapse'}
                      onClick={(e) => {
                        e.stopPropagation();
                        toggle(s.spanId);
                      }}
                    >
                      {isCollapsed ? '▸' : '▾'}
                    </button>
                  ) : (
                    <span class="caret-space" />
                  )}
                  <KindBadge kind={s.genai.kind} />
                  <span class="wf-name" title={s.name}>
                    {s.name}
                  </span>
                  {isCollapsed && <span class="muted small">+{countDescendants(node)}</span>}
                  {s.service !== rootService && <span class="wf-service">{s.service}</span>}
                  {s.status === 'error' && (
                    <span class="err-dot" title={s.statusMessage ?? 'error'}>
                      ●
                    </span>
                  )}
                  {node.orphan &&
                    (s.kind === 'SERVER' || s.kind === 'CONSUMER' ? (
                      <span
                        class="muted small"
                        title="Continues a trace from an upstream caller whose span is not stored here."
                      >
                        continued
                      </span>
                    ) : (
                      <span
                        class="muted small"
                        title="The parent span has not arrived (or was not exported)."
                      >
                        orphan
                      </span>
                    ))}
                  {rolled && (
                    <span class="wf-tokens">
                      <Tokens tokens={rolled} compact />
                    </span>
                  )}
                </div>
                <div class="wf-track">
                  {ticks.map((t) => (
                    <span key={t} class="wf-grid" style={{ left: `${pct(t)}%` }} />
                  ))}
                  <div class={`wf-bar kind-${s.genai.kind}`} style={{ left: `${left}%`, width: `${width}%` }}>
                    {(segments.get(s.spanId) ?? []).map((seg, j) => (
                      <span
                        key={j}
                        class="wf-crit"
                        style={{
                          left: `${((seg.startTimeUnixNano - s.startTimeUnixNano) / 1e6 / Math.max(s.durationMs, 1e-9)) * 100}%`,
                          width: `${((seg.endTimeUnixNano - seg.startTimeUnixNano) / 1e6 / Math.max(s.durationMs, 1e-9)) * 100}%`,
                        }}
                      />
                    ))}
                  </div>
                  <span class="wf-duration" style={{ left: `calc(${left + width}% + 6px)` }}>
                    {formatDuration(s.durationMs)}
                  </span>
                </div>
              </div>
            );
          })}
          <div style={{ height: `${(rows.length - last) * ROW_HEIGHT}px` }} />
        </div>
      </div>
    </>
  );
}

function countDescendants(node: { children: { children: unknown[] }[] }): number {
  let n = 0;
  const stack = [...node.children] as { children: unknown[] }[];
  while (stack.length > 0) {
    const c = stack.pop()!;
    n++;
    stack.push(...(c.children as { children: unknown[] }[]));
  }
  return n;
}
