// Schema version 3 (see schema.ts): metric series, points, each series' last point, and their
// hourly and five-minute roll-ups as views of the points.
import { ROLLUP_WIDTHS_US } from '../../metrics/rollups.js';
import {
  type SchemaTarget,
  type TableDef,
  type ViewDef,
  tableStatements,
  viewStatements,
} from './schema-ddl.js';

const METRIC_TABLES: TableDef[] = [
  {
    name: 'metric_series',
    columns: `date Date,
      series_id UInt64,
      name String,
      kind String,
      unit String,
      description String,
      temporality String,
      monotonic UInt8,
      service String,
      attributes String,
      resource String`,
    engine: 'ReplacingMergeTree',
    partition: 'date',
    order: '(name, series_id)',
    granularity: 1024,
    shardKey: 'series_id',
  },
  {
    name: 'metric_points',
    columns: `date Date,
      series_id UInt64,
      time_us Int64,
      value Float64,
      delta Nullable(Float64),
      cnt Nullable(Float64),
      lo Nullable(Float64),
      hi Nullable(Float64),
      blo Array(Float64),
      bhi Array(Float64),
      bc Array(Float64)`,
    engine: 'ReplacingMergeTree',
    partition: 'date',
    order: '(series_id, time_us)',
    shardKey: 'series_id',
  },
  {
    name: 'metric_last',
    columns: `date Date,
      series_id UInt64,
      name String,
      time_us Int64,
      start_us Int64,
      value Float64,
      cnt Float64,
      buckets String`,
    engine: 'ReplacingMergeTree',
    version: 'time_us',
    partition: 'date',
    order: 'series_id',
    granularity: 1024,
    shardKey: 'series_id',
  },
];

/**
 * Per series and window (the widths SQLite rolls up: an hour and five minutes, each dividing a day,
 * which retention drops whole), the totals of the points: a query reads them for its whole windows.
 */
const METRIC_ROLLUP_TABLES: TableDef[] = [
  {
    name: 'metric_rollup',
    columns: `date Date,
      series_id UInt64,
      width_us Int64,
      bucket_us Int64,
      d AggregateFunction(sum, Float64),
      v AggregateFunction(sum, Float64),
      c AggregateFunction(sum, Float64),
      n AggregateFunction(count),
      mn AggregateFunction(min, Float64),
      mx AggregateFunction(max, Float64)`,
    engine: 'AggregatingMergeTree',
    partition: 'date',
    order: '(series_id, width_us, bucket_us)',
    shardKey: 'series_id',
  },
  {
    name: 'metric_bucket_rollup',
    columns: `date Date,
      series_id UInt64,
      width_us Int64,
      bucket_us Int64,
      edge_lo Float64,
      edge_hi Float64,
      c AggregateFunction(sum, Float64)`,
    engine: 'AggregatingMergeTree',
    partition: 'date',
    order: '(series_id, width_us, bucket_us, edge_lo, edge_hi)',
    shardKey: 'series_id',
  },
];

/** Two views per roll-up width: the points' totals, and their buckets added up by edges. */
const METRIC_VIEWS: ViewDef[] = ROLLUP_WIDTHS_US.flatMap((w): ViewDef[] => {
  const window = `toInt64(${w}) AS width_us, intDiv(time_us, ${w}) * ${w} AS bucket_us`;
  return [
    {
      name: `metric_rollup_${w / 1e6}s_mv`,
      target: 'metric_rollup',
      source: 'metric_points',
      select: (points) => `SELECT date, series_id, ${window},
        sumState(ifNull(delta, 0)) AS d, sumState(value) AS v, sumState(ifNull(cnt, 0)) AS c, countState() AS n,
        minState(ifNull(lo, value)) AS mn, maxState(ifNull(hi, value)) AS mx
        FROM ${points} GROUP BY date, series_id, width_us, bucket_us`,
    },
    {
      name: `metric_bucket_rollup_${w / 1e6}s_mv`,
      target: 'metric_bucket_rollup',
      source: 'metric_points',
      select: (points) => `SELECT date, series_id, ${window}, l AS edge_lo, h AS edge_hi, sumState(x) AS c
        FROM ${points} ARRAY JOIN blo AS l, bhi AS h, bc AS x
        GROUP BY date, series_id, width_us, bucket_us, edge_lo, edge_hi`,
    },
  ];
});

/**
 * Version 3: metric points in ClickHouse (they were in each collector's own metrics.sqlite), so
 * every collector answers for the metrics any of them received. Points a version 2 collector
 * stored in its metrics.sqlite stay there.
 */
export function metricStatements(t: SchemaTarget): string[] {
  return [
    ...tableStatements(t, [...METRIC_TABLES, ...METRIC_ROLLUP_TABLES]),
    ...viewStatements(t, METRIC_VIEWS),
  ];
}
