import {
  AggregationTemporalityPreference,
  OTLPMetricExporter,
} from '@opentelemetry/exporter-metrics-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCollector } from '../testing.test-util.js';
import type { QueryErrorBody, QueryResponse } from '../wire-types.js';
import { isMetricForm, parseMetricForm } from './metric-form.js';
import { QueryError } from './query-error.js';

describe('parseMetricForm', () => {
  it('reads the name, function and clauses in any order', () => {
    expect(parseMetricForm('metric Invocations sum by Name every 1h since 7d')).toEqual({
      name: 'Invocations',
      fn: 'sum',
      by: ['Name'],
      where: [],
      stepMs: 3_600_000,
      sinceMs: 7 * 86_400_000,
      namePos: 7,
    });
    expect(
      parseMetricForm(
        'metrics "gen_ai.client.token.usage" since 24h where Operation = InvokeAgentRuntime and Name != "b::DEFAULT" by Name, service.name',
      ),
    ).toMatchObject({
      name: 'gen_ai.client.token.usage',
      by: ['Name', 'service.name'],
      where: ['Operation=InvokeAgentRuntime', 'Name!=b::DEFAULT'],
      sinceMs: 86_400_000,
    });
    expect(parseMetricForm('metric Latency P95')).toMatchObject({ name: 'Latency', fn: 'p95' });
    expect(isMetricForm('  metric x')).toBe(true);
    expect(isMetricForm('metrics')).toBe(true);
    expect(isMetricForm('filter metric = 1')).toBe(false);
    expect(isMetricForm('metricsfoo')).toBe(false);
  });

  it('points at what is wrong', () => {
    const error = (q: string) => {
      try {
        parseMetricForm(q);
      } catch (e) {
        if (e instanceof QueryError) return { message: e.message, position: e.position };
        throw e;
      }
      throw new Error(`${q} parsed`);
    };
    expect(error('metric')).toEqual({
      message: 'expected a metric name but found the end of the query',
      position: 6,
    });
    expect(error('metric x sum every soon')).toMatchObject({ position: 19 });
    expect(error('metric x sum by')).toMatchObject({ message: /an attribute name/ });
    expect(error('metric x sum where a > 3')).toMatchObject({ message: /'='/, position: 21 });
    expect(error('metric x since 1h since 2h')).toMatchObject({ message: /'since' is given twice/ });
    expect(error('metric x sum | stats count(*)')).toMatchObject({ message: /'by' or 'where'/ });
  });
});

describe('the metrics form through POST /api/query', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  beforeAll(async () => {
    collector = await startCollector();
    // The real SDK and OTLP/JSON exporter, as a runtime sends its metrics.
    const reader = new PeriodicExportingMetricReader({
      exporter: new OTLPMetricExporter({
        url: `${collector.url}/v1/metrics`,
        temporalityPreference: AggregationTemporalityPreference.DELTA,
      }),
      exportIntervalMillis: 3_600_000,
    });
    const provider = new MeterProvider({
      resource: resourceFromAttributes({ 'service.name': 'agentrt-runtime' }),
      readers: [reader],
    });
    const meter = provider.getMeter('metric-form-test');
    const invocations = meter.createCounter('Invocations');
    const latency = meter.createHistogram('Latency', {
      unit: 'ms',
      advice: { explicitBucketBoundaries: [10, 100, 1000] },
    });
    invocations.add(3, { Name: 'a::DEFAULT' });
    invocations.add(2, { Name: 'b::DEFAULT' });
    for (const v of [5, 50, 50, 500]) latency.record(v, { Name: 'a::DEFAULT' });
    await provider.forceFlush();
    await provider.shutdown();
  });
  afterAll(async () => {
    await collector?.cleanup();
  });

  const run = async (query: string, body: Record<string, unknown> = {}) => {
    const res = await fetch(`${collector.url}/api/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, ...body }),
    });
    return { status: res.status, body: (await res.json()) as QueryResponse & QueryErrorBody };
  };

  it('answers a time series as stats rows with a time column (what the search box charts)', async () => {
    const { status, body } = await run('metric Invocations sum by Name every 1h since 2h');
    expect(status).toBe(200);
    expect(body).toMatchObject({ kind: 'stats', columns: ['time', 'Name', 'sum'], timeColumn: 'time' });
    const total = (name: string) =>
      body.rows.filter((r) => r.Name === name).reduce((n, r) => n + (r.sum as number), 0);
    expect(total('a::DEFAULT')).toBe(3);
    expect(total('b::DEFAULT')).toBe(2);
    for (const r of body.rows) expect(r.time).toBeGreaterThan(Date.now() - 2 * 3_600_000 - 1000);

    const p = await run('metric Latency p50 where Name = "a::DEFAULT"');
    expect(p.body.columns).toEqual(['time', 'p50']);
    expect(p.body.rows).toHaveLength(1);
    // 4 values in (−∞,10], (10,100] ×2, (100,1000]: rank 2 is half-way into (10,100].
    expect(p.body.rows[0]!.p50).toBeCloseTo(55, 6);
    // The request's own range is used when the query has no `since`.
    const old = await run('metric Invocations sum', { startMs: 1000, endMs: 2000 });
    expect(old.body.rows).toEqual([]);
  });

  it('answers bad questions with a 400 that points into the query', async () => {
    const missing = await run('metric Nope sum');
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: 'QueryError', position: 7, column: 8 });
    expect(missing.body.message).toMatch(/no metric named "Nope"/);
    const wrongFn = await run('metric Invocations p99');
    expect(wrongFn.status).toBe(400);
    expect(wrongFn.body.message).toMatch(/does not apply to sum/);
    const syntax = await run('metric Invocations sum by');
    expect(syntax.status).toBe(400);
    expect(syntax.body).toMatchObject({ error: 'QuerySyntaxError', position: 25 });
    // Span queries are untouched.
    expect((await run('filter name = "x"')).status).toBe(200);
  });
});
