/**
 * The waterfall timeline: nested spans to scale, critical path highlighted, collapsible. Only the
 * rows in view are in the page (a 50,000-span trace scrolls like a small one); next / previous
 * error, a filter, collapse / expand all and re-rooting at a span, the last two in the URL.
 */
import { Component } from 'preact';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { CriticalSegment, SpanTreeNode } from '../../../src/trace-model/index.js';
import type { TokenTotals } from '../../../src/wire-types.js';
import { niceTicks } from '../chart-model.js';
import { formatDuration } from '../format.js';
import { useListNav } from '../hooks.js';
import type { SpanView, TraceView } from '../view-types.js';
import {
  ancestorsOf,
  closedIds,
  findNode,
  type Folding,
  nextError,
  rootsAt,
  toggled,
  visibleRows,
} from '../waterfall-model.js';
import { KindBadge, Tokens } from './common.js';
import { WaterfallTools } from './waterfall-tools.js';

/** Every row is this tall (styles.css .wf-row); rows past the window are spacers. */
const ROW_HEIGHT = 30;
const OVERSCAN = 8;

interface WaterfallProps {
  trace: TraceView;
  selectedSpanId?: string;
  onSelect: (spanId: string | undefined) => void;
  /** Shows only spans matching it (a name part, or `key=value`). */
  filter?: string;
  /** Shows only the subtree of this span. */
  root?: string;
  /** Which spans are closed. */
  folding: Folding;
  /** A change of the filter, the root or the folding (kept in the URL). */
  onView: (view: WaterfallViewChange) => void;
}

export interface WaterfallViewChange {
  filter?: string | undefined;
  root?: string | undefined;
  spanId?: string | undefined;
  depth?: number | undefined;
  fold?: string[] | undefined;
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

/** The critical path's segments of each span, indexed once per trace. */
function useSegments(trace: TraceView): Map<string, CriticalSegment[]> {
  return useMemo(() => {
    const bySpan = new Map<string, CriticalSegment[]>();
    for (const seg of trace.criticalPath.segments) {
      const list = bySpan.get(seg.spanId);
      if (list) list.push(seg);
      else bySpan.set(seg.spanId, [seg]);
    }
    return bySpan;
  }, [trace]);
}

export function Waterfall({
  trace,
  selectedSpanId,
  onSelect,
  filter,
  root,
  folding,
  onView,
}: WaterfallProps) {
  const shownRoots = useMemo(() => rootsAt(trace.roots, root), [trace, root]);
  const baseDepth = shownRoots[0]?.depth ?? 0;
  const collapsed = useMemo(() => closedIds(shownRoots, folding), [shownRoots, folding]);
  const rows = useMemo(() => visibleRows(shownRoots, collapsed, filter), [shownRoots, collapsed, filter]);
  const segments = useSegments(trace);
  const [listRef, first, last] = useRowWindow(rows.length);
  const fold = (f: Folding): void =>
    onView({ depth: f.depth, fold: f.fold.length ? [...f.fold] : undefined });
  const toggle = (node: Node, open?: boolean): void =>
    fold(toggled(folding, node.span.spanId, node.depth - baseDepth, open));
  const selectedIndex = useMemo(
    () =>
      Math.max(
        0,
        rows.findIndex((r) => r.span.spanId === selectedSpanId),
      ),
    [rows, selectedSpanId],
  );
  const [cursor, setCursor] = useListNav(
    rows.length,
    (i) => onSelect(rows[i]?.span.spanId),
    (e, i) => {
      const row = rows[i];
      if (!row) return false;
      if (e.key === 'ArrowLeft' || e.key === 'h') {
        if (row.children.length > 0 && !collapsed.has(row.span.spanId)) toggle(row, false);
        return true;
      }
      if (e.key === 'ArrowRight' || e.key === 'l') {
        toggle(row, true);
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
  useScrollToSelected(rows, selectedSpanId, listRef);
  const goToError = (step: 1 | -1): void => {
    const id = nextError(shownRoots, selectedSpanId, step);
    if (!id) return;
    // Its closed ancestors are opened (in the URL with the selection: one history entry).
    let next = folding;
    for (const a of ancestorsOf(trace.spans, id)) {
      const node = rows.find((r) => r.span.spanId === a) ?? findNode(shownRoots, a);
      if (node && collapsed.has(a)) next = toggled(next, a, node.depth - baseDepth, true);
    }
    onView({ spanId: id, depth: next.depth, fold: next.fold.length ? [...next.fold] : undefined });
  };
  const errorCount = useMemo(() => trace.spans.filter((s) => s.status === 'error').length, [trace]);
  const totalMs = Math.max(trace.endMs - trace.startMs, 1e-6);
  const ticks = niceTicks(totalMs, 5).filter((t) => t <= totalMs * 1.0001);
  const pct = (ms: number): number => Math.min(100, Math.max(0, (ms / totalMs) * 100));
  const rowContext = useRowContext(trace, segments, baseDepth, rows, setCursor, onSelect, toggle);

  return (
    <>
      <WaterfallTools
        filter={filter}
        root={root}
        selectedSpanId={selectedSpanId}
        errorCount={errorCount}
        shown={rows.length}
        total={trace.spans.length}
        depth={folding.depth}
        onView={onView}
        goToError={goToError}
      />
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
        <div ref={listRef} class="wf-list">
          {/* The grid lines once for the whole list, not in every row. */}
          <div class="wf-grid-overlay" aria-hidden="true">
            <span />
            <div class="wf-track">
              {ticks.map((t) => (
                <span key={t} class="wf-grid" style={{ left: `${pct(t)}%` }} />
              ))}
            </div>
          </div>
          <div style={{ height: `${first * ROW_HEIGHT}px` }} />
          {rows.slice(first, last).map((node, k) => (
            <WaterfallRow
              key={node.span.spanId}
              node={node}
              index={first + k}
              selected={node.span.spanId === selectedSpanId}
              isCursor={first + k === cursor}
              isCollapsed={collapsed.has(node.span.spanId)}
              ctx={rowContext}
            />
          ))}
          <div style={{ height: `${(rows.length - last) * ROW_HEIGHT}px` }} />
        </div>
      </div>
    </>
  );
}

type Node = SpanTreeNode<SpanView>;

/** A selected row out of the window (next error, a link) is scrolled to. */
function useScrollToSelected(
  rows: readonly Node[],
  selectedSpanId: string | undefined,
  listRef: { current: HTMLDivElement | null },
): void {
  useEffect(() => {
    const i = rows.findIndex((r) => r.span.spanId === selectedSpanId);
    const top = listRef.current?.getBoundingClientRect().top;
    if (i < 0 || top === undefined) return;
    const y = top + i * ROW_HEIGHT;
    if (y < 0 || y > innerHeight - ROW_HEIGHT) scrollBy({ top: y - innerHeight / 3 });
  }, [selectedSpanId, rows, listRef]);
}

/**
 * What every row shares: trace-wide values and callbacks that keep their identity while the
 * window scrolls, so a row already in the page is not rendered again (WaterfallRow is memo'd).
 */
interface RowContext {
  startMs: number;
  totalMs: number;
  rootService: string | undefined;
  baseDepth: number;
  criticalIds: ReadonlySet<string>;
  rolledUp: ReadonlyMap<string, TokenTotals>;
  segments: ReadonlyMap<string, CriticalSegment[]>;
  click: (index: number, spanId: string) => void;
  toggle: (node: Node) => void;
}

function useRowContext(
  trace: TraceView,
  segments: Map<string, CriticalSegment[]>,
  baseDepth: number,
  rows: readonly Node[],
  setCursor: (i: number) => void,
  onSelect: (spanId: string | undefined) => void,
  toggle: (node: Node) => void,
): RowContext {
  const latest = useRef({ setCursor, onSelect, toggle });
  latest.current = { setCursor, onSelect, toggle };
  const click = useCallback((index: number, spanId: string) => {
    latest.current.setCursor(index);
    latest.current.onSelect(spanId);
  }, []);
  const toggleRow = useCallback((node: Node) => latest.current.toggle(node), []);
  return useMemo(
    () => ({
      startMs: trace.startMs,
      totalMs: Math.max(trace.endMs - trace.startMs, 1e-6),
      rootService: trace.roots[0]?.span.service,
      baseDepth,
      criticalIds: trace.criticalPath.spanIds,
      rolledUp: trace.tokens.rolledUp,
      segments,
      click,
      toggle: toggleRow,
    }),
    // rows: a new folding or filter re-renders the rows in view (their carets and counts).
    [trace, segments, baseDepth, rows, click, toggleRow],
  );
}

interface RowProps {
  node: Node;
  index: number;
  selected: boolean;
  isCursor: boolean;
  isCollapsed: boolean;
  ctx: RowContext;
}

/**
 * A row, rendered again only when one of its props changed (not preact/compat's memo: importing
 * compat turns every input's onChange into onInput, page-wide).
 */
class WaterfallRow extends Component<RowProps> {
  override shouldComponentUpdate(next: RowProps): boolean {
    const p = this.props;
    return (
      p.node !== next.node ||
      p.index !== next.index ||
      p.selected !== next.selected ||
      p.isCursor !== next.isCursor ||
      p.isCollapsed !== next.isCollapsed ||
      p.ctx !== next.ctx
    );
  }

  override render() {
    return <Row {...this.props} />;
  }
}

function Row({ node, index, selected, isCursor, isCollapsed, ctx }: RowProps) {
  const s = node.span;
  const pct = (ms: number): number => Math.min(100, Math.max(0, (ms / ctx.totalMs) * 100));
  const left = pct(s.startMs - ctx.startMs);
  const width = Math.max(pct(s.durationMs), 0.15);
  const rolled = ctx.rolledUp.get(s.spanId);
  const classes = [
    'wf-row',
    selected ? 'selected' : '',
    isCursor ? 'cursor' : '',
    s.status === 'error' ? 'error' : '',
    ctx.criticalIds.has(s.spanId) ? 'critical' : '',
  ].join(' ');
  return (
    <div
      class={classes}
      role="treeitem"
      aria-level={node.depth - ctx.baseDepth + 1}
      aria-expanded={node.children.length > 0 ? !isCollapsed : undefined}
      aria-selected={selected}
      data-testid="waterfall-row"
      data-row-index={index}
      data-span-id={s.spanId}
      data-kind={s.genai.kind}
      onClick={() => ctx.click(index, s.spanId)}
    >
      <div
        class="wf-label-col"
        style={{ paddingLeft: `${8 + Math.min(node.depth - ctx.baseDepth, 30) * 16}px` }}
      >
        {node.children.length > 0 ? (
          <button
            class="caret"
            aria-label={isCollapsed ? 'expand' : 'collapse'}
            onClick={(e) => {
              e.stopPropagation();
              ctx.toggle(node);
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
        {s.service !== ctx.rootService && <span class="wf-service">{s.service}</span>}
        {s.status === 'error' && (
          <span class="err-dot" title={s.statusMessage ?? 'error'}>
            ●
          </span>
        )}
        {node.orphan && <OrphanNote kind={s.kind} />}
        {rolled && (
          <span class="wf-tokens">
            <Tokens tokens={rolled} compact />
          </span>
        )}
      </div>
      <div class="wf-track">
        <div class={`wf-bar kind-${s.genai.kind}`} style={{ left: `${left}%`, width: `${width}%` }}>
          {(ctx.segments.get(s.spanId) ?? []).map((seg, j) => (
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
}

function OrphanNote({ kind }: { kind: string }) {
  return kind === 'SERVER' || kind === 'CONSUMER' ? (
    <span
      class="muted small"
      title="Continues a trace from an upstream caller whose span is not stored here."
    >
      continued
    </span>
  ) : (
    <span class="muted small" title="The parent span has not arrived (or was not exported).">
      orphan
    </span>
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
