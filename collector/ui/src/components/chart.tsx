/**
 * Inline SVG charts for `stats` results: lines over time for bin(), bars otherwise; one chart per
 * aggregate, each with titled axes and a legend. Points (and bars) link where `pointHref` says.
 */
import type { ComponentChildren } from 'preact';
import { buildCharts, type ChartModel, niceTicks, seriesColors, type StatsResult } from '../chart-model.js';
import { formatClock, formatCount, formatDuration } from '../format.js';
import { columnUnit } from '../../../src/query/column-units.js';

const W = 1000;
const H = 270;
const PAD = { left: 70, right: 16, top: 12, bottom: 52 };

/** A chart point: its series (a group label, or the aggregate's name), bucket start or bar label. */
export interface ChartPoint {
  metric: string;
  series: string;
  /** Bucket start (epoch ms) of a time series point. */
  x?: number;
  value: number;
}

export interface StatsChartProps {
  result: StatsResult;
  /** Y axis title (default: the aggregate's column name). */
  yTitle?: string;
  /** X axis title (default: the time column, or the group columns). */
  xTitle?: string;
  /** Where a click on a point goes (the traces behind it); undefined = not a link. */
  pointHref?: (point: ChartPoint) => string | undefined;
}

function Point({
  href,
  label,
  children,
}: {
  href: string | undefined;
  label: string;
  children: ComponentChildren;
}) {
  return href ? (
    <a class="point" href={href} aria-label={label} data-testid="chart-point">
      {children}
    </a>
  ) : (
    <g>{children}</g>
  );
}

function ChartFigure({
  model,
  yTitle,
  xTitle,
  pointHref,
}: Omit<StatsChartProps, 'result'> & { model: ChartModel }) {
  if (model.type === 'none') return <p class="muted chart-none">{model.reason}</p>;
  const yTicks = niceTicks(model.yMax, 4);
  const yTop = yTicks[yTicks.length - 1] || 1;
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const y = (v: number): number => PAD.top + plotH - (v / yTop) * plotH;
  // A nanosecond aggregate (avg(durationNano)) reads as durations: "400 ms", not "400M".
  const nano = columnUnit(model.metric) === 'durationNano';
  const valueText = (v: number): string => (nano ? formatDuration(v / 1e6) : formatCount(v));
  const axes = (
    <>
      {yTicks.map((t) => (
        <g key={t}>
          <line class="grid" x1={PAD.left} x2={W - PAD.right} y1={y(t)} y2={y(t)} />
          <text class="axis" x={PAD.left - 6} y={y(t) + 4} text-anchor="end">
            {valueText(t)}
          </text>
        </g>
      ))}
      <text
        class="axis-title"
        data-testid="y-title"
        transform={`translate(14 ${PAD.top + plotH / 2}) rotate(-90)`}
        text-anchor="middle"
      >
        {yTitle ?? model.metric}
      </text>
      <text class="axis-title" data-testid="x-title" x={PAD.left + plotW / 2} y={H - 6} text-anchor="middle">
        {xTitle ?? model.xTitle}
      </text>
    </>
  );
  if (model.type === 'line') {
    const span = Math.max(model.xMax - model.xMin, 1);
    const x = (v: number): number =>
      PAD.left + (model.xMax === model.xMin ? plotW / 2 : ((v - model.xMin) / span) * plotW);
    const colors = seriesColors(model.series.length);
    const xTicks =
      model.xMax === model.xMin ? [model.xMin] : [0, 0.25, 0.5, 0.75, 1].map((f) => model.xMin + f * span);
    return (
      <figure class="chart" data-testid="stats-chart" data-chart="line" data-metric={model.metric}>
        <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${model.metric} over time`}>
          {axes}
          {xTicks.map((t, i) => (
            <text key={i} class="axis" x={x(t)} y={H - PAD.bottom + 16} text-anchor="middle">
              {formatClock(t).slice(0, 8)}
            </text>
          ))}
          {model.series.map((s, i) => (
            <g key={s.name} class="series">
              {s.segments.map((segment, k) => (
                <polyline
                  key={k}
                  data-testid="chart-line"
                  fill="none"
                  stroke={colors[i]}
                  stroke-width="2"
                  points={segment.map((p) => `${x(p.x)},${y(p.y)}`).join(' ')}
                />
              ))}
              {s.points.map((p, j) => {
                const label = `${s.name} ${formatClock(p.x)}: ${nano ? `${valueText(p.y)} (${p.y} ns)` : p.y}`;
                return (
                  <Point
                    key={j}
                    label={label}
                    href={pointHref?.({ metric: model.metric, series: s.name, x: p.x, value: p.y })}
                  >
                    <circle cx={x(p.x)} cy={y(p.y)} r="3.5" fill={colors[i]}>
                      <title>{label}</title>
                    </circle>
                  </Point>
                );
              })}
            </g>
          ))}
        </svg>
        <figcaption class="legend-row">
          {model.series.map((s, i) => (
            <span key={s.name}>
              <span class="swatch" style={{ background: colors[i] }} />
              {s.name || 'value'}
            </span>
          ))}
        </figcaption>
      </figure>
    );
  }
  const n = model.bars.length;
  const slot = plotW / Math.max(n, 1);
  const barW = Math.max(2, Math.min(56, slot * 0.7));
  return (
    <figure class="chart" data-testid="stats-chart" data-chart="bar" data-metric={model.metric}>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`bar chart of ${model.metric}`}>
        {axes}
        {model.bars.map((b, i) => {
          const cx = PAD.left + slot * i + slot / 2;
          return (
            <g key={i}>
              <Point
                label={`${b.label}: ${b.value}`}
                href={pointHref?.({ metric: model.metric, series: b.label, value: b.value })}
              >
                <rect
                  class="bar"
                  x={cx - barW / 2}
                  y={y(b.value)}
                  width={barW}
                  height={Math.max(0, y(0) - y(b.value))}
                  rx="2"
                >
                  <title>
                    {b.label}: {b.value}
                  </title>
                </rect>
              </Point>
              {n <= 16 && (
                <text class="axis" x={cx} y={H - PAD.bottom + 16} text-anchor="middle">
                  {b.label.length > 14 ? b.label.slice(0, 13) + '…' : b.label}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption class="legend-row">
        <span>
          <span class="swatch" style={{ background: seriesColors(1)[0] }} />
          {model.metric}
        </span>
      </figcaption>
    </figure>
  );
}

/** Every aggregate of the result, one chart each. */
export function StatsChart({ result, ...rest }: StatsChartProps) {
  return (
    <div class="charts">
      {buildCharts(result).map((model, i) => (
        <ChartFigure key={model.type === 'none' ? i : model.metric} model={model} {...rest} />
      ))}
    </div>
  );
}
