/** The waterfall timeline: nested spans to scale, critical path highlighted, collapsible. */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { flattenSpanTree } from '../../../src/trace-model/index.js';
import { niceTicks } from '../chart-model.js';
import { formatDuration } from '../format.js';
import { useListNav } from '../hooks.js';
import type { TraceView } from '../view-types.js';
import { KindBadge, Tokens } from './common.js';

interface WaterfallProps {
  trace: TraceView;
  selectedSpanId?: string;
  onSelect: (spanId: string | undefined) => void;
}

export function Waterfall({ trace, selectedSpanId, onSelect }: WaterfallProps) {
  const [collapsed, setCollapsed] = useState<Set<string>>(new Set());
  const rows = useMemo(() => flattenSpanTree(trace.roots, collapsed), [trace, collapsed]);
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
  const ticks = niceTicks(totalMs, 5).filter((t) => t <= totalMs * 1.0001);
  const pct = (ms: number): number => Math.min(100, Math.max(0, (ms / totalMs) * 100));

  return (
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
      {rows.map((node, i) => {
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
            aria-level={node.depth + 1}
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
            <div class="wf-label-col" style={{ paddingLeft: `${8 + node.depth * 16}px` }}>
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
                  <span class="muted small" title="The parent span has not arrived (or was not exported).">
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
                {trace.criticalPath.segments
                  .filter((seg) => seg.spanId === s.spanId)
                  .map((seg, j) => (
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
    </div>
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
