/** An inline SVG chart for `stats` results: lines over time for bin(), bars otherwise. */
import { buildChart, niceTicks, type StatsResult } from '../chart-model.js';
import { formatClock, formatCount } from '../format.js';

const W = 1000;
const H = 260;
const PAD = { left: 52, right: 16, top: 12, bottom: 44 };
const COLORS = ['var(--c1)', 'var(--c2)', 'var(--c3)', 'var(--c4)', 'var(--c5)', 'var(--c6)'];

export function StatsChart({ result }: { result: StatsResult }) {
  const model = buildChart(result);
  if (model.type === 'none') return <p class="muted chart-none">{model.reason}</p>;
  const yTicks = niceTicks(model.yMax, 4);
  const yTop = yTicks[yTicks.length - 1] || 1;
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const y = (v: number): number => PAD.top + plotH - (v / yTop) * plotH;
  const grid = yTicks.map((t) => (
    <g key={t}>
      <line class="grid" x1={PAD.left} x2={W - PAD.right} y1={y(t)} y2={y(t)} />
      <text class="axis" x={PAD.left - 6} y={y(t) + 4} text-anchor="end">
        {formatCount(t)}
      </text>
    </g>
  ));
  if (model.type === 'line') {
    const span = Math.max(model.xMax - model.xMin, 1);
    const x = (v: number): number =>
      PAD.left + (model.xMax === model.xMin ? plotW / 2 : ((v - model.xMin) / span) * plotW);
    const xTicks =
      model.xMax === model.xMin ? [model.xMin] : [0, 0.25, 0.5, 0.75, 1].map((f) => model.xMin + f * span);
    return (
      <figure class="chart" data-testid="stats-chart" data-chart="line">
        <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label="time series chart">
          {grid}
          {xTicks.map((t, i) => (
            <text key={i} class="axis" x={x(t)} y={H - PAD.bottom + 16} text-anchor="middle">
              {formatClock(t).slice(0, 8)}
            </text>
          ))}
          {model.series.map((s, i) => (
            <g key={s.name} class="series">
              <polyline
                fill="none"
                stroke={COLORS[i % COLORS.length]}
                stroke-width="2"
                points={s.points.map((p) => `${x(p.x)},${y(p.y)}`).join(' ')}
              />
              {s.points.map((p, j) => (
                <circle key={j} cx={x(p.x)} cy={y(p.y)} r="3" fill={COLORS[i % COLORS.length]}>
                  <title>
                    {s.name} {formatClock(p.x)}: {p.y}
                  </title>
                </circle>
              ))}
            </g>
          ))}
        </svg>
        <figcaption class="legend-row">
          {model.series.map((s, i) => (
            <span key={s.name}>
              <span class="swatch" style={{ background: COLORS[i % COLORS.length] }} />
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
    <figure class="chart" data-testid="stats-chart" data-chart="bar">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`bar chart of ${model.metric}`}>
        {grid}
        {model.bars.map((b, i) => {
          const cx = PAD.left + slot * i + slot / 2;
          return (
            <g key={i}>
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
              {n <= 16 && (
                <text class="axis" x={cx} y={H - PAD.bottom + 16} text-anchor="middle">
                  {b.label.length > 14 ? b.label.slice(0, 13) + '…' : b.label}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption class="legend-row">{model.metric}</figcaption>
    </figure>
  );
}
