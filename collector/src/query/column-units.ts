/**
 * The unit a query result's column is in, from its name, so every view shows it in human units
 * (the raw value beside it): `durationNano`, `avg(durationNano)`, `pct(durationNano, 95)` are
 * nanosecond durations; `@timestamp` and `bin(…)` columns are epoch milliseconds.
 */
export type ColumnUnit = 'durationNano' | 'epochMs';

export function columnUnit(column: string): ColumnUnit | undefined {
  if (/durationNano/i.test(column)) return 'durationNano';
  if (column === '@timestamp' || column.startsWith('bin(')) return 'epochMs';
  return undefined;
}
