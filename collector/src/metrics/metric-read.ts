// A metric read as the query threads run it (SQLite's and ClickHouse's, via read-ops): the metric
// names, or a time-series query answered as series (GET /api/metrics/query) or as stats rows (the
// `metric …` form of /api/query). On a thread it has the queries' deadline, result cap and heap
// limit: a query over thousands of series no longer holds up ingest or /healthz, nor ends the
// process when it runs out of memory.
import type { AttributeValue, QueryErrorBody, QueryResponse } from '../wire-types.js';
import { type MetricQuery, MetricQueryError, type MetricQueryResult, queryMetric } from './metric-query.js';
import type { MetricName, MetricReader } from './metric-store.js';

export type MetricRead = { type: 'names' } | { type: 'series' | 'rows'; query: MetricQuery };

/** A metric time series as query rows: one row per bucket and group, the time column first. */
export function metricRows(result: MetricQueryResult, by: string[], elapsedMs: number): QueryResponse {
  const rows: Record<string, AttributeValue>[] = [];
  for (const s of result.series)
    for (const [time, value] of s.points) {
      if (value === null) continue;
      const row: Record<string, AttributeValue> = { time };
      for (const key of by) row[key] = s.group[key] ?? '';
      row[result.fn] = value;
      rows.push(row);
    }
  rows.sort((a, b) => (a.time as number) - (b.time as number));
  return {
    kind: 'stats',
    columns: ['time', ...by, result.fn],
    rows,
    scanned: rows.length,
    elapsedMs,
    timeColumn: 'time',
  };
}

/** Answers a metric read from `reader`; a bad question throws MetricQueryError. */
export async function answerMetricRead(
  reader: MetricReader,
  read: MetricRead,
): Promise<{ metrics: MetricName[] } | MetricQueryResult | QueryResponse> {
  if (read.type === 'names') return { metrics: await reader.names() };
  const started = performance.now();
  const result = await queryMetric(reader, read.query);
  if (read.type === 'series') return result;
  // The `metric` form of the query language points at a name it does not know (a typo, most often).
  if (result.kind === null) throw new MetricQueryError(`no metric named ${JSON.stringify(result.name)}`, 404);
  return metricRows(result, read.query.by ?? [], Math.round(performance.now() - started));
}

/**
 * A query thread's answer to a MetricQueryError: the 400 body with the status the API answers
 * (404 for an unknown metric name); undefined for any other error.
 */
export function metricFailure(error: unknown): { body: QueryErrorBody; status: number } | undefined {
  if (!(error instanceof MetricQueryError)) return undefined;
  return {
    body: { error: 'QueryError', message: error.message, position: 0, line: 1, column: 1 },
    status: error.status,
  };
}
