// The metric tables' rows as TabSeparated lines (one INSERT per table and batch): a series row per
// series and day, a point row per point, a last-point row per series.
import type { CumulativeState, StoredBuckets, StoredPoint } from '../../metrics/increase.js';
import type { MetricPoint } from '../../metrics/metric-point.js';
import { bucketsOf } from '../../metrics/rollups.js';
import { dayOfUs, tsvNullable, tsvString } from './rows.js';

export const SERIES_COLUMNS = [
  'date',
  'series_id',
  'name',
  'kind',
  'unit',
  'description',
  'temporality',
  'monotonic',
  'service',
  'attributes',
  'resource',
] as const;
export const POINT_COLUMNS = [
  'date',
  'series_id',
  'time_us',
  'value',
  'delta',
  'cnt',
  'lo',
  'hi',
  'blo',
  'bhi',
  'bc',
] as const;
export const LAST_COLUMNS = [
  'date',
  'series_id',
  'name',
  'time_us',
  'start_us',
  'value',
  'cnt',
  'buckets',
] as const;

/** A series' newest point in a batch: its metric_last row. */
export interface LastPoint {
  name: string;
  timeUs: number;
  state: CumulativeState | undefined;
}

/** Numbers as a TabSeparated Array(Float64) field (±inf for the open ends). */
const floats = (xs: number[]): string =>
  `[${xs.map((x) => (x === Infinity ? 'inf' : x === -Infinity ? '-inf' : String(x))).join(',')}]`;

/** A histogram point's bucket increases as three array fields: lower edges, upper edges, counts. */
function bucketFields(buckets: StoredBuckets | undefined): string {
  const triples = buckets ? bucketsOf(buckets) : [];
  return `${floats(triples.map((t) => t[0]))}\t${floats(triples.map((t) => t[1]))}\t${floats(triples.map((t) => t[2]))}`;
}

/** A metric_series row (SERIES_COLUMNS) for series `id` on `day`. */
export function seriesLine(
  day: string,
  id: number,
  p: MetricPoint,
  attributes: string,
  resource: string,
): string {
  const service = typeof p.resource['service.name'] === 'string' ? p.resource['service.name'] : '';
  return `${day}\t${id}\t${tsvString(p.name)}\t${p.kind}\t${tsvString(p.unit)}\t${tsvString(p.description)}\t${p.temporality}\t${p.monotonic ? 1 : 0}\t${tsvString(service)}\t${tsvString(attributes)}\t${tsvString(resource)}\n`;
}

/** A metric_points row (POINT_COLUMNS). */
export function pointLine(day: string, id: number, point: StoredPoint): string {
  return `${day}\t${id}\t${point.timeUs}\t${tsvNullable(point.value)}\t${tsvNullable(point.delta)}\t${tsvNullable(point.count)}\t${tsvNullable(point.min)}\t${tsvNullable(point.max)}\t${bucketFields(point.buckets)}\n`;
}

/** A metric_last row (LAST_COLUMNS). */
export function lastLine(id: number, l: LastPoint): string {
  return `${dayOfUs(l.timeUs)}\t${id}\t${tsvString(l.name)}\t${l.timeUs}\t${l.state?.startUs ?? 0}\t${tsvNullable(l.state?.value ?? 0)}\t${tsvNullable(l.state?.count ?? 0)}\t${l.state?.buckets ? tsvString(JSON.stringify(l.state.buckets)) : ''}\n`;
}
