// Schema version 2 (see schema.ts): span_rollup, per second × service × name × kind × status ×
// GenAI model, operation and provider, as aggregate states (what clickhouse-rollup-sql.ts reads), and
// attribute_key_sets in place of attribute_keys' view.
import {
  type SchemaTarget,
  type TableDef,
  localName,
  onCluster,
  tableStatements,
  viewStatements,
} from './schema-ddl.js';

/** The keys a span row contributes: `attributes.<key>` and `resource.attributes.<key>`. */
export const SPAN_KEYS = `arrayConcat(arrayMap(k -> concat('attributes.', k), attr_keys), arrayMap(k -> concat('resource.attributes.', k), res_keys))`;

/** The GenAI columns of the rollup: nullable in spans, so a flag plus the value ('' when NULL) here. */
export const ROLLUP_NULLABLE = [
  { column: 'ga_model', flag: 'm_null', value: 'model' },
  { column: 'ga_operation', flag: 'o_null', value: 'operation' },
  { column: 'ga_provider', flag: 'p_null', value: 'provider' },
] as const;

/** The rollup's number columns: aggregate states per source column (count of non-null, sum, min, max). */
export const ROLLUP_NUMBERS = [
  { column: 'duration_ns', prefix: 'dur' },
  { column: 'ga_input_tokens', prefix: 'in' },
  { column: 'ga_output_tokens', prefix: 'out' },
] as const;

/** Grouping columns of span_rollup (its ORDER BY: sorting keys cannot be Nullable on 18.16). */
const ROLLUP_KEYS = [
  'service',
  'start_s',
  'name',
  'kind',
  'status',
  ...ROLLUP_NULLABLE.flatMap((n) => [n.flag, n.value]),
];

/**
 * The aggregate states of one span_rollup row, from rows of `spans`: also what the query side
 * computes from raw spans to merge with rollup rows (clickhouse-query.ts), so both are one text.
 * Nullable number columns are folded to plain types (a non-null count, ifNull sums, ±inf bounds).
 */
export const ROLLUP_STATES = [
  'countState() AS spans',
  'minState(start_ns) AS first_ns',
  'maxState(end_us) AS last_end_us',
  ...ROLLUP_NUMBERS.flatMap(({ column: c, prefix: p }) =>
    c === 'duration_ns'
      ? [`sumState(${c}) AS ${p}_sum`, `minState(${c}) AS ${p}_min`, `maxState(${c}) AS ${p}_max`]
      : [
          `sumState(toUInt64(isNotNull(${c}))) AS ${p}_n`,
          `sumState(ifNull(${c}, 0)) AS ${p}_sum`,
          `minState(ifNull(${c}, inf)) AS ${p}_min`,
          `maxState(ifNull(${c}, -inf)) AS ${p}_max`,
        ],
  ),
];

export const ROLLUP_TABLE: TableDef = {
  name: 'span_rollup',
  columns: [
    'date Date',
    'start_s Int64',
    'service String',
    'name String',
    'kind String',
    'status String',
    ...ROLLUP_NULLABLE.flatMap((n) => [`${n.flag} UInt8`, `${n.value} String`]),
    'spans AggregateFunction(count)',
    'first_ns AggregateFunction(min, UInt64)',
    'last_end_us AggregateFunction(max, Int64)',
    ...ROLLUP_NUMBERS.flatMap(({ column: c, prefix: p }) =>
      c === 'duration_ns'
        ? [
            `${p}_sum AggregateFunction(sum, Int64)`,
            `${p}_min AggregateFunction(min, Int64)`,
            `${p}_max AggregateFunction(max, Int64)`,
          ]
        : [
            `${p}_n AggregateFunction(sum, UInt64)`,
            `${p}_sum AggregateFunction(sum, Float64)`,
            `${p}_min AggregateFunction(min, Float64)`,
            `${p}_max AggregateFunction(max, Float64)`,
          ],
    ),
  ].join(', '),
  engine: 'AggregatingMergeTree',
  partition: 'date',
  order: `(${ROLLUP_KEYS.join(', ')})`,
  shardKey: 'service',
};

export const KEY_SETS_TABLE: TableDef = {
  name: 'attribute_key_sets',
  columns: 'shard UInt8, keys AggregateFunction(groupUniqArrayArray, Array(String))',
  engine: 'AggregatingMergeTree',
  order: 'shard',
  shardKey: 'shard',
};

/** The rollup's SELECT over `spans` rows (the view's, and the v2 migration's backfill). */
export function rollupSelect(spans: string): string {
  const keys = [
    'date',
    'intDiv(start_us, 1000000) AS start_s',
    'service',
    'name',
    'kind',
    'status',
    ...ROLLUP_NULLABLE.flatMap((n) => [
      `toUInt8(isNull(${n.column})) AS ${n.flag}`,
      `ifNull(${n.column}, '') AS ${n.value}`,
    ]),
  ];
  return `SELECT ${[...keys, ...ROLLUP_STATES].join(', ')} FROM ${spans} GROUP BY date, ${ROLLUP_KEYS.join(', ')}`;
}

/**
 * Version 2: span_rollup, filled from the spans already stored, then kept by its view. Spans that
 * another (version 1) collector stores between the backfill and the view's creation are not in the
 * rollup: upgrade with ingest stopped, as the README says.
 */
export function rollupStatements(t: SchemaTarget): string[] {
  return [
    ...tableStatements(t, [ROLLUP_TABLE]),
    // On each shard's local tables with a cluster (ON CLUSTER runs an INSERT nowhere): the
    // migration's backfill fills the node it talks to; a Distributed rollup reads every shard.
    `INSERT INTO ${localName(t, 'span_rollup')} ${rollupSelect(localName(t, 'spans'))}`,
    ...viewStatements(t, [{ name: 'span_rollup_mv', target: 'span_rollup', select: rollupSelect }]),
    // attribute_keys' view gives way to attribute_key_sets' (see the header), which starts with the
    // keys already kept.
    `DROP TABLE IF EXISTS ${t.database}.attribute_keys_mv${onCluster(t)}`,
    ...tableStatements(t, [KEY_SETS_TABLE]),
    `INSERT INTO ${localName(t, 'attribute_key_sets')} SELECT toUInt8(0), groupUniqArrayArrayState([key]) FROM ${localName(t, 'attribute_keys')}`,
    ...viewStatements(t, [
      {
        name: 'attribute_key_sets_mv',
        target: 'attribute_key_sets',
        select: (spans) =>
          `SELECT toUInt8(0) AS shard, groupUniqArrayArrayState(${SPAN_KEYS}) AS keys FROM ${spans}`,
      },
    ]),
  ];
}
