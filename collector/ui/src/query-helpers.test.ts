import { describe, expect, it } from 'vitest';
import { applyCompletion, completionContext, insideString, suggest } from './autocomplete.js';
import { bucketStep, buildChart, buildCharts, niceTicks, seriesColors } from './chart-model.js';

describe('autocomplete', () => {
  const keys = [
    'attributes.session.id',
    'attributes.gen_ai.request.model',
    'durationNano',
    'resource.attributes.service.name',
  ];
  it('finds the word at the cursor and replaces it whole', () => {
    const text = 'filter attributes.ses = "x"';
    const ctx = completionContext(text, 21);
    expect(ctx).toEqual({ prefix: 'attributes.ses', start: 7, end: 21 });
    expect(applyCompletion(text, ctx, 'attributes.session.id')).toEqual({
      text: 'filter attributes.session.id = "x"',
      cursor: 28,
    });
  });
  it('matches keys with or without the attributes prefix, then keywords', () => {
    expect(suggest(keys, 'attributes.s')).toEqual([
      'attributes.session.id',
      'resource.attributes.service.name',
    ]);
    expect(suggest(keys, 'service')).toEqual(['resource.attributes.service.name']);
    expect(suggest(keys, 'model')).toEqual(['attributes.gen_ai.request.model']);
    expect(suggest(keys, 'st')).toEqual(['stats', 'attributes.gen_ai.request.model']);
    expect(suggest(keys, '')).toEqual([]);
  });
  it('knows when the cursor is in a string', () => {
    expect(insideString('filter a = "se', 14)).toBe(true);
    expect(insideString('filter a = "x\\"y" and b', 23)).toBe(false);
  });
});

describe('buildChart', () => {
  it('draws bin() results as one line per group', () => {
    const chart = buildChart({
      columns: ['bin(1m)', 'model', 'count(*)'],
      timeColumn: 'bin(1m)',
      rows: [
        { 'bin(1m)': 120_000, model: 'b', 'count(*)': 2 },
        { 'bin(1m)': 60_000, model: 'a', 'count(*)': 5 },
        { 'bin(1m)': 120_000, model: 'a', 'count(*)': 3 },
      ],
    });
    expect(chart.type).toBe('line');
    if (chart.type !== 'line') return;
    expect(chart.series.map((s) => s.name)).toEqual(['a', 'b']);
    expect(chart.series[0]!.points.map((p) => p.y)).toEqual([5, 3]);
    expect(chart.yMax).toBe(5);
  });
  it('reads ISO and epoch-nanosecond bins', () => {
    const iso = buildChart({
      columns: ['t', 'n'],
      timeColumn: 't',
      rows: [{ t: '2026-01-01T00:00:00Z', n: 1 }],
    });
    const ns = buildChart({
      columns: ['t', 'n'],
      timeColumn: 't',
      rows: [{ t: 1_767_225_600_000_000_000, n: 1 }],
    });
    expect(iso.type === 'line' && iso.xMin).toBe(Date.UTC(2026, 0, 1));
    expect(ns.type === 'line' && ns.xMin).toBe(Date.UTC(2026, 0, 1));
  });
  it('draws grouped stats as bars and explains when it cannot chart', () => {
    const bars = buildChart({
      columns: ['model', 'avg'],
      rows: [
        { model: 'a', avg: '2.5' },
        { model: 'b', avg: 4 },
      ],
    });
    expect(bars).toEqual({
      type: 'bar',
      metric: 'avg',
      xTitle: 'model',
      bars: [
        { label: 'a', value: 2.5 },
        { label: 'b', value: 4 },
      ],
      yMax: 4,
    });
    expect(buildChart({ columns: ['x'], rows: [{ x: 'text' }] }).type).toBe('none');
  });
  it('plots every aggregate of a stats query, each on its own axis', () => {
    const result = {
      columns: ['bin(1m)', 'count(*)', 'sum(tokens)'],
      timeColumn: 'bin(1m)',
      rows: [
        { 'bin(1m)': 60_000, 'count(*)': 2, 'sum(tokens)': 900 },
        { 'bin(1m)': 120_000, 'count(*)': 3, 'sum(tokens)': 1500 },
      ],
    };
    const charts = buildCharts(result);
    expect(charts.map((c) => c.type === 'line' && [c.metric, c.yMax, c.series.map((s) => s.name)])).toEqual([
      ['count(*)', 3, ['count(*)']],
      ['sum(tokens)', 1500, ['sum(tokens)']],
    ]);
    const bars = buildCharts({
      columns: ['name', 'spans', 'avg'],
      rows: [
        { name: 'a', spans: 1, avg: 10 },
        { name: 'b', spans: 2, avg: 20 },
      ],
    });
    expect(bars.map((c) => c.type === 'bar' && [c.metric, c.bars.map((b) => b.value)])).toEqual([
      ['spans', [1, 2]],
      ['avg', [10, 20]],
    ]);
  });
  it('picks round ticks', () => {
    expect(niceTicks(9)).toEqual([0, 5, 10]);
    expect(niceTicks(340)).toEqual([0, 100, 200, 300, 400]);
    expect(niceTicks(0)).toEqual([0, 1]);
  });
});

describe('line charts: gaps and colours', () => {
  const T = Date.UTC(2026, 10, 26, 12);
  const rows = (points: [string, number, number | null][]) => ({
    columns: ['bin(1m)', 'name', 'n'],
    timeColumn: 'bin(1m)',
    rows: points.map(([name, minute, n]) => ({ 'bin(1m)': T + minute * 60_000, name, n })),
  });

  it('breaks a line where a bucket is missing or has no value, never bridging the gap', () => {
    const [chart] = buildCharts(
      rows([
        ['a', 0, 1],
        ['a', 1, 2],
        ['a', 4, 3],
        ['a', 5, null],
        ['a', 6, 4],
        ['b', 2, 5],
        ['b', 3, 6],
      ]),
    );
    if (chart?.type !== 'line') throw new Error('not a line chart');
    const a = chart.series.find((s) => s.name === 'a')!;
    expect(a.segments.map((s) => s.map((p) => (p.x - T) / 60_000))).toEqual([[0, 1], [4], [6]]);
    expect(a.points).toHaveLength(4);
    expect(chart.series.find((s) => s.name === 'b')!.segments).toHaveLength(1);
    expect(bucketStep([0, 60_000, 240_000])).toBe(60_000);
  });

  it('gives every series a colour of its own, past the theme six', () => {
    const colors = seriesColors(40);
    expect(new Set(colors).size).toBe(40);
    expect(colors.slice(0, 2)).toEqual(['var(--c1)', 'var(--c2)']);
  });
});
