import type { MetricName, MetricQueryResult } from '@agentrt/collector';
import { type Command, UsageError, parseCommandArgs } from '../command.js';
import {
  collectorJson,
  collectorUrl,
  formatTime,
  parseDurationMs,
  renderTable,
} from '../collector-client.js';

const usage = `Usage: agentrt metrics [<name>] [--fn <fn>] [--by <attr>] [--where <k=v>] [--since <duration>] [--step <duration>] [--json] [--url <collector>]

Without a name: every metric the collector holds, with its kind, unit and series count. With a name:
its time series over --since (default 1h), one row per time bucket and group.
  --fn <fn>         sum, rate, avg, min, max, count, or pNN for histograms (default: sum for
                    counters, avg for gauges, p50 for histograms)
  --by <attr>       group by an attribute (repeatable, or a,b): e.g. Name, Operation, session.id
  --where <k=v>     keep series whose attribute equals (k!=v: differs); repeatable
  --since <dur>     how far back (30s, 15m, 1h, 7d; default 1h)
  --step <dur>      bucket width (default: the range in at most 300 buckets)
  --json            print the API response as JSON
  --url <url>       the collector (default $AGENTRT_COLLECTOR_URL or http://127.0.0.1:4318)`;

const round = (v: number): string =>
  Number.isInteger(v) ? String(v) : v.toPrecision(6).replace(/\.?0+$/, '');

export const metricsCommand: Command = {
  name: 'metrics',
  summary: 'list metrics, or show one metric over time (by attribute)',
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs({
      args: argv,
      allowPositionals: true,
      options: {
        fn: { type: 'string' },
        by: { type: 'string', multiple: true },
        where: { type: 'string', multiple: true },
        since: { type: 'string' },
        step: { type: 'string' },
        json: { type: 'boolean', default: false },
        url: { type: 'string' },
      },
    });
    if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
    const base = collectorUrl(values.url, io);
    const [name] = positionals;
    if (!name) {
      const { metrics } = await collectorJson<{ metrics: MetricName[] }>(base, '/api/metrics');
      if (values.json) io.stdout(`${JSON.stringify({ metrics }, null, 2)}\n`);
      else
        io.stdout(
          renderTable(
            ['name', 'kind', 'unit', 'series', 'last point', 'description'],
            metrics.map((m) => [m.name, m.kind, m.unit, m.series, formatTime(m.lastMs), m.description]),
          ),
        );
      return 0;
    }
    let sinceMs: number;
    let stepMs: number | undefined;
    try {
      sinceMs = parseDurationMs(values.since ?? '1h', '--since');
      stepMs = values.step === undefined ? undefined : parseDurationMs(values.step, '--step');
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    const endMs = Date.now();
    const params = new URLSearchParams({ name, startMs: String(endMs - sinceMs), endMs: String(endMs) });
    if (values.fn) params.set('fn', values.fn);
    if (stepMs !== undefined) params.set('stepMs', String(stepMs));
    for (const by of values.by ?? []) params.append('by', by);
    for (const where of values.where ?? []) params.append('where', where);
    const result = await collectorJson<MetricQueryResult>(base, `/api/metrics/query?${params}`);
    if (values.json) {
      io.stdout(`${JSON.stringify(result, null, 2)}\n`);
      return 0;
    }
    if (result.kind === null) {
      io.stdout(
        `no points of ${result.name} yet ('agentrt metrics' lists the metrics the collector holds)\n`,
      );
      return 0;
    }
    const by = Object.keys(result.series[0]?.group ?? {});
    const rows = result.series.flatMap((s) =>
      s.points
        .filter(([, v]) => v !== null)
        .map(([t, v]) => [formatTime(t), ...by.map((k) => s.group[k] ?? ''), round(v!)]),
    );
    io.stdout(
      `${result.name} (${result.kind}${result.unit ? `, ${result.unit}` : ''}) ${result.fn} per ${round(result.stepMs / 1000)} s\n` +
        renderTable(['time', ...by, result.fn], rows) +
        (result.truncated ? '(more groups than shown: narrow with --where)\n' : ''),
    );
    return 0;
  },
};
