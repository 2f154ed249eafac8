/**
 * Agents: every agent runtime with its AgentCore metrics over a chosen range (invocations, latency
 * percentiles, error and throttle rates, sessions) and the tokens and cost of its model calls.
 */
import { useState } from 'preact/hooks';
import { type MetricSeriesAnswer, getPrices, queryMetric, runQuery } from '../api.js';
import { type ChartPoint, StatsChart } from '../components/chart.js';
import { ErrorBox, Loading } from '../components/common.js';
import { RecentActivity } from '../components/recent-activity.js';
import { formatCount, formatDuration } from '../format.js';
import { useAsync } from '../hooks.js';
import { costOf, formatUsd, priceOf } from '../../../src/cost/prices.js';
import { routeHref, type TraceFilters } from '../router.js';

const RANGES: { label: string; ms: number }[] = [
  { label: '15m', ms: 15 * 60_000 },
  { label: '1h', ms: 3_600_000 },
  { label: '6h', ms: 6 * 3_600_000 },
  { label: '24h', ms: 86_400_000 },
  { label: '7d', ms: 7 * 86_400_000 },
];
const INVOKE = ['Operation=InvokeAgentRuntime'];
/**
 * A metric point is stamped when the runtime exports it (every OTEL_METRIC_EXPORT_INTERVAL, 60 s by
 * default), after the calls it counts: the traces behind a point started up to this long before its
 * bucket.
 */
const METRIC_EXPORT_LAG_MS = 60_000;

/**
 * The traces behind one point of a runtime chart: that runtime, that bucket (errors only for error
 * charts). Metric buckets fall on multiples of the step and the first one is clipped to the range,
 * so its point sits at the range start: the bucket ends at the next multiple, not a step later.
 */
export function runtimeTracesHref(
  runtime: string,
  bucketStartMs: number,
  stepMs: number,
  errorsOnly: boolean,
) {
  const filters: TraceFilters = {
    service: 'agentrt-runtime',
    q: runtime.split('::')[0],
    startMs: bucketStartMs - METRIC_EXPORT_LAG_MS,
    endMs: Math.floor(bucketStartMs / stepMs) * stepMs + stepMs,
  };
  if (errorsOnly) filters.status = 'error';
  return routeHref({ view: 'traces', filters });
}

/** Sum of a series' points (null = no data). */
const sumOf = (points: [number, number | null][]): number => points.reduce((n, [, v]) => n + (v ?? 0), 0);

/** Per `Name` (runtime::endpoint): the one value of a whole-range query. */
function byName(answer: MetricSeriesAnswer | undefined, pick = sumOf): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of answer?.series ?? []) out.set(s.group.Name ?? '', pick(s.points));
  return out;
}

/** The point-wise sum of same-shaped answers (user + system errors + throttles). */
function sumSeries(answers: (MetricSeriesAnswer | undefined)[]): MetricSeriesAnswer | undefined {
  const present = answers.filter((a) => a !== undefined);
  if (present.length === 0) return undefined;
  const byName = new Map<string, Map<number, number>>();
  for (const a of present)
    for (const s of a.series) {
      const name = s.group.Name ?? '';
      const points = byName.get(name) ?? new Map<number, number>();
      byName.set(name, points);
      for (const [t, v] of s.points) if (v !== null) points.set(t, (points.get(t) ?? 0) + v);
    }
  return {
    ...present[0]!,
    series: [...byName].map(([Name, points]) => ({
      group: { Name },
      points: [...points].sort((a, b) => a[0] - b[0]),
    })),
  };
}

/** A metric time series as the rows the stats chart draws (one line per runtime, broken where a bucket has no value). */
function asChartRows(answer: MetricSeriesAnswer | undefined, value: string) {
  return {
    columns: ['time', 'runtime', value],
    timeColumn: 'time',
    rows: (answer?.series ?? []).flatMap((s) =>
      s.points.map(([t, v]) => ({
        time: t,
        runtime: s.group.Name ?? '',
        [value]: v === null ? null : Number(v.toPrecision(6)),
      })),
    ),
  };
}

/**
 * Sessions alive now per runtime: each one's ActiveSessionCount in the last two export intervals,
 * 0 without one (a runtime that restarted reports none for the sessions it no longer has; the last
 * value of the whole range would still count them).
 */
export function activeNow(answer: MetricSeriesAnswer | undefined, sinceMs: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of answer?.series ?? []) {
    const recent = s.points.filter(([t, v]) => t >= sinceMs && v !== null);
    out.set(s.group.Name ?? '', recent.at(-1)?.[1] ?? 0);
  }
  return out;
}

async function loadAgents(rangeMs: number) {
  const endMs = Date.now();
  const startMs = endMs - rangeMs;
  const whole = { startMs, endMs, stepMs: rangeMs, by: 'Name', where: INVOKE };
  const over = {
    startMs,
    endMs,
    stepMs: Math.max(1000, Math.ceil(rangeMs / 60 / 1000) * 1000),
    by: 'Name',
    where: INVOKE,
  };
  const [
    invocations,
    p50,
    p95,
    p99,
    userErrors,
    systemErrors,
    throttles,
    sessions,
    active,
    invocationsOver,
    p95Over,
    userErrorsOver,
    systemErrorsOver,
    throttlesOver,
    tokens,
    tokensOver,
    prices,
  ] = await Promise.all([
    queryMetric({ name: 'Invocations', fn: 'sum', ...whole }),
    queryMetric({ name: 'Latency', fn: 'p50', ...whole }),
    queryMetric({ name: 'Latency', fn: 'p95', ...whole }),
    queryMetric({ name: 'Latency', fn: 'p99', ...whole }),
    queryMetric({ name: 'UserErrors', fn: 'sum', ...whole }),
    queryMetric({ name: 'SystemErrors', fn: 'sum', ...whole }),
    queryMetric({ name: 'Throttles', fn: 'sum', ...whole }),
    queryMetric({ name: 'SessionCount', fn: 'sum', ...whole }),
    queryMetric({
      name: 'ActiveSessionCount',
      fn: 'max',
      startMs: endMs - 2 * METRIC_EXPORT_LAG_MS,
      endMs,
      stepMs: 5000,
      by: 'Name',
      where: INVOKE,
    }),
    queryMetric({ name: 'Invocations', fn: 'sum', ...over }),
    queryMetric({ name: 'Latency', fn: 'p95', ...over }),
    queryMetric({ name: 'UserErrors', fn: 'sum', ...over }),
    queryMetric({ name: 'SystemErrors', fn: 'sum', ...over }),
    queryMetric({ name: 'Throttles', fn: 'sum', ...over }),
    // Model calls carry their own usage (agent spans carry the sum): count the calls only.
    runQuery(
      'filter attributes.gen_ai.operation.name = "chat" | stats sum(attributes.gen_ai.usage.input_tokens) as input, sum(attributes.gen_ai.usage.output_tokens) as output, count(*) as calls by resource.attributes.service.name as service, attributes.gen_ai.request.model as model',
      startMs,
      endMs,
    ),
    runQuery(
      `filter attributes.gen_ai.operation.name = "chat" | stats sum(attributes.gen_ai.usage.input_tokens) as tokens_in, sum(attributes.gen_ai.usage.output_tokens) as tokens_out by bin(${over.stepMs / 1000}s), attributes.gen_ai.request.model as model`,
      startMs,
      endMs,
    ),
    getPrices(),
  ]);
  const names = [...byName(invocations).keys()].sort();
  const activeByName = activeNow(active, endMs - 2 * METRIC_EXPORT_LAG_MS);
  return {
    stepMs: over.stepMs,
    rows: names.map((name) => {
      const calls = byName(invocations).get(name) ?? 0;
      const errors = (byName(userErrors).get(name) ?? 0) + (byName(systemErrors).get(name) ?? 0);
      return {
        name,
        calls,
        p50: byName(p50).get(name),
        p95: byName(p95).get(name),
        p99: byName(p99).get(name),
        errorRate: calls ? errors / calls : 0,
        throttleRate: calls ? (byName(throttles).get(name) ?? 0) / calls : 0,
        sessions: byName(sessions).get(name) ?? 0,
        active: activeByName.get(name) ?? 0,
      };
    }),
    invocationsChart: asChartRows(invocationsOver, 'invocations'),
    latencyChart: asChartRows(p95Over, 'p95 ms'),
    errorsChart: asChartRows(sumSeries([userErrorsOver, systemErrorsOver, throttlesOver]), 'errors'),
    tokensChart: tokensOver,
    tokens: tokens.rows.map((r) => {
      const input = Number(r.input ?? 0);
      const output = Number(r.output ?? 0);
      const model = String(r.model ?? '');
      return {
        service: String(r.service ?? ''),
        model,
        input,
        output,
        calls: Number(r.calls ?? 0),
        cost: costOf(model, input, output, prices),
        priceNote: priceOf(model, prices)?.note,
      };
    }),
  };
}

const percent = (x: number): string => `${(x * 100).toFixed(x > 0 && x < 0.01 ? 2 : 1)}%`;

export function AgentsView() {
  const [range, setRange] = useState(RANGES[1]!);
  const state = useAsync(() => loadAgents(range.ms), [range.ms]);
  const data = state.data;
  return (
    <section>
      <h1>Agents</h1>
      <div class="filters" role="group" aria-label="time range">
        {RANGES.map((r) => (
          <button
            key={r.label}
            type="button"
            class={`btn ${r.label === range.label ? 'primary' : ''}`}
            data-testid={`range-${r.label}`}
            onClick={() => setRange(r)}
          >
            {r.label}
          </button>
        ))}
        <button type="button" class="btn" onClick={state.reload}>
          Refresh
        </button>
      </div>
      {state.error && <ErrorBox error={state.error} retry={state.reload} />}
      {!data && !state.error && <Loading what="agents" />}
      {data && data.rows.length === 0 && <RecentActivity />}
      {data && data.rows.length > 0 && (
        <>
          <table class="list" data-testid="agents-table">
            <thead>
              <tr>
                <th>runtime::endpoint</th>
                <th class="num">invocations</th>
                <th class="num">p50</th>
                <th class="num">p95</th>
                <th class="num">p99</th>
                <th class="num">error rate</th>
                <th class="num">throttle rate</th>
                <th class="num">sessions</th>
                <th class="num">active</th>
              </tr>
            </thead>
            <tbody>
              {data.rows.map((r) => (
                <tr key={r.name} data-testid="agent-row">
                  <td>
                    <a
                      href={routeHref({
                        view: 'traces',
                        filters: { service: 'agentrt-runtime', q: r.name.split('::')[0] },
                      })}
                    >
                      {r.name}
                    </a>
                  </td>
                  <td class="num">{formatCount(r.calls)}</td>
                  <td class="num">{r.p50 === undefined ? '—' : formatDuration(r.p50)}</td>
                  <td class="num">{r.p95 === undefined ? '—' : formatDuration(r.p95)}</td>
                  <td class="num">{r.p99 === undefined ? '—' : formatDuration(r.p99)}</td>
                  <td class={`num ${r.errorRate > 0 ? 'err' : ''}`}>{percent(r.errorRate)}</td>
                  <td class="num">{percent(r.throttleRate)}</td>
                  <td class="num">{formatCount(r.sessions)}</td>
                  <td class="num">{formatCount(Math.round(r.active))}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <h2>Invocations per {formatDuration(data.stepMs)} (y: calls, x: time)</h2>
          <StatsChart
            result={data.invocationsChart}
            yTitle="invocations (calls)"
            xTitle="time"
            pointHref={(p: ChartPoint) => runtimeTracesHref(p.series, p.x!, data.stepMs, false)}
          />
          <h2>Latency p95 per {formatDuration(data.stepMs)} (y: ms, x: time)</h2>
          <StatsChart
            result={data.latencyChart}
            yTitle="latency p95 (ms)"
            xTitle="time"
            pointHref={(p: ChartPoint) => runtimeTracesHref(p.series, p.x!, data.stepMs, false)}
          />
          <h2>Errors and throttles per {formatDuration(data.stepMs)} (y: calls, x: time)</h2>
          <StatsChart
            result={data.errorsChart}
            yTitle="errors (calls)"
            xTitle="time"
            pointHref={(p: ChartPoint) => runtimeTracesHref(p.series, p.x!, data.stepMs, true)}
          />
        </>
      )}
      {data && data.tokens.length > 0 && (
        <>
          <h2>Tokens by model per {formatDuration(data.stepMs)} (y: tokens, x: time)</h2>
          <StatsChart
            result={data.tokensChart}
            xTitle="time"
            pointHref={(p: ChartPoint) =>
              routeHref({
                view: 'traces',
                filters: { q: p.series, startMs: p.x!, endMs: p.x! + data.stepMs },
              })
            }
          />
          <h2>Tokens and cost by model</h2>
          <table class="list" data-testid="tokens-table">
            <thead>
              <tr>
                <th>service</th>
                <th>model</th>
                <th class="num">model calls</th>
                <th class="num">tokens in</th>
                <th class="num">tokens out</th>
                <th class="num">cost</th>
              </tr>
            </thead>
            <tbody>
              {data.tokens.map((t) => (
                <tr key={`${t.service}/${t.model}`} data-testid="token-row">
                  <td>{t.service}</td>
                  <td>{t.model || '∅'}</td>
                  <td class="num">{formatCount(t.calls)}</td>
                  <td class="num">{formatCount(t.input)}</td>
                  <td class="num">{formatCount(t.output)}</td>
                  <td
                    class="num"
                    title={
                      t.cost === undefined
                        ? 'no price known for this model'
                        : (t.priceNote ?? 'list price per token')
                    }
                  >
                    {formatUsd(t.cost)}
                    {t.cost !== undefined && t.priceNote && <span class="muted">*</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {[...new Set(data.tokens.flatMap((t) => (t.priceNote ? [t.priceNote] : [])))].map((note) => (
            <p key={note} class="muted" data-testid="price-note">
              * {note}
            </p>
          ))}
        </>
      )}
    </section>
  );
}
